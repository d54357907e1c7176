"""Key names that structured formats (JSON lines, logfmt) share, and reading their values: a value that
is no time (level) reads as None, whatever json or a line holds; reading one never raises."""

from __future__ import annotations

import math
from datetime import datetime
from typing import Any

from evcli.backends.logformats.base import LEVELS, epoch_stamp, level_of

TIME_KEYS = ("@timestamp", "timestamp", "time", "ts", "t", "datetime", "date")
LEVEL_KEYS = ("level", "severity", "lvl", "loglevel", "log.level", "levelname")
MESSAGE_KEYS = ("msg", "message", "log", "@message", "event")
_NUMERIC_LEVELS = {10: "TRACE", 20: "DEBUG", 30: "INFO", 40: "WARN", 50: "ERROR", 60: "FATAL"}  # pino, bunyan
# key -> (role: 0 time, 1 level, 2 message; rank within the role's keys, first preferred)
_ROLES = {key: (role, rank) for role, keys in enumerate((TIME_KEYS, LEVEL_KEYS, MESSAGE_KEYS))
          for rank, key in enumerate(keys)}  # fmt: skip


def time_value(value: Any) -> datetime | None:
    """An ISO 8601 string or epoch number (s/ms/us/ns, also as a digit string) as a datetime; None for
    anything else: NaN, Infinity, an integer beyond a float's range (json reads them all) and digits
    `float` does not read (`²`) too."""
    if isinstance(value, bool):
        return None
    try:
        if isinstance(value, int | float):
            return epoch_stamp(float(value))
        if not isinstance(value, str) or not value[:1].isdigit():
            return None
        if value.replace(".", "", 1).isdigit():
            return epoch_stamp(float(value))
        return datetime.fromisoformat(value)
    except (ValueError, OverflowError):
        return None


def level_value(value: Any) -> str | None:
    """A level word (`warning`, `ERROR`) or a pino/bunyan number (30 = INFO) as one of LEVELS; None for
    anything else, NaN and Infinity too (json reads them)."""
    if isinstance(value, bool) or (isinstance(value, float) and not math.isfinite(value)):
        return None
    if isinstance(value, int | float):
        return _NUMERIC_LEVELS.get(int(value))
    if isinstance(value, str):
        word = value.strip()
        return level_of(word) or (word.upper() if word.upper() in LEVELS else None)
    return None


def role_keys(mapping: dict[str, Any]) -> list[str | None]:
    """[time key, level key, message key] of a mapping: for each role the first of its keys
    (TIME_KEYS, LEVEL_KEYS, MESSAGE_KEYS order) that the mapping holds with a non-empty value,
    else None. One pass over the mapping's keys (a line's few keys, not every known name)."""
    found: list[str | None] = [None, None, None]
    ranks = [len(_ROLES)] * 3
    for key, value in mapping.items():
        role = _ROLES.get(key)
        if role is not None and role[1] < ranks[role[0]] and value is not None and value != "":
            found[role[0]], ranks[role[0]] = key, role[1]
    return found
