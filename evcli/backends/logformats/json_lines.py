"""JSON lines with the common key names: time `@timestamp`/`timestamp`/`time`/`ts` (ISO 8601 or
epoch s/ms/us/ns), level `level`/`severity`/`lvl` (words or pino numbers, ECS `log.level`),
message `msg`/`message`/`log`. Other scalar keys become fields. A JSON object without any of
these keys is still a JSON line (no timestamp, no level). A Kubernetes Event (`"kind": "Event"`) is read
by its own keys: lastTimestamp, type (Normal, Warning) as level, reason and message, involvedObject as
the instance."""

from __future__ import annotations

import json
from typing import Any

from evcli.backends.logformats._keys import (
    level_value,
    role_keys,
    time_value,
)
from evcli.backends.logformats.base import LogFormat, ParseContext, ParsedLine


class JsonLines(LogFormat):
    name = "json"
    description = "JSON lines with @timestamp/timestamp/time/ts, level/severity/lvl, msg/message/log"
    example = '{"ts":"2023-01-29T02:03:11.120Z","level":"error","msg":"query timeout","service":"db"}'
    generic = True

    def sniff(self, line: str) -> bool:
        return line[:1] == "{"

    def parse(self, line: str, context: ParseContext) -> ParsedLine | None:
        obj = json_object(line)
        return None if obj is None else record_of(obj)


def json_object(line: str) -> dict[str, Any] | None:
    """The JSON object a line holds, else None; a line not ending in `}` (trailing blanks
    aside) is no object and is not handed to the decoder."""
    if line[:1] != "{" or line.rstrip()[-1:] != "}":
        return None
    try:
        obj = json.loads(line)
    except (ValueError, RecursionError):  # a line nested too deeply to decode is text, as broken JSON is
        return None
    return obj if isinstance(obj, dict) else None


# A Kubernetes Event (`kubectl get events -o json` items, `kubectl get events -w -o json`): its type is its
# level, the object it is about its instance
_EVENT_TYPES = {"Normal": "INFO", "Warning": "WARN"}
_EVENT_TIMES = ("lastTimestamp", "eventTime", "firstTimestamp")


def record_of(obj: dict[str, Any]) -> ParsedLine:
    nested = obj.get("log")
    if isinstance(nested, dict) and "level" in nested:  # Elastic Common Schema: {"log": {"level": ...}}
        obj = {**obj, "log.level": nested["level"]}
        del obj["log"]
    if obj.get("kind") == "Event" and isinstance(obj.get("involvedObject"), dict):
        return _event(obj)
    time_key, level_key, message_key = role_keys(obj)
    used = {time_key, level_key, message_key}
    fields = {key: str(value) for key, value in obj.items()
              if key not in used and isinstance(value, str | int | float | bool)}  # fmt: skip
    return ParsedLine(
        time_value(obj[time_key]) if time_key else None,
        level_value(obj[level_key]) if level_key else None,
        str(obj[message_key]) if message_key else "",
        fields,
    )


FORMAT = JsonLines()


def _event(obj: dict[str, Any]) -> ParsedLine:
    """A Kubernetes Event: its last (else event, first) time, type as level, reason and message, and the
    object it is about (`pod`/`node`/... name) as the instance."""
    about = obj["involvedObject"]
    moment = next((time_value(obj[key]) for key in _EVENT_TIMES if obj.get(key)), None)
    if moment is None and isinstance(obj.get("metadata"), dict):
        moment = time_value(obj["metadata"].get("creationTimestamp"))
    kind, name = str(about.get("kind") or ""), str(about.get("name") or "")
    fields = {"kind": kind, "instance": name, "reason": str(obj.get("reason") or "")}
    fields |= {"namespace": str(about["namespace"])} if about.get("namespace") else {}
    fields |= {"count": str(obj["count"])} if isinstance(obj.get("count"), int) else {}
    message = " ".join(part for part in (str(obj.get("reason") or ""), str(obj.get("message") or "")) if part)
    return ParsedLine(moment, _EVENT_TYPES.get(str(obj.get("type"))), message, fields)
