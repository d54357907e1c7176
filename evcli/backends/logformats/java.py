"""Java logback / log4j layouts and ZooKeeper's log4j pattern (times carry no zone):

logback  `2023-01-29 10:03:11.123 [main] ERROR c.e.Foo - msg`
log4j    `2023-01-29 10:03:11,123 ERROR [thread] Foo: msg`  (or `Foo - msg`)
spring   `2023-01-29 10:03:11.123  WARN 1 --- [nio-8080-exec-7] c.e.PaymentClient : msg` (Spring Boot's
         default; 3.x: an offset after the time, `[app] ` before the thread)
zookeeper `2015-07-29 17:41:44,747 - INFO  [QuorumPeer[myid=1]/0:0:0:0:0:0:0:0:2181:Foo@774] - msg`
          3.5+: `2026-03-18 09:05:01,123 [myid:1] - WARN  [main:Foo@129] - msg` (`[myid:]` before
          the server id is known; the id becomes the `myid` field)
"""

from __future__ import annotations

import re
from datetime import datetime

from evcli.backends.logformats.base import IsoStampFormat, ParsedLine, level_of

_STAMP = r"(?P<stamp>\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d{1,6})?(?:Z|[+-]\d\d:\d\d)?)"
_LEVELS = "TRACE|DEBUG|INFO|WARN|WARNING|ERROR|FATAL|SEVERE"
_LINE = re.compile(
    _STAMP + r" (?:"
    rf"(?:\[myid:(?P<zk_myid>\d*)\] )?- (?P<zk_level>{_LEVELS})\s+\[(?P<zk_thread>.*?):(?P<zk_logger>[A-Za-z_$][\w$.]*)@(?P<zk_line>\d+)\] - "
    rf"|\[(?P<lb_thread>[^\]]*)\] (?P<lb_level>{_LEVELS})\s+(?P<lb_logger>\S+) - "
    rf"|(?P<l4_level>{_LEVELS})\s+\[(?P<l4_thread>[^\]]*)\] (?P<l4_logger>[^\s:]+)(?::| -) "
    rf"|\s*(?P<sb_level>{_LEVELS}) (?P<sb_pid>\d+) --- (?:\[(?P<sb_app>[^\]]*)\] )?\[\s*(?P<sb_thread>[^\]]*)\] "
    r"(?P<sb_logger>\S+)\s+: "
    r")(?P<message>.*)"
)


class Java(IsoStampFormat):
    name = "java"
    description = "Java logback/log4j (incl. ZooKeeper): timestamp, thread, LEVEL, logger, message"
    example = "2023-01-29 10:03:11.123 [main] ERROR c.e.OrderService - order failed"

    line = _LINE

    def read(self, match: re.Match[str], moment: datetime) -> ParsedLine:
        prefix = next(prefix for prefix in ("zk_", "lb_", "sb_", "l4_") if match[prefix + "level"])
        fields = {"thread": match[prefix + "thread"], "logger": match[prefix + "logger"]}
        if match["sb_pid"]:
            fields["pid"] = match["sb_pid"]
        if match["zk_line"]:
            fields["line"] = match["zk_line"]
        if match["zk_myid"]:
            fields["myid"] = match["zk_myid"]
        level = level_of(match[prefix + "level"])
        return ParsedLine(moment, level, match["message"], fields)


FORMAT = Java()
