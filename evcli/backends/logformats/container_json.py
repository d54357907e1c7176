"""Docker json-file / Kubernetes node log lines: `{"log":"<inner line>\\n","stream":"stderr",
"time":"2023-01-29T02:03:11.123456789Z"}`.

The timestamp is the runtime's `time` (always zoned), also where the inner line writes one; the
inner line is read as if it stood alone for its level, message and fields (`WrapperFormat`): a
text line (Spring Boot, logfmt, glog, ...), a JSON line (zap, logstash), a stack-trace line.
"""

from __future__ import annotations

from evcli.backends.logformats._keys import time_value
from evcli.backends.logformats.base import ParseContext, ParsedLine, WrapperFormat
from evcli.backends.logformats.json_lines import json_object


class ContainerJson(WrapperFormat):
    name = "container_json"
    description = 'Docker/Kubernetes JSON log lines {"log": "...", "stream": "stderr", "time": "..."}'
    example = '{"log":"2023-01-29 10:03:11,120 ERROR [main] Db: timeout\\n","stream":"stderr","time":"2023-01-29T02:03:11.12Z"}'

    def sniff(self, line: str) -> bool:
        return line.startswith('{"log":') or ('"stream":' in line and '"log":' in line)

    def parse(self, line: str, context: ParseContext) -> ParsedLine | None:
        obj = json_object(line)
        if obj is None or not isinstance(obj.get("log"), str) or "time" not in obj:
            return None
        moment = time_value(obj["time"])
        text = obj["log"].rstrip("\r\n")
        fields = {"stream": str(obj["stream"])} if "stream" in obj else {}
        return self.wrapped(moment, text, fields, context)
