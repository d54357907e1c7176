"""CRI (containerd, CRI-O) container log lines, as Kubernetes nodes keep them under /var/log/pods:
`2026-07-14T18:03:12.345678901Z stderr F <inner line>`.

The timestamp is the runtime's (always zoned, nanoseconds), then the stream and a tag: `F` a full
line, `P` a partial one (a line the runtime split; each part is read as a line of its own). The
runtime's timestamp is the line's, also where the inner line writes one; the inner line is read as
if it stood alone for its level, message and fields (`WrapperFormat`).
"""

from __future__ import annotations

import re

from evcli.backends.logformats._keys import time_value
from evcli.backends.logformats.base import ParseContext, ParsedLine, WrapperFormat

_LINE = re.compile(
    r"(?P<stamp>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,9})?(?:Z|[+-]\d\d:\d\d)) (?P<stream>stdout|stderr) "
    r"(?P<tag>[FP])(?: (?P<text>.*))?$"
)


class Cri(WrapperFormat):
    name = "cri"
    description = "CRI container log lines (containerd, CRI-O): <RFC 3339 time> stdout|stderr F|P <line>"
    example = "2026-07-14T18:03:12.345678901Z stderr F 2026-07-14 18:03:12,345 ERROR [main] Db: timeout"

    def sniff(self, line: str) -> bool:
        return line[:1].isdigit() and (" stdout " in line[:48] or " stderr " in line[:48])

    def parse(self, line: str, context: ParseContext) -> ParsedLine | None:
        match = _LINE.match(line)
        if match is None:
            return None
        moment = time_value(match["stamp"])
        if moment is None:
            return None
        text = match["text"] or ""
        fields = {"stream": match["stream"]} | ({"partial": "true"} if match["tag"] == "P" else {})
        return self.wrapped(moment, text, fields, context)
