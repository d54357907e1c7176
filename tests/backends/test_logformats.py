"""The log format registry (evcli/backends/logformats/): each format on real-looking lines,
the detector on mixed samples, and the detected-format-first reader."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest

from evcli.backends.logformats import (
    FORMATS,
    LineKind,
    LineReader,
    ParseContext,
    ParsedLine,
    detect,
    format_named,
    is_continuation,
    known_formats,
)
from evcli.core.time import localize

BERLIN = ZoneInfo("Europe/Berlin")
CLOCK = datetime(2024, 1, 5, 12, 0, tzinfo=UTC)


def context(clock: datetime = CLOCK) -> ParseContext:
    return ParseContext(clock, BERLIN)


def parse(name: str, line: str, clock: datetime = CLOCK) -> ParsedLine:
    parsed = format_named(name).parse(line, context(clock))
    assert parsed is not None, f"{name} did not read {line!r}"
    return parsed


def utc(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=UTC)  # type: ignore[misc]


# --- one case per format: timestamp exact (with zone), level, message, fields -----------------

CASES = [
    ("iso8601", "2023-01-29T10:03:11.123+08:00 ERROR payment authorisation failed for order 8812",
     datetime(2023, 1, 29, 10, 3, 11, 123000, tzinfo=timezone(timedelta(hours=8))), "ERROR",
     "payment authorisation failed for order 8812", {}),
    ("iso8601", "2023-01-29T02:03:11,5Z [warn] disk /var at 91%",
     utc(2023, 1, 29, 2, 3, 11, 500000), "WARN", "disk /var at 91%", {}),
    ("iso8601", "2023-01-29 10:03:11 -0500 [worker-3] ERROR retry budget exhausted",
     datetime(2023, 1, 29, 10, 3, 11, tzinfo=timezone(timedelta(hours=-5))), "ERROR",
     "[worker-3] ERROR retry budget exhausted", {}),
    ("iso8601", "[2023-01-29T10:03:11.120000123Z] level=error component=cache evicted 812 keys",
     utc(2023, 1, 29, 10, 3, 11, 120000), "ERROR", "level=error component=cache evicted 812 keys", {}),
    ("iso8601", "2023-01-29 10:03:11 user 'zoë' logged in from Zürich — no error",
     datetime(2023, 1, 29, 10, 3, 11), None, "user 'zoë' logged in from Zürich — no error", {}),
    ("python", "2015-07-29 17:41:44,747 - app.db.pool - WARNING - pool exhausted (32/32)",
     datetime(2015, 7, 29, 17, 41, 44, 747000), "WARN", "pool exhausted (32/32)", {"logger": "app.db.pool"}),
    ("python", "2015-07-29 17:41:44,747 CRITICAL cannot open /data/index.db",
     datetime(2015, 7, 29, 17, 41, 44, 747000), "FATAL", "cannot open /data/index.db", {}),
    ("java", "2023-01-29 10:03:11.123 [http-nio-8080-exec-7] ERROR c.e.shop.OrderService - order 4411 failed",
     datetime(2023, 1, 29, 10, 3, 11, 123000), "ERROR", "order 4411 failed",
     {"thread": "http-nio-8080-exec-7", "logger": "c.e.shop.OrderService"}),
    ("java", "2023-01-29 10:03:11,123 WARN  [pool-2-thread-1] KafkaConsumer: lag 1200 on orders-3",
     datetime(2023, 1, 29, 10, 3, 11, 123000), "WARN", "lag 1200 on orders-3",
     {"thread": "pool-2-thread-1", "logger": "KafkaConsumer"}),
    ("java", ("2015-07-29 19:04:12,394 - INFO  [QuorumPeer[myid=3]/0:0:0:0:0:0:0:0:2181:"
     "FastLeaderElection@818] - New election. My id =  3, proposed zxid=0x0"),
     datetime(2015, 7, 29, 19, 4, 12, 394000), "INFO", "New election. My id =  3, proposed zxid=0x0",
     {"thread": "QuorumPeer[myid=3]/0:0:0:0:0:0:0:0:2181", "logger": "FastLeaderElection", "line": "818"}),
    ("java", ("2026-03-18 09:05:01,123 [myid:1] - WARN  [QuorumPeer[myid=1](plain=0.0.0.0:2181)(secure=disabled):"
     "Follower@129] - Exception when following the leader"),
     datetime(2026, 3, 18, 9, 5, 1, 123000), "WARN", "Exception when following the leader",
     {"thread": "QuorumPeer[myid=1](plain=0.0.0.0:2181)(secure=disabled)", "logger": "Follower", "line": "129",
      "myid": "1"}),
    ("java", "2026-03-18 09:05:00,007 [myid:] - INFO  [main:QuorumPeerConfig@174] - Reading configuration from: /conf/zoo.cfg",
     datetime(2026, 3, 18, 9, 5, 0, 7000), "INFO", "Reading configuration from: /conf/zoo.cfg",
     {"thread": "main", "logger": "QuorumPeerConfig", "line": "174"}),
    ("openstack", ("2017-05-16 00:00:04.500 25746 WARNING nova.compute.manager [req-3ea4052c-895d-4b64-9e2d-04d64c4d94ab "
     "113d3a99c3da401fbd62cc2caa5b96d2 54fadb412c4e40cdbaed9335e4c35a9e - - -] [instance: b9000564] "
     "Instance shutdown by itself."),
     datetime(2017, 5, 16, 0, 0, 4, 500000), "WARN", "[instance: b9000564] Instance shutdown by itself.",
     {"pid": "25746", "logger": "nova.compute.manager", "request_id": "req-3ea4052c-895d-4b64-9e2d-04d64c4d94ab"}),
    # the public OpenStack dataset keeps each line's source file name in front of it
    ("openstack", ("nova-api.log.1.2017-05-16_13:53:08 2017-05-16 00:00:00.272 25746 INFO "
     "nova.osapi_compute.wsgi.server [req-9bc36dd9-91c5-4314-898a-47625eb93b09 113d3a99c3da401fbd62cc2caa5b96d2 "
     '54fadb412c4e40cdbaed9335e4c35a9e - - -] 10.11.10.1 "GET /v2/54fadb412c4e40cdbaed9335e4c35a9e/servers/detail '
     'HTTP/1.1" status: 500 len: 1893 time: 0.2577181'),
     datetime(2017, 5, 16, 0, 0, 0, 272000), "INFO",
     '10.11.10.1 "GET /v2/54fadb412c4e40cdbaed9335e4c35a9e/servers/detail HTTP/1.1" status: 500 len: 1893 time: 0.2577181',
     {"pid": "25746", "logger": "nova.osapi_compute.wsgi.server", "request_id": "req-9bc36dd9-91c5-4314-898a-47625eb93b09",
      "logfile": "nova-api.log.1.2017-05-16_13:53:08", "status": "500"}),
    ("openstack", ("nova-compute.log.2017-05-14_21:27:09 2017-05-14 19:39:07.023 2931 ERROR nova.compute.manager "
     "[req-aa3b2b7c-6fb8-4a59-a3a0-6ba1d4f9bd8e - - - - -] [instance: 96abccce-8d1f-4e07-b6d1-4b2ab87e23b4] "
     "Instance failed to spawn"),
     datetime(2017, 5, 14, 19, 39, 7, 23000), "ERROR", "[instance: 96abccce-8d1f-4e07-b6d1-4b2ab87e23b4] Instance failed to spawn",
     {"pid": "2931", "logger": "nova.compute.manager", "request_id": "req-aa3b2b7c-6fb8-4a59-a3a0-6ba1d4f9bd8e",
      "logfile": "nova-compute.log.2017-05-14_21:27:09"}),
    ("nginx_error", ('2023/01/29 10:03:11 [error] 1409#1409: *8812 upstream timed out (110: Connection timed out) '
     'while reading response header from upstream, client: 10.20.30.40, server: api.example.org, '
     'request: "POST /v1/pay HTTP/1.1", upstream: "http://10.0.3.7:8080/v1/pay", host: "api.example.org"'),
     datetime(2023, 1, 29, 10, 3, 11), "ERROR", None,
     {"pid": "1409", "tid": "1409", "connection": "8812", "client": "10.20.30.40", "server": "api.example.org",
      "request": "POST /v1/pay HTTP/1.1", "upstream": "http://10.0.3.7:8080/v1/pay", "host": "api.example.org"}),
    ("nginx_error", "2023/01/29 10:03:12 [notice] 1#1: signal process started",
     datetime(2023, 1, 29, 10, 3, 12), "INFO", "signal process started", {"pid": "1", "tid": "1"}),
    ("apache_error", "[Sun Dec 04 04:47:44 2005] [error] [client 211.62.201.48] File does not exist: /var/www/html/x",
     datetime(2005, 12, 4, 4, 47, 44), "ERROR", "File does not exist: /var/www/html/x", {"client": "211.62.201.48"}),
    ("apache_error", "[Sun Dec 04 04:51:08 2005] [notice] jk2_init() Found child 6725 in scoreboard slot 10",
     datetime(2005, 12, 4, 4, 51, 8), "INFO", "jk2_init() Found child 6725 in scoreboard slot 10", {}),
    ("apache_error", ("[Wed Oct 11 14:32:52.123456 2023] [core:error] [pid 35708:tid 4328636416] "
     "[client 72.15.99.187:50524] AH00126: Invalid URI in request GET /..%2f HTTP/1.1"),
     datetime(2023, 10, 11, 14, 32, 52, 123456), "ERROR", "AH00126: Invalid URI in request GET /..%2f HTTP/1.1",
     {"module": "core", "pid": "35708", "tid": "4328636416", "client": "72.15.99.187"}),
    ("apache_error", "[Wed Oct 11 14:32:53 2023] [ssl:trace3] [pid 35708] ssl_engine_io.c(2135): read 5 bytes",
     datetime(2023, 10, 11, 14, 32, 53), "TRACE", "ssl_engine_io.c(2135): read 5 bytes",
     {"module": "ssl", "pid": "35708"}),
    ("rfc3164", "Dec 10 06:55:46 LabSZ sshd[24200]: Invalid user webmaster from 173.234.31.186",
     datetime(2023, 12, 10, 6, 55, 46), None, "Invalid user webmaster from 173.234.31.186",
     {"host": "LabSZ", "program": "sshd", "pid": "24200"}),
    ("rfc3164", "Jan  4 23:59:01 db-2 CRON[811]: (root) CMD (run-parts /etc/cron.hourly)",
     datetime(2024, 1, 4, 23, 59, 1), None, "(root) CMD (run-parts /etc/cron.hourly)",
     {"host": "db-2", "program": "CRON", "pid": "811"}),
    ("rfc3164", "<11>Jan  5 11:00:00 edge-1 haproxy[77]: backend payments has no server available!",
     datetime(2024, 1, 5, 11, 0, 0), "ERROR", "backend payments has no server available!",
     {"host": "edge-1", "program": "haproxy", "pid": "77"}),
    ("rfc3164", "Jan  5 10:00:00 web-1 kernel: Out of memory: Killed process 4412 (java)",
     datetime(2024, 1, 5, 10, 0, 0), None, "Out of memory: Killed process 4412 (java)",
     {"host": "web-1", "program": "kernel"}),
    ("rfc3164", "Jan  5 10:00:01 web-1 sshd[90]: error: kex_exchange_identification: Connection closed",
     datetime(2024, 1, 5, 10, 0, 1), "ERROR", "error: kex_exchange_identification: Connection closed",
     {"host": "web-1", "program": "sshd", "pid": "90"}),
    ("rfc5424", "<34>1 2003-10-11T22:14:15.003Z mymachine.example.com su - ID47 - \ufeff'su root' failed for lonvick",
     utc(2003, 10, 11, 22, 14, 15, 3000), "FATAL", "'su root' failed for lonvick",
     {"host": "mymachine.example.com", "program": "su", "msgid": "ID47"}),
    ("rfc5424", ('<165>1 2003-08-24T05:14:15.000003-07:00 192.0.2.1 myproc 8710 - '
     '[exampleSDID@32473 iut="3" eventSource="Application"] An application event log entry'),
     datetime(2003, 8, 24, 5, 14, 15, 3, tzinfo=timezone(timedelta(hours=-7))), "INFO",
     "An application event log entry",
     {"host": "192.0.2.1", "program": "myproc", "pid": "8710",
      "structured_data": '[exampleSDID@32473 iut="3" eventSource="Application"]'}),
    ("access_log", ('10.20.30.40 - frank [10/Oct/2000:13:55:36 -0700] "GET /apache_pb.gif HTTP/1.0" 401 2326 '
     '"http://www.example.com/start.html" "Mozilla/4.08 [en] (Win98; I ;Nav)"'),
     datetime(2000, 10, 10, 13, 55, 36, tzinfo=timezone(timedelta(hours=-7))), "WARN", None,
     {"client": "10.20.30.40", "request": "GET /apache_pb.gif HTTP/1.0", "status": "401", "size": "2326",
      "user": "frank", "referer": "http://www.example.com/start.html", "agent": "Mozilla/4.08 [en] (Win98; I ;Nav)"}),
    ("access_log", '2001:db8::7 - - [29/Jan/2023:10:03:11 +0800] "GET /health HTTP/1.1" 200 - "-" "kube-probe/1.27"',
     datetime(2023, 1, 29, 10, 3, 11, tzinfo=timezone(timedelta(hours=8))), None,
     '"GET /health HTTP/1.1" 200 - "-" "kube-probe/1.27"',
     {"client": "2001:db8::7", "request": "GET /health HTTP/1.1", "status": "200", "size": "-",
      "agent": "kube-probe/1.27"}),
    ("glog", "E1203 10:00:00.123456    1234 controller.go:112] sync pod default/web-0 failed: timeout",
     datetime(2023, 12, 3, 10, 0, 0, 123456), "ERROR", "sync pod default/web-0 failed: timeout",
     {"thread": "1234", "source": "controller.go:112"}),
    ("hdfs", ("081109 203615 148 INFO dfs.DataNode$PacketResponder: PacketResponder 1 for block "
     "blk_38865049064139660 terminating"),
     datetime(2008, 11, 9, 20, 36, 15), "INFO", "PacketResponder 1 for block blk_38865049064139660 terminating",
     {"pid": "148", "logger": "dfs.DataNode$PacketResponder"}),
    ("hdfs", ("081111 093519 26 WARN dfs.FSDataset: Unexpected error trying to delete block "
     "blk_-4541681287137593466. BlockInfo not found in volumeMap."),
     datetime(2008, 11, 11, 9, 35, 19), "WARN",
     "Unexpected error trying to delete block blk_-4541681287137593466. BlockInfo not found in volumeMap.",
     {"pid": "26", "logger": "dfs.FSDataset"}),
    ("spark", "17/06/09 20:10:40 INFO executor.CoarseGrainedExecutorBackend: Registered signal handlers for [TERM, HUP, INT]",
     datetime(2017, 6, 9, 20, 10, 40), "INFO", "Registered signal handlers for [TERM, HUP, INT]",
     {"logger": "executor.CoarseGrainedExecutorBackend"}),
    ("spark", "24/01/05 10:59:58,417 ERROR TaskSetManager: Task 3 in stage 7.0 failed 4 times; aborting job",
     datetime(2024, 1, 5, 10, 59, 58, 417000), "ERROR", "Task 3 in stage 7.0 failed 4 times; aborting job",
     {"logger": "TaskSetManager"}),
    ("logcat", ("03-17 16:13:38.811  1702  2395 D WindowManager: printFreezingDisplayLogsopening app wtoken = "
     "AppWindowToken{9f4ef63 token=Token{a64f992}}, allDrawn= false"),
     datetime(2023, 3, 17, 16, 13, 38, 811000), "DEBUG",
     "printFreezingDisplayLogsopening app wtoken = AppWindowToken{9f4ef63 token=Token{a64f992}}, allDrawn= false",
     {"pid": "1702", "tid": "2395", "tag": "WindowManager"}),
    ("logcat", "01-05 11:59:59.003   635   718 E ActivityManager: ANR in com.example.app (com.example.app/.MainActivity)",
     datetime(2024, 1, 5, 11, 59, 59, 3000), "ERROR", "ANR in com.example.app (com.example.app/.MainActivity)",
     {"pid": "635", "tid": "718", "tag": "ActivityManager"}),
    ("logcat", "01-05 10:00:00.120  system  1702  1702 W chatty  : uid=1000(system) Binder:1702_4 expire 3 lines",
     datetime(2024, 1, 5, 10, 0, 0, 120000), "WARN", "uid=1000(system) Binder:1702_4 expire 3 lines",
     {"pid": "1702", "tid": "1702", "tag": "chatty", "uid": "system"}),
    ("logcat", "2023-11-02 08:15:00.500 12345 12350 F libc    : Fatal signal 11 (SIGSEGV), code 1, fault addr 0x0",
     datetime(2023, 11, 2, 8, 15, 0, 500000), "FATAL", "Fatal signal 11 (SIGSEGV), code 1, fault addr 0x0",
     {"pid": "12345", "tid": "12350", "tag": "libc"}),
    ("logcat", "12-31 23:59:59.999  4128  4140 V vendor.qti.hardware.perf@2.2-service/ünï: ☃ boost: on",
     datetime(2023, 12, 31, 23, 59, 59, 999000), "TRACE", "☃ boost: on",
     {"pid": "4128", "tid": "4140", "tag": "vendor.qti.hardware.perf@2.2-service/ünï"}),
    ("logcat", "12-31 23:59:58.007 E/AndroidRuntime( 4128): FATAL EXCEPTION: main",
     datetime(2023, 12, 31, 23, 59, 58, 7000), "ERROR", "FATAL EXCEPTION: main", {"pid": "4128", "tag": "AndroidRuntime"}),
    ("logcat", "12-31 23:59:58.010 A/DEBUG   (  771): Abort message: 'assertion failed'",
     datetime(2023, 12, 31, 23, 59, 58, 10000), "FATAL", "Abort message: 'assertion failed'",
     {"pid": "771", "tag": "DEBUG"}),
    ("healthapp", "20171223-22:15:29:606|Step_LSC|30002312|onStandStepChanged 3579",
     datetime(2017, 12, 23, 22, 15, 29, 606000), None, "onStandStepChanged 3579",
     {"component": "Step_LSC", "pid": "30002312"}),
    ("healthapp", "20171224-0:0:1:45|Step_ExtSDM|30002312|calculateAltitudeWithCache totalAltitude=240",
     datetime(2017, 12, 24, 0, 0, 1, 45000), None, "calculateAltitudeWithCache totalAltitude=240",
     {"component": "Step_ExtSDM", "pid": "30002312"}),
    ("healthapp", "20171223-22:15:41:6|HiH_HiHealthDataInsertStore|30002312|saveHealthDetailData() size = 1|ok",
     datetime(2017, 12, 23, 22, 15, 41, 6000), None, "saveHealthDetailData() size = 1|ok",
     {"component": "HiH_HiHealthDataInsertStore", "pid": "30002312"}),
    ("logfmt", 'ts=2023-01-29T02:03:11.120Z level=warn caller=db.go:42 msg="slow query \\"orders\\"" duration=5.1s',
     utc(2023, 1, 29, 2, 3, 11, 120000), "WARN", 'slow query "orders"', {"caller": "db.go:42", "duration": "5.1s"}),
    ("logfmt", 't=2023-01-29T10:03:11+0100 lvl=eror msg="Failed to send alert" logger=alerting rule_uid=x1',
     datetime(2023, 1, 29, 10, 3, 11, tzinfo=timezone(timedelta(hours=1))), "ERROR", "Failed to send alert",
     {"logger": "alerting", "rule_uid": "x1"}),
    ("logfmt", "time=1675000000.5 msg=started",
     utc(2023, 1, 29, 13, 46, 40, 500000), None, "started", {}),
    ("json", ('{"@timestamp":"2023-01-29T10:03:11.120+08:00","log":{"level":"error"},"message":"card declined",'
     '"trace_id":"ab12","status":402}'),
     datetime(2023, 1, 29, 10, 3, 11, 120000, tzinfo=timezone(timedelta(hours=8))), "ERROR", "card declined",
     {"trace_id": "ab12", "status": "402"}),
    ("json", '{"level":50,"time":1675000000123,"pid":77,"hostname":"api-1","msg":"db down"}',
     utc(2023, 1, 29, 13, 46, 40, 123000), "ERROR", "db down", {"pid": "77", "hostname": "api-1"}),
    ("json", '{"severity":"WARNING","timestamp":"2023-01-29T02:03:11Z","message":"quota at 95%"}',
     utc(2023, 1, 29, 2, 3, 11), "WARN", "quota at 95%", {}),
    ("json", ('{"apiVersion":"v1","count":2,"eventTime":null,"firstTimestamp":"2023-01-29T02:03:00Z",'
     '"involvedObject":{"kind":"Pod","name":"checkout-7d9f8b6c5-x2kqp","namespace":"shop"},"kind":"Event",'
     '"lastTimestamp":"2023-01-29T02:03:11Z","message":"Liveness probe failed: HTTP probe failed with statuscode: 500",'
     '"reason":"Unhealthy","type":"Warning"}'),
     utc(2023, 1, 29, 2, 3, 11), "WARN", "Unhealthy Liveness probe failed: HTTP probe failed with statuscode: 500",
     {"kind": "Pod", "instance": "checkout-7d9f8b6c5-x2kqp", "reason": "Unhealthy", "namespace": "shop", "count": "2"}),
    ("json", '{"ts":1675000000.25,"msg":"no level here","user":"zoë"}',
     utc(2023, 1, 29, 13, 46, 40, 250000), None, "no level here", {"user": "zoë"}),
    ("container_json", ('{"log":"2023-01-29 10:03:11,120 ERROR [main] PaymentClient: timeout after 5000 ms\\n",'
     '"stream":"stderr","time":"2023-01-29T02:03:11.123456789Z"}'),
     utc(2023, 1, 29, 2, 3, 11, 123456), "ERROR", "timeout after 5000 ms",
     {"stream": "stderr", "thread": "main", "logger": "PaymentClient"}),
    ("container_json", '{"log":"plain words without a level\\n","stream":"stdout","time":"2023-01-29T02:03:12Z"}',
     utc(2023, 1, 29, 2, 3, 12), None, "plain words without a level", {"stream": "stdout"}),
    ("java", "2023-01-29 10:03:11.123  WARN 1 --- [nio-8080-exec-7] c.e.shop.PaymentClient   : slow capture",
     datetime(2023, 1, 29, 10, 3, 11, 123000), "WARN", "slow capture",
     {"thread": "nio-8080-exec-7", "logger": "c.e.shop.PaymentClient", "pid": "1"}),
    ("java", ("2023-01-29T10:03:11.123-04:00 ERROR 1 --- [shop] [nio-8080-exec-2] c.e.shop.PaymentClient   : "
     "capture failed"), datetime(2023, 1, 29, 10, 3, 11, 123000, tzinfo=timezone(timedelta(hours=-4))), "ERROR",
     "capture failed", {"thread": "nio-8080-exec-2", "logger": "c.e.shop.PaymentClient", "pid": "1"}),
    ("postgres", "2023-01-29 10:03:11.120 CST [2312] ERROR:  deadlock detected",
     datetime(2023, 1, 29, 10, 3, 11, 120000, tzinfo=timezone(timedelta(hours=-6))), "ERROR", "deadlock detected",
     {"pid": "2312", "severity": "ERROR"}),
    ("postgres", "2023-01-29 02:03:11.5 UTC [2312] app@orders LOG:  duration: 1532.210 ms  statement: SELECT 1",
     utc(2023, 1, 29, 2, 3, 11, 500000), "INFO", "duration: 1532.210 ms  statement: SELECT 1",
     {"pid": "2312", "severity": "LOG", "user": "app", "database": "orders"}),
    ("postgres", "2023-01-29 04:03:11 +02 [77] DETAIL:  Process 2312 waits for ShareLock on transaction 7781",
     datetime(2023, 1, 29, 4, 3, 11, tzinfo=timezone(timedelta(hours=2))), None,
     "Process 2312 waits for ShareLock on transaction 7781",
     {"pid": "77", "severity": "DETAIL"}),
    ("cri", "2023-01-29T02:03:11.123456789Z stderr F 2023-01-29 10:03:11,120 ERROR [main] PaymentClient: timeout",
     utc(2023, 1, 29, 2, 3, 11, 123456), "ERROR", "timeout",
     {"stream": "stderr", "thread": "main", "logger": "PaymentClient"}),
    ("cri", '2023-01-29T02:03:12Z stdout F level=warn msg="slow render" route=/cart',
     utc(2023, 1, 29, 2, 3, 12), "WARN", "slow render", {"stream": "stdout", "route": "/cart"}),
    ("cri", "2023-01-29T02:03:13.5+00:00 stdout P the first part of a split line",
     utc(2023, 1, 29, 2, 3, 13, 500000), None, "the first part of a split line", {"stream": "stdout", "partial": "true"}),
    ("cfdr", ("- 1117838570 2005.06.03 R02-M1-N0-C:J12-U11 2005-06-03-15.42.50.675872 R02-M1-N0-C:J12-U11 "
     "RAS KERNEL INFO instruction cache parity error corrected"),
     utc(2005, 6, 3, 22, 42, 50, 675872), "INFO", "instruction cache parity error corrected",
     {"node": "R02-M1-N0-C:J12-U11", "component": "KERNEL"}),
    ("cfdr", ("KERNDTLB 1118536327 2005.06.11 R30-M0-N9-C:J16-U01 2005-06-11-17.32.07.581048 R30-M0-N9-C:J16-U01 "
     "RAS KERNEL FATAL data TLB error interrupt"),
     utc(2005, 6, 12, 0, 32, 7, 581048), "FATAL", "data TLB error interrupt",
     {"label": "KERNDTLB", "node": "R30-M0-N9-C:J16-U01", "component": "KERNEL"}),
    ("cfdr", ("- 1118767535 2005.06.14 R27-M1-L3-U18-C 2005-06-14-09.45.35.118022 R27-M1-L3-U18-C RAS LINKCARD "
     "SEVERE MidplaneSwitchController::receiveTrain() iCard bit=0 wire=3 is stuck"),
     utc(2005, 6, 14, 16, 45, 35, 118022), "ERROR", "MidplaneSwitchController::receiveTrain() iCard bit=0 wire=3 is stuck",
     {"node": "R27-M1-L3-U18-C", "component": "LINKCARD"}),
    ("cfdr", "- 1131566461 2005.11.09 dn228 Nov 9 12:01:01 dn228/dn228 crond(pam_unix)[2915]: session closed for user root",
     utc(2005, 11, 9, 20, 1, 1), None, "session closed for user root",
     {"node": "dn228", "program": "crond(pam_unix)", "pid": "2915"}),
    ("cfdr", ("VAPI 1131645646 2005.11.10 dn339 Nov 10 10:00:46 dn339/dn339 kernel: [KERNEL_IB][ib_mad_dispatch]"
     "[/mnt_projects/sysapps/src/ib/mad_filter.c:70]Dispatch error, MAD not processed"),
     utc(2005, 11, 10, 18, 0, 46), None,
     "[KERNEL_IB][ib_mad_dispatch][/mnt_projects/sysapps/src/ib/mad_filter.c:70]Dispatch error, MAD not processed",
     {"label": "VAPI", "node": "dn339", "program": "kernel"}),
    ("cfdr", ("- 1131614071 2005.11.10 tbird-admin1 Nov 10 01:14:31 local@tbird-admin1 postfix/postdrop[10896]: "
     "warning: unable to look up public/pickup: No such file or directory"),
     utc(2005, 11, 10, 9, 14, 31), "WARN", "warning: unable to look up public/pickup: No such file or directory",
     {"node": "tbird-admin1", "program": "postfix/postdrop", "pid": "10896"}),
    ("hpc", ("134681 node-246 unix.hw state_change.unavailable 1077804742 1 Component State Change: "
     "Component \\042alt0\\042 is in the unavailable state (HWID=1973)"),
     utc(2004, 2, 26, 14, 12, 22), None,
     "Component State Change: Component \\042alt0\\042 is in the unavailable state (HWID=1973)",
     {"node": "node-246", "component": "unix.hw", "state": "state_change.unavailable"}),
    ("hpc", "2560 node-143 boot_cmd new 1074119817 1 Targeting domains:node-D1 and nodes:node-[40-63] child of command 2559",
     utc(2004, 1, 14, 22, 36, 57), None, "Targeting domains:node-D1 and nodes:node-[40-63] child of command 2559",
     {"node": "node-143", "component": "boot_cmd", "state": "new"}),
    ("windows_cbs", ("2016-09-28 04:30:30, Info                  CBS    Loaded Servicing Stack v6.1.7601.23505 "
     "with Core: C:\\Windows\\winsxs\\amd64_microsoft-windows-servicingstack_31bf3856ad364e35\\cbscore.dll"),
     datetime(2016, 9, 28, 4, 30, 30), "INFO",
     "Loaded Servicing Stack v6.1.7601.23505 with Core: C:\\Windows\\winsxs\\amd64_microsoft-windows-servicingstack_31bf3856ad364e35\\cbscore.dll",
     {"component": "CBS"}),
    ("windows_cbs", ("2016-09-28 04:40:30, Warning               CBS    Failed to get next element "
     "[HRESULT = 0x800f080d - CBS_E_MANIFEST_INVALID_ITEM]"),
     datetime(2016, 9, 28, 4, 40, 30), "WARN",
     "Failed to get next element [HRESULT = 0x800f080d - CBS_E_MANIFEST_INVALID_ITEM]", {"component": "CBS"}),
    ("windows_cbs", "2016-09-29 00:00:58, Error                 CSI    000000a4 (F) STATUS_SXS_ASSEMBLY_MISSING #1042# from Windows",
     datetime(2016, 9, 29, 0, 0, 58), "ERROR", "000000a4 (F) STATUS_SXS_ASSEMBLY_MISSING #1042# from Windows",
     {"component": "CSI"}),
    ("windows_cbs", "2016-09-29 00:01:02, Perf                  CBS    PerfTrack: session ended after 264 s",
     datetime(2016, 9, 29, 0, 1, 2), None, "PerfTrack: session ended after 264 s", {"component": "CBS"}),
    ("proxifier", "[10.30 16:49:06] chrome.exe - proxy.cse.cuhk.edu.hk:5070 open through proxy proxy.cse.cuhk.edu.hk:5070 HTTPS",
     datetime(2023, 10, 30, 16, 49, 6), None,
     "proxy.cse.cuhk.edu.hk:5070 open through proxy proxy.cse.cuhk.edu.hk:5070 HTTPS", {"program": "chrome.exe"}),
    ("proxifier", ("[12.31 23:59:59] chrome.exe *64 - www.google.com.hk:443 error : Could not connect through proxy "
     "proxy.cse.cuhk.edu.hk:5070 - Proxy server cannot establish a connection with the target, status code 403"),
     datetime(2023, 12, 31, 23, 59, 59), "ERROR",
     ("www.google.com.hk:443 error : Could not connect through proxy proxy.cse.cuhk.edu.hk:5070 - "
      "Proxy server cannot establish a connection with the target, status code 403"),
     {"program": "chrome.exe *64"}),
    ("epoch", "1675000000.123 ERROR payment failed", utc(2023, 1, 29, 13, 46, 40, 123000), "ERROR",
     "payment failed", {}),
    ("epoch", "1675000000123 heartbeat ok", utc(2023, 1, 29, 13, 46, 40, 123000), None, "heartbeat ok", {}),
]  # fmt: skip


@pytest.mark.parametrize(("name", "line", "timestamp", "level", "message", "fields"), CASES)
def test_each_format_reads_its_lines_exactly(name, line, timestamp, level, message, fields) -> None:
    parsed = parse(name, line)
    assert parsed.timestamp == timestamp
    assert (parsed.timestamp.utcoffset() if parsed.timestamp else None) == timestamp.utcoffset()
    assert parsed.has_zone == (timestamp.tzinfo is not None)
    assert parsed.level == level
    if message is not None:
        assert parsed.message == message
    assert parsed.fields == fields
    assert parsed.level_derived == (name == "access_log" and level is not None)


def test_every_registered_format_has_a_case_and_reads_its_own_example() -> None:
    assert {case[0] for case in CASES} == set(known_formats())
    assert len(set(known_formats())) == len(FORMATS)
    for log_format in FORMATS:
        assert log_format.description and log_format.sniff(log_format.example)
        assert log_format.parse(log_format.example, context()) is not None, log_format.name


def test_access_log_level_is_only_derived_from_the_status() -> None:
    line = '10.0.0.9 - - [29/Jan/2023:10:03:11 +0000] "GET /pay HTTP/1.1" 503 0 "-" "curl/8.0"'
    parsed = parse("access_log", line)
    assert (parsed.level, parsed.level_derived, parsed.fields["status"]) == ("ERROR", True, "503")
    assert parse("access_log", line.replace(" 503 ", " 302 ")).level is None


def test_naive_times_are_localised_by_the_caller_in_the_environment_zone() -> None:
    parsed = parse("python", "2023-03-26 02:30:00,000 - app - INFO - inside the Berlin DST gap")
    assert not parsed.has_zone and parsed.timestamp is not None
    assert localize(parsed.timestamp, BERLIN).isoformat() == "2023-03-26T03:30:00+02:00"


@pytest.mark.parametrize(
    ("clock", "line", "expected"),
    [
        # a December line read in January belongs to the previous year
        (utc(2024, 1, 5, 12), "Dec 31 23:59:59 h p: x", datetime(2023, 12, 31, 23, 59, 59)),
        # the clock's own day, before the clock
        (utc(2024, 1, 5, 12), "Jan  5 12:59:00 h p: x", datetime(2024, 1, 5, 12, 59)),
        # within a day after the clock (skew) stays in the clock's year; later goes back a year
        (utc(2024, 1, 5, 12), "Jan  6 10:00:00 h p: x", datetime(2024, 1, 6, 10, 0)),
        (utc(2024, 1, 5, 12), "Jan  8 10:00:00 h p: x", datetime(2023, 1, 8, 10, 0)),
        # Feb 29 goes back to the last leap year
        (utc(2023, 6, 1), "Feb 29 08:00:00 h p: x", datetime(2020, 2, 29, 8, 0)),
    ],
)
def test_syslog_year_is_inferred_from_the_clock(clock: datetime, line: str, expected: datetime) -> None:
    assert parse("rfc3164", line, clock).timestamp == expected


def test_glog_year_is_inferred_from_the_clock() -> None:
    late = parse("glog", "W1231 23:00:00.000001 7 main.go:1] late", utc(2024, 1, 5))
    assert late.timestamp == datetime(2023, 12, 31, 23, 0, 0, 1)


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("991231 235959 31 INFO dfs.DataNode: x", datetime(1999, 12, 31, 23, 59, 59)),  # 2099 is after the clock
        ("240106 100000 31 INFO dfs.DataNode: x", datetime(2024, 1, 6, 10, 0)),  # within a day after the clock
        ("240107 100000 31 INFO dfs.DataNode: x", datetime(1924, 1, 7, 10, 0)),  # beyond: the century before
        ("99/12/31 23:59:59 INFO Executor: x", datetime(1999, 12, 31, 23, 59, 59)),
        ("00/02/29 08:00:00.250 WARN Executor: x", datetime(2000, 2, 29, 8, 0, 0, 250000)),
        ("24/01/05 12:59:59 INFO Executor: x", datetime(2024, 1, 5, 12, 59, 59)),
    ],
)
def test_two_digit_years_are_this_century_unless_after_the_clock(line: str, expected: datetime) -> None:
    parsed = format_named("hdfs" if line[2] != "/" else "spark").parse(line, context())  # clock 2024-01-05
    assert parsed is not None and parsed.timestamp == expected


@pytest.mark.parametrize(
    ("name", "line"),
    [
        ("iso8601", "2023-13-29T10:03:11Z ERROR month 13"),
        ("iso8601", "2023-01-29T10:03:11Zulu no"),
        ("rfc3164", "Dec 32 06:55:46 host sshd[1]: day 32"),
        ("apache_error", "[Sun Dec 04 04:47:44 20"),  # truncated
        ("access_log", '10.0.0.1 - - [10/Oct/2000:13:55:36 -0700] "GET / HTT'),  # truncated
        ("json", '{"ts": "2023-01-29T10:03:11Z", "msg": "trunc'),
        ("json", "[1, 2, 3]"),
        ("logfmt", "this is = not logfmt"),
        ("logfmt", "k=v other=w"),  # pairs, but no time, level or message key
        ("logfmt", 'msg="a"level=error'),  # pairs must be separated by blanks
        ("logfmt", "level=error msg=hi and free text"),  # text after the pairs
        ("logfmt", 'level=error msg="unterminated'),
        ("json", '{"ts": "2023-01-29T10:03:11Z", "msg": "x"} trailing text'),
        ("rfc5424", "<999>1 2003-10-11T22:14:15Z h a - - - bad PRI"),
        ("epoch", "12345 too short"),
        ("container_json", '{"log": 5, "time": "2023-01-29T02:03:11Z"}'),
        ("cri", "2023-01-29T02:03:11Z stdlog F a stream that is none"),
        ("postgres", "2023-01-29 02:03:11 UTC [12] SHOUT:  no such severity"),
        ("cri", "2023-01-29 02:03:11 stderr F no T between date and time"),
        ("cfdr", "- 1117838570 2005.06.03"),  # truncated
        ("cfdr", "- 11178385 2005.06.03 R02-M1-N0-C:J12-U11 epoch of 8 digits"),
        ("cfdr", "Appread 1117869872 2005.06.04 R04-M1 a label is upper case"),
        ("hpc", "134681 node-246 unix.hw state_change.unavailable 10778047 1 epoch of 8 digits"),
        ("hpc", "134681 node-246 unix.hw"),  # truncated
        ("windows_cbs", "2016-09-28 04:30:30 Info                  CBS    no comma after the time"),
        ("windows_cbs", "2016-13-28 04:30:30, Info                  CBS    month 13"),
        ("proxifier", "[13.30 16:49:06] chrome.exe - month 13"),
        ("proxifier", "[10.30 16:49] chrome.exe - truncated time"),
        ("hdfs", "081309 203615 148 INFO dfs.DataNode: month 13"),
        ("hdfs", "081109 203615 INFO dfs.DataNode: no pid"),
        ("hdfs", "081109 203615 148 INFO"),  # truncated
        ("hdfs", "0811092 03615 148 INFO dfs.DataNode: shifted"),
        ("spark", "17/06/31 20:10:40 INFO Executor: June 31"),
        ("spark", "17/06/09 20:10:40 NOTE Executor: not a log4j level"),
        ("spark", "17/06/09 20:10"),  # truncated
        ("logcat", "13-17 16:13:38.811  1702  2395 D WindowManager: month 13"),
        ("logcat", "02-30 16:13:38.811  1702  2395 D WindowManager: Feb 30"),
        ("logcat", "2023-02-29 16:13:38.811  1702  2395 D WindowManager: not a leap year"),
        ("logcat", "03-17 16:13:38.811  1702  2395 X WindowManager: no level X"),
        ("logcat", "03-17 16:13:38  1702  2395 D WindowManager: no milliseconds"),
        ("logcat", "03-17 16:13:38.811  1702  2395 D"),  # truncated
        ("logcat", "--------- beginning of"),  # a marker without its buffer
        ("healthapp", "20171323-22:15:29:606|Step_LSC|30002312|month 13"),
        ("healthapp", "20171223-24:15:29:606|Step_LSC|30002312|hour 24"),
        ("healthapp", "20171223-22:15:29:6061|Step_LSC|30002312|four digits of milliseconds"),
        ("healthapp", "20171223-22:15:29:606|Step_LSC|main|no pid"),
        ("healthapp", "20171223-22:15:29:606|Step_LSC"),  # truncated
    ],
)
def test_lines_not_in_the_format_are_none_not_errors(name: str, line: str) -> None:
    assert format_named(name).parse(line, context()) is None


def test_logfmt_reads_quoted_values_with_escapes_and_keeps_the_last_of_a_repeated_key() -> None:
    line = 'level=warn msg="said \\"no\\" twice" path="C:\\\\tmp" n=1 n=2  '
    parsed = parse("logfmt", line)
    assert (parsed.level, parsed.message, parsed.fields) == ("WARN", 'said "no" twice', {"path": "C:\\tmp", "n": "2"})


def test_structured_keys_follow_the_key_order_not_the_order_in_the_line() -> None:
    parsed = parse("json", '{"ts": "2023-01-29T10:03:11Z", "msg": "", "message": "m", "time": "2023-01-29T11:00:00Z"}')
    assert (parsed.timestamp, parsed.message) == (utc(2023, 1, 29, 11), "m")  # `time` before `ts`; empty msg skipped
    assert parsed.fields == {"ts": "2023-01-29T10:03:11Z", "msg": ""}


def test_unknown_format_name_lists_the_known_ones() -> None:
    with pytest.raises(KeyError, match="rfc3164"):
        format_named("cobol")


def test_no_line_crashes_any_format() -> None:
    nasty = ["", " ", "\x00", "[", "<", "{", "{}", "<1>", "<1>1 ", "Dec", "2023-", "ts=", '"', "\ufeff",
             "ünïcödé ☃ " * 30, "[Sun Dec 04", "1" * 40, "E1203", "2023/01/29 10:03:11 [warn] 1#0:"]  # fmt: skip
    for line in nasty:
        for log_format in FORMATS:
            log_format.sniff(line)
            log_format.parse(line, context())


# --- continuation lines, the reader and the detector ------------------------------------------


@pytest.mark.parametrize(
    "line",
    ["\tat com.example.shop.OrderService.place(OrderService.java:88)", "    at java.base/java.lang.Thread.run",
     "Caused by: java.net.SocketTimeoutException: Read timed out", "\t... 42 more",
     "Traceback (most recent call last):", '  File "/app/db.py", line 12, in connect',
     "psycopg2.OperationalError: could not connect to server", "java.lang.IllegalStateException: closed",
     "KeyError: 'user_id'"],
)  # fmt: skip
def test_stack_trace_lines_are_continuations(line: str) -> None:
    assert is_continuation(line)
    assert LineReader(format_named("java"), context()).read(line).kind is LineKind.CONTINUATION


def test_ordinary_text_is_not_a_continuation() -> None:
    for line in ("hello world", "Dec 10 06:55:46 h p: x", "Error budget is fine"):
        assert not is_continuation(line)


def test_reader_uses_the_detected_format_first_and_falls_back_per_line() -> None:
    reader = LineReader(format_named("python"), context())
    assert reader.read("2015-07-29 17:41:44,747 - a - INFO - x").format == "python"
    fallback = reader.read("Dec 10 06:55:46 LabSZ sshd[1]: other format")
    assert (fallback.kind, fallback.format) == (LineKind.PARSED, "rfc3164")
    assert reader.read("   ").kind is LineKind.BLANK
    assert reader.read("complete gibberish").kind is LineKind.UNRECOGNISED


def _sample(name: str) -> list[str]:
    """50 lines: the format's own lines (varied), plus noise real files have."""
    own = [line for case_name, line, *_ in CASES if case_name == name]
    noise = ["", "    at com.example.Foo.bar(Foo.java:1)", "Caused by: java.io.IOException: boom",
             "\t... 12 more", "Traceback (most recent call last):", '  File "x.py", line 1, in <module>']  # fmt: skip
    if name not in ("json", "container_json", "logfmt"):
        noise += ["2023-01-29 10:03:11 a line with only an ISO stamp", "1675000000 epoch noise"]
    noise += ["--- truncated line without anything", "ünïcödé garbage ☃"]
    lines = [own[index % len(own)] for index in range(50 - len(noise))]
    return lines[:20] + noise + lines[20:]


@pytest.mark.parametrize("name", sorted({case[0] for case in CASES}))
def test_detector_picks_the_right_format_on_a_mixed_sample(name: str) -> None:
    sample = _sample(name)
    assert len(sample) == 50
    detection = detect(sample, context())
    assert detection.format == name
    assert detection.unrecognised == 2
    assert detection.example_unrecognised == "--- truncated line without anything"
    assert detection.continuation == sum(map(is_continuation, filter(str.strip, sample)))
    assert detection.timestamp_share >= 0.9


def test_detection_shares_count_levels_and_ignore_continuations() -> None:
    lines = ["2015-07-29 17:41:44,747 - a - INFO - up", "2015-07-29 17:41:45,000 - a - ERROR - down",
             "Traceback (most recent call last):", '  File "a.py", line 3, in f', "ValueError: bad",
             "no timestamp here"]  # fmt: skip
    detection = detect(lines, context())
    assert (detection.format, detection.lines, detection.continuation) == ("python", 6, 3)
    assert (detection.timestamped, detection.levelled, detection.unrecognised) == (2, 2, 1)
    assert detection.timestamp_share == pytest.approx(2 / 3)
    assert detection.model_dump()["level_share"] == pytest.approx(2 / 3)


def test_nothing_recognisable_detects_no_format() -> None:
    detection = detect(["just words", "more words", ""], context())
    assert detection.format is None and detection.timestamp_share == 0
    assert detection.example_unrecognised == "just words"


def test_ties_go_to_registry_order() -> None:
    # both `python` and `iso8601` read this line; python comes first in the registry
    assert detect(["2015-07-29 17:41:44,747 INFO started"], context()).format == "python"


def test_zookeeper_3_5_myid_prefix_is_detected_as_java_with_timestamp_and_level() -> None:
    sample = [
        "2026-03-18 09:05:00,007 [myid:] - INFO  [main:QuorumPeerConfig@174] - Reading configuration from: /conf/zoo.cfg",
        "2026-03-18 09:05:01,123 [myid:1] - WARN  [QuorumPeer[myid=1](plain=0.0.0.0:2181)(secure=disabled):"
        "Follower@129] - Exception when following the leader",
        "java.net.SocketException: Connection reset",
        "\tat java.base/java.net.SocketInputStream.read(SocketInputStream.java:186)",
        "2026-03-18 09:05:03,789 [myid:1] - ERROR [LearnerHandler-/10.0.0.2:41234:LearnerHandler@714] - Unexpected exception",
    ]
    detection = detect(sample, context())
    assert (detection.format, detection.timestamp_share, detection.level_share) == ("java", 1.0, 1.0)


# --- supercomputer, HPC, Windows CBS and Proxifier logs ------------------------------------------

_F2_FORMATS = ("cfdr", "hpc", "windows_cbs", "proxifier")


@pytest.mark.parametrize(("name", "line"), [(case[0], case[1]) for case in CASES if case[0] in _F2_FORMATS])
def test_no_other_format_reads_these_lines(name: str, line: str) -> None:
    # an HPC record id is no epoch, a Thunderbird line's inner syslog is no rfc3164 line,
    # a CBS line's `, ` keeps iso8601 out
    readers = [fmt.name for fmt in FORMATS if fmt.sniff(line) and fmt.parse(line, context()) is not None]
    assert readers == [name]


def test_epoch_does_not_read_an_hpc_record_id_and_still_reads_its_own_lines() -> None:
    line = "437893 gige7 gige.ps_fail sw 1079543049 1 Power supply failed"
    assert format_named("epoch").parse(line, context()) is None
    read = LineReader(format_named("epoch"), context()).read(line)
    assert (read.format, read.parsed.timestamp) == ("hpc", utc(2004, 3, 17, 17, 4, 9))
    assert parse("epoch", "1079543049 gige7 Power supply failed").timestamp == utc(2004, 3, 17, 17, 4, 9)


def test_cfdr_stamp_adds_its_microseconds_only_when_its_second_is_the_epochs() -> None:
    line = "- 1117838570 2005.06.03 R02-M1-N0-C:J12-U11 2005-06-03-15.42.{}.675872 R02-M1-N0-C:J12-U11 RAS APP ERROR x"
    assert parse("cfdr", line.format("50")).timestamp == utc(2005, 6, 3, 22, 42, 50, 675872)
    assert parse("cfdr", line.format("49")).timestamp == utc(2005, 6, 3, 22, 42, 50)


def test_cfdr_rest_in_neither_shape_is_kept_whole_without_a_level() -> None:
    parsed = parse("cfdr", "- 1117838570 2005.06.03 R02-M1-N0-C:J12-U11 RAS KERNEL BOGUS no local stamp")
    assert (parsed.timestamp, parsed.level) == (utc(2005, 6, 3, 22, 42, 50), None)
    assert (parsed.message, parsed.fields) == ("RAS KERNEL BOGUS no local stamp", {"node": "R02-M1-N0-C:J12-U11"})


def test_proxifier_year_is_inferred_from_the_clock_apart_from_syslog_keys() -> None:
    shared = context(utc(2024, 1, 5, 12))
    assert format_named("proxifier").parse("[01.05 11:00:00] a.exe - x", shared).timestamp == datetime(2024, 1, 5, 11)
    assert format_named("proxifier").parse("[01.07 13:00:00] a.exe - x", shared).timestamp == datetime(2023, 1, 7, 13)
    syslog = format_named("rfc3164").parse("Jan  5 11:00:00 h p: x", shared)
    assert syslog is not None and syslog.timestamp == datetime(2024, 1, 5, 11)
    plain = format_named("proxifier").parse("[01.05 11:00:01] Proxifier started, no separator", shared)
    assert plain is not None and (plain.message, plain.fields) == ("Proxifier started, no separator", {})


# A file as each system writes it, with the noise real files hold: (how the reader reads it, line).
MIXED_FILES = {
    "cfdr": [
        ("cfdr", "- 1117838570 2005.06.03 R02-M1-N0-C:J12-U11 2005-06-03-15.42.50.675872 R02-M1-N0-C:J12-U11 RAS KERNEL INFO instruction cache parity error corrected"),
        ("cfdr", "- 1117838573 2005.06.03 R02-M1-N0-C:J12-U11 2005-06-03-15.42.53.276129 R02-M1-N0-C:J12-U11 RAS KERNEL INFO instruction cache parity error corrected"),
        ("cfdr", "APPREAD 1117869872 2005.06.04 R04-M1-N4-I:J18-U11 2005-06-04-00.24.32.432192 R04-M1-N4-I:J18-U11 RAS APP FATAL ciod: failed to read message prefix on control stream (CioStream socket to 172.16.96.116:33569"),
        ("cfdr", "- 1117955341 2005.06.05 NULL 2005-06-05-00.09.01.903040 NULL RAS MMCS ERROR idoproxydb hit ASSERT condition: ASSERT expression=0 Source file=idotransportmgr.cpp Source line=1043"),
        ("continuation", "    Function=int IdoTransportMgr::SendPacket(IdoUdpMgr*, BglCtlPavTrace*)"),
        ("cfdr", "- 1118522003 2005.06.11 UNKNOWN_LOCATION 2005-06-11-13.33.23.491000 UNKNOWN_LOCATION NULL DISCOVERY WARNING Node card VPD check: missing U01 node, VPD ecid 0000000000000000 in processor card slot J13"),
        ("blank", ""),
        ("cfdr", "KERNDTLB 1118536327 2005.06.11 R30-M0-N9-C:J16-U01 2005-06-11-17.32.07.581048 R30-M0-N9-C:J16-U01 RAS KERNEL FATAL data TLB error interrupt"),
        ("cfdr", "- 1118540000 2005.06.11 R30-M0-N9-C:J16-U01 2005-06-11-18.33.20.000001 R30-M0-N9-C:J16-U01 RAS KERNEL FAILURE machine check: Überlauf ☃"),
        ("cfdr", "- 1131566461 2005.11.09 dn228 Nov 9 12:01:01 dn228/dn228 crond(pam_unix)[2915]: session closed for user root"),
        ("cfdr", "- 1131566475 2005.11.09 en257 Nov 9 12:01:15 en257/en257 ntpd[2380]: synchronized to 10.100.16.250, stratum 2"),
        ("cfdr", "- 1131577359 2005.11.09 dn754 Nov 9 15:02:39 dn754/dn754 -- MARK --"),
        ("rfc3164", "Nov  9 15:03:00 tbird-admin1 sshd[311]: error: Could not load host key: /etc/ssh/ssh_host_dsa_key"),
        ("unrecognised", "--- log rotated by logrotate ---"),
    ],
    "hpc": [
        ("hpc", "134681 node-246 unix.hw state_change.unavailable 1077804742 1 Component State Change: Component \\042alt0\\042 is in the unavailable state (HWID=1973)"),
        ("hpc", "2560 node-143 boot_cmd new 1074119817 1 Targeting domains:node-D1 and nodes:node-[40-63] child of command 2559"),
        ("hpc", "460081 node-208 action start 1084680778 1 clusterAddMember  (command 1902)"),
        ("hpc", "437893 gige7 gige.ps_fail sw 1079543049 1 Power supply failed"),
        ("hpc", "15814 node-40 node psu 1074625734 1 psu failure\\ ambient=28"),
        ("hpc", "126234 node-D0 node temp 1077011040 1 ambient=33"),
        ("hpc", "126235 node-D0 node temp 1077011041 0"),
        ("blank", "   "),
        ("epoch", "1077804800 watchdog: heartbeat from node-246 ok"),
        ("unrecognised", "LogId Node Component State Time Flag Content"),
        ("unrecognised", "2561 node-143 boot_cmd ünïcödé"),
    ],
    "windows_cbs": [
        ("windows_cbs", "2016-09-28 04:30:30, Info                  CBS    Loaded Servicing Stack v6.1.7601.23505 with Core: C:\\Windows\\winsxs\\amd64_microsoft-windows-servicingstack_31bf3856ad364e35_6.1.7601.23505_none_681aa442f6fed7f0\\cbscore.dll"),
        ("windows_cbs", "2016-09-28 04:30:31, Info                  CSI    00000001@2016/9/27:20:30:31.455 WcpInitialize (wcp.dll version 0.0.0.6) called (stack @0x7fed806eb5d @0x7fef9fb9b6d)"),
        ("windows_cbs", "2016-09-28 04:30:31, Info                  CBS    SQM: Failed to start upload with file pattern: C:\\Windows\\servicing\\sqm\\*_std.sqm, flags: 0x2 [HRESULT = 0x80004005 - E_FAIL]"),
        ("windows_cbs", "2016-09-28 04:40:30, Warning               CBS    Failed to get next element [HRESULT = 0x800f080d - CBS_E_MANIFEST_INVALID_ITEM]"),
        ("windows_cbs", "2016-09-29 00:00:58, Error                 CSI    000000a4 (F) STATUS_SXS_ASSEMBLY_MISSING #1042# from Windows::ServicingAPI::CCSITransaction::ICSITransaction_PinDeployment"),
        ("continuation", "    [gle=0x80004005]"),
        ("windows_cbs", "2016-09-29 00:01:02, Perf                  CBS    PerfTrack: session ended after 264 s"),
        ("windows_cbs", "2016-09-29 00:01:03, Info                  CBS    Datei „ü.dll“ übersprungen"),
        ("iso8601", "2016-09-29T00:01:04Z setup: pending.xml found"),
        ("blank", ""),
        ("unrecognised", "Checking System Update Readiness."),
        ("unrecognised", "Seconds executed: 264"),
    ],
    "proxifier": [
        ("proxifier", "[10.30 16:49:06] chrome.exe - proxy.cse.cuhk.edu.hk:5070 open through proxy proxy.cse.cuhk.edu.hk:5070 HTTPS"),
        ("proxifier", "[10.30 16:49:07] chrome.exe - proxy.cse.cuhk.edu.hk:5070 close, 0 bytes sent, 0 bytes received, lifetime <1 sec"),
        ("proxifier", "[10.30 16:54:07] chrome.exe *64 - proxy.cse.cuhk.edu.hk:5070 open through proxy proxy.cse.cuhk.edu.hk:5070 HTTPS"),
        ("proxifier", "[10.30 16:56:17] SearchUI.exe *64 - get.sogou.com:80 close, 2305 bytes (2.25 KB) sent, 1072 bytes (1.04 KB) received, lifetime 00:04"),
        ("proxifier", "[10.30 17:01:43] Dropbox.exe - block.dropbox.com:443 error : A connection request was canceled before the completion."),
        ("proxifier", "[10.30 17:02:00] QQ音乐.exe - y.qq.com:443 open directly"),
        ("proxifier", "[10.30 17:02:01] Proxifier service restarted"),
        ("blank", ""),
        ("apache_error", "[Sun Dec 04 04:47:44 2005] [error] [client 211.62.201.48] File does not exist: /var/www/html/x"),
        ("iso8601", "[2016-10-30T17:05:00Z] proxy list reloaded"),
        ("unrecognised", "[Connection log]"),
    ],
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(MIXED_FILES))
def test_a_mixed_file_is_detected_and_read_line_by_line(name: str) -> None:
    expected = MIXED_FILES[name]
    detection = detect([line for _, line in expected], context())
    assert detection.format == name
    reader = LineReader(format_named(name), context())
    for how, line in expected:
        read = reader.read(line)
        assert (read.format or read.kind.value) == how, line
        assert read.parsed is None or read.parsed.timestamp is not None
    own = [reader.read(line).parsed for how, line in expected if how == name]
    assert len({parsed.level for parsed in own if parsed}) >= (1 if name == "hpc" else 2)


# --- Loghub-style logs: HDFS, Spark, Android logcat, HealthApp ------------------------------------

_MIXED = {  # a file of each format as the system writes it: (how each line reads, the line)
    "hdfs": [
        ("hdfs", "081109 203518 143 INFO dfs.DataNode$DataXceiver: Receiving block blk_-1608999687919862906 "
                 "src: /10.250.19.102:54106 dest: /10.250.19.102:50010"),
        ("hdfs", "081109 203518 35 INFO dfs.FSNamesystem: BLOCK* NameSystem.allocateBlock: "
                 "/mnt/hadoop/mapred/system/job_200811092030_0001/job.jar. blk_-1608999687919862906"),
        ("hdfs", "081109 204005 35 INFO dfs.FSNamesystem: BLOCK* NameSystem.addStoredBlock: blockMap updated: "
                 "10.251.73.220:50010 is added to blk_7128370237687728475 size 67108864"),
        ("hdfs", "081109 204106 329 WARN dfs.DataNode$DataXceiver: 10.251.90.64:50010:Got exception while serving "
                 "blk_-2918118818249673980 to /10.251.90.64:"),
        ("continuation", "java.io.IOException: Block blk_-2918118818249673980 is not valid."),
        ("continuation", "\tat org.apache.hadoop.dfs.FSDataset.getBlockFile(FSDataset.java:534)"),
        ("hdfs", "081109 204132 26 ERROR dfs.DataNode: 10.251.43.115:50010: DataXceiver: écriture échouée"),
        ("blank", ""),
        ("rfc3164", "Nov  9 20:41:40 node-7 kernel: EXT3-fs error (device sda1): ext3_find_entry"),
        ("unrecognised", "==> /var/log/hadoop/hadoop-datanode.log <=="),
        ("hdfs", "081109 204201 148 INFO dfs.DataNode$PacketResponder: PacketResponder 2 for block "
                 "blk_-1608999687919862906 terminating"),
    ],
    "spark": [
        ("spark", "17/06/09 20:10:40 INFO executor.CoarseGrainedExecutorBackend: Started daemon with process name: "
                  "29315@mesos-slave-07"),
        ("spark", "17/06/09 20:10:40 INFO util.SignalUtils: Registered signal handler for TERM"),
        ("spark", "17/06/09 20:10:41 WARN util.NativeCodeLoader: Unable to load native-hadoop library for your "
                  "platform... using builtin-java classes where applicable"),
        ("spark", "17/06/09 20:10:46 INFO storage.DiskBlockManager: Created local directory at "
                  "/opt/hdfs/nodemanager/usercache/curi/appcache/application_1485248649253_0147/blockmgr-70293f72"),
        ("spark", "17/06/09 20:11:11,052 ERROR executor.Executor: Exception in task 2.0 in stage 1.0 (TID 9)"),
        ("continuation", "java.io.IOException: Connection reset by peer"),
        ("continuation", "\tat sun.nio.ch.FileDispatcherImpl.read0(Native Method)"),
        ("continuation", "\tat org.apache.spark.network.client.TransportClient.sendRpc(TransportClient.java:193)"),
        ("continuation", "Caused by: java.net.SocketException: Broken pipe"),
        ("continuation", "\t... 12 more"),
        ("spark", "17/06/09 20:11:12 INFO executor.CoarseGrainedExecutorBackend: Got assigned task 10"),
        ("unrecognised", "Exception in thread \"dispatcher-event-loop-3\" java.lang.OutOfMemoryError: Java heap space"),
        ("spark", "17/06/09 20:11:13 INFO memory.MemoryStore: MemoryStore cleared — 0 B libres"),
    ],
    "logcat": [
        ("continuation", "--------- beginning of main"),
        ("logcat", "03-17 16:13:38.811  1702  2395 D WindowManager: printFreezingDisplayLogsopening app wtoken = "
                   "AppWindowToken{9f4ef63 token=Token{a64f992 ActivityRecord{de9231d u0 com.tencent.qt.qtl/"
                   ".activity.info.NewsDetailXmlActivity t761}}}, allDrawn= false"),
        ("logcat", "03-17 16:13:38.819  1702  8671 D PowerManagerService: acquire lock=233570404, flags=0x1, "
                   "tag=\"View Lock\", name=com.android.systemui, ws=null, uid=10037, pid=2227"),
        ("continuation", "--------- beginning of system"),
        ("logcat", "03-17 16:13:38.839  1702  2113 V WindowManager: Skipping AppWindowToken{df0798e token=Token{78af589 "
                   "ActivityRecord{3b04890 u0 com.tencent.qt.qtl/com.tencent.video.player.activity.PlayerActivity t761}}}"),
        ("logcat", "03-17 16:13:39.020  4128  4128 I chatty  : uid=10127(com.tencent.qt.qtl) expire 4 lines"),
        ("continuation", "--------- beginning of crash"),
        ("logcat", "03-17 16:13:40.512  4128  4128 E AndroidRuntime: FATAL EXCEPTION: main"),
        ("logcat", "03-17 16:13:40.512  4128  4128 E AndroidRuntime: Process: com.tencent.qt.qtl, PID: 4128"),
        ("logcat", "03-17 16:13:40.512  4128  4128 E AndroidRuntime: java.lang.NullPointerException: Attempt to "
                   "invoke virtual method 'int java.lang.String.length()' on a null object reference"),
        ("logcat", "03-17 16:13:40.512  4128  4128 E AndroidRuntime: \tat com.tencent.qt.qtl.Foo.bar(Foo.java:42)"),
        ("logcat", "03-17 16:13:40.530  1702  3012 W ActivityManager:   Force finishing activity "
                   "com.tencent.qt.qtl/.activity.info.NewsDetailXmlActivity"),
        ("blank", "   "),
        ("logcat", "03-17 16:13:41.001 I/ActivityManager( 1702): Process com.tencent.qt.qtl (pid 4128) has died"),
        ("unrecognised", "[ 1234.567890] binder: 4128:4128 transaction failed 29189/-22"),
    ],
    "healthapp": [
        ("healthapp", "20171223-22:15:29:606|Step_LSC|30002312|onStandStepChanged 3579"),
        ("healthapp", "20171223-22:15:29:615|Step_LSC|30002312|onExtend:1514038530000 14 0 4"),
        ("healthapp", "20171223-22:15:29:633|Step_StandReportReceiver|30002312|onReceive action: "
                      "android.intent.action.SCREEN_ON"),
        ("healthapp", "20171223-22:15:29:635|Step_LSC|30002312|processHandleBroadcastAction action:"
                      "android.intent.action.SCREEN_ON"),
        ("healthapp", "20171223-23:59:59:999|Step_SPUtils|30002312| getTodayTotalDetailSteps = "
                      "1514044799000##7007##548365##8661##12361##27173954"),
        ("healthapp", "20171224-0:0:1:45|Step_ExtSDM|30002312|calculateAltitudeWithCache totalAltitude=240"),
        ("healthapp", "20171224-0:0:2:5|HiH_|30002312|"),
        ("healthapp", "20171224-0:1:2:300|Step_StandStepCounter|30002312|flush sensor data ☃ 步数"),
        ("unrecognised", "logcat: HealthApp export truncated"),
    ],
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(_MIXED))
def test_loghub_style_files_are_detected_and_read_line_by_line(name: str) -> None:
    expected = _MIXED[name]
    detection = detect([line for _, line in expected], context())
    kinds = [how for how, _ in expected]
    assert detection.format == name
    assert detection.continuation == kinds.count("continuation")
    assert detection.unrecognised == kinds.count("unrecognised")
    assert detection.timestamped == len(kinds) - sum(map(kinds.count, ("continuation", "unrecognised", "blank")))
    reader = LineReader(format_named(name), context())
    for how, line in expected:
        read = reader.read(line)
        assert (read.format or read.kind.value) == how, line
    stamps = [reader.read(line).parsed.timestamp for how, line in expected if how == name]  # type: ignore[union-attr]
    assert None not in stamps and stamps == sorted(stamps)  # type: ignore[type-var]


def test_logcat_year_comes_from_the_clock_unless_written() -> None:
    line = "12-31 23:59:59.999  1702  1702 I ActivityManager: x"
    assert parse("logcat", line, utc(2024, 1, 5)).timestamp == datetime(2023, 12, 31, 23, 59, 59, 999000)
    assert parse("logcat", line, utc(2024, 12, 31, 23)).timestamp == datetime(2024, 12, 31, 23, 59, 59, 999000)
    assert parse("logcat", "2019-" + line, utc(2024, 1, 5)).timestamp == datetime(2019, 12, 31, 23, 59, 59, 999000)


def test_year_inferring_formats_keep_apart_in_one_memo() -> None:
    shared = context()
    syslog = format_named("rfc3164").parse("Jan  5 10:00:00 h p: x", shared)
    logcat = format_named("logcat").parse("01-05 10:00:00.000  1  1 I t: x", shared)
    spark = format_named("spark").parse("99/01/05 10:00:00 INFO T: x", shared)
    hdfs = format_named("hdfs").parse("990105 100000 1 INFO T: x", shared)
    assert syslog and logcat and spark and hdfs
    assert (syslog.timestamp, logcat.timestamp) == (datetime(2024, 1, 5, 10), datetime(2024, 1, 5, 10))
    assert spark.timestamp == hdfs.timestamp == datetime(1999, 1, 5, 10)
    assert len(shared.memo) == 4


def test_logcat_buffer_markers_are_no_events_and_do_not_count_against_logcat() -> None:
    markers = [f"--------- {what} {buffer}" for what in ("beginning of", "switch to") for buffer in ("main", "crash")]
    events = ["03-17 16:13:38.811  1702  2395 I ActivityManager: Start proc 4128"] * 2
    detection = detect(markers + events, context())
    assert (detection.format, detection.continuation, detection.timestamp_share) == ("logcat", 4, 1.0)
    assert not is_continuation("--------- something else") and not is_continuation("---------beginning of main")


@pytest.mark.parametrize(
    "line",
    ["081109 203615 148 INFO dfs.DataNode$PacketResponder: x", "17/06/09 20:10:40 INFO Executor: x",
     "03-17 16:13:38.811  1702  2395 D WindowManager: x", "20171223-22:15:29:606|Step_LSC|30002312|x"],
)  # fmt: skip
def test_no_other_format_reads_loghub_style_lines(line: str) -> None:
    readers = [each.name for each in FORMATS if each.sniff(line) and each.parse(line, context())]
    assert len(readers) == 1, readers


# --- container runtime wrappers: the inner line read as if it stood alone -------------------------

_RUNTIME_TIME = "2026-07-08T22:41:55.987654321Z"
_RUNTIME_MOMENT = utc(2026, 7, 8, 22, 41, 55, 987654)
# inner line, its level and message, and the fields it gives besides the runtime's stream
_INNER_LINES = [
    ("2026-07-08 22:41:55.210 ERROR 1 --- [nio-8080-exec-3] c.e.shop.CartController : payment failed",
     "ERROR", "payment failed", {"thread": "nio-8080-exec-3", "logger": "c.e.shop.CartController", "pid": "1"}),
    ('time=2026-07-08T22:41:55Z level=error msg="upstream timeout"', "ERROR", "upstream timeout", {}),
    ('{"level":"warn","msg":"x"}', "WARN", "x", {}),
    ('{"level":"error","ts":1783550515.21,"caller":"cart/handler.go:42","msg":"payment failed","orderId":42}',
     "ERROR", "payment failed", {"caller": "cart/handler.go:42", "orderId": "42"}),
    ('{"@timestamp":"2026-07-08T22:41:55.210Z","log.level":"WARN","message":"pool at 95%","logger_name":"c.e.Pool"}',
     "WARN", "pool at 95%", {"logger_name": "c.e.Pool"}),
    # no timestamp of its own (the runtime gives one): read as the text after an ISO 8601 stamp is
    ("[ERROR] payment failed", "ERROR", "payment failed", {}),
    ("22:41:55.210 [main] WARN  c.e.shop.Pool - pool at 95%", "WARN", "22:41:55.210 [main] WARN  c.e.shop.Pool - pool at 95%", {}),
    ("plain words without a level", None, "plain words without a level", {}),
]  # fmt: skip


def docker_line(inner: str, stream: str = "stdout") -> str:
    return json.dumps({"log": inner + "\n", "stream": stream, "time": _RUNTIME_TIME}, separators=(",", ":"))


def cri_line(inner: str, stream: str = "stdout") -> str:
    return f"{_RUNTIME_TIME} {stream} F {inner}"


@pytest.mark.parametrize("wrap", [docker_line, cri_line])
@pytest.mark.parametrize(("inner", "level", "message", "fields"), _INNER_LINES)
def test_a_wrapped_line_has_its_inner_level_and_message_and_the_runtime_time(wrap, inner, level, message, fields):
    read = LineReader(None, context()).read(wrap(inner))
    assert read.kind is LineKind.PARSED and read.parsed is not None
    assert (read.parsed.level, read.parsed.message) == (level, message)
    assert read.parsed.fields == {"stream": "stdout"} | fields
    assert read.parsed.timestamp == _RUNTIME_MOMENT  # the runtime's, always zoned, even where the inner line has one


@pytest.mark.parametrize("wrap", [docker_line, cri_line])
@pytest.mark.parametrize(
    "inner", ["\tat com.example.shop.OrderServiceImpl.place(OrderServiceImpl.java:548)", "\t... 42 more",
              "Caused by: java.net.SocketTimeoutException: Read timed out",
              "java.lang.IllegalStateException: closed"]
)  # fmt: skip
def test_a_wrapped_stack_trace_line_continues_the_event_before_it(wrap, inner) -> None:
    read = LineReader(None, context()).read(wrap(inner, "stderr"))
    assert read.kind is LineKind.CONTINUATION
    assert read.parsed is not None and read.parsed.message == inner.strip()  # as an unwrapped one's
    assert (read.parsed.timestamp, read.parsed.level) == (None, None)  # the event's, not its own


@pytest.mark.parametrize("wrap", [docker_line, cri_line])
def test_wrapped_lines_are_detected_with_their_inner_levels(wrap) -> None:
    sample = [wrap(inner) for inner, *_ in _INNER_LINES[:-1]]
    sample += [wrap("\tat com.example.Foo.bar(Foo.java:503)", "stderr"), wrap("\t... 12 more", "stderr")]
    detection = detect(sample, context())
    assert detection.format == ("container_json" if wrap is docker_line else "cri")
    assert (detection.continuation, detection.timestamp_share, detection.level_share) == (2, 1.0, 1.0)
