"""What the vectorised log reader (evcli.backends.logcolumns) knows of each format: data, no code.

A format's LEAD is a regex (Rust's regex crate reads it: no look-around, no back-reference) that every
line the format's `parse` reads matches: a line its lead does not match is one the format surely rejects,
so the reader may go on to the next format as `LineReader` does. Most leads are the format's own line
regex; a format without a lead may read any line (the reader hands lines it reaches to Python).

A format's SHAPE says how the vectorised reader reads the lines its regex matches, exactly as `parse`
does: `pattern` is the format's own regex (a match of it is the match Python's re finds: both engines
are leftmost-first and the lines they get are printable ASCII, tabs and the SAFE characters of
evcli.backends.logshapes_unicode, on which they agree), its named groups are
read as `time` says, the first present of `levels` by the `level_table`, the first non-empty of
`instance_fields` as the instance (evcli.backends.logrows.split_instance's key order), `message` as the
message; `after` names how the text after the match is read (`leading_level`: base.leading_level on it,
after a blank or at the line end). A line whose reading is not certain (a date the vector parser does
not take, a level word it cannot place) is left to the per-line Python reading.

Invariants: a shape's `pattern` reads no line its format's `parse` rejects, and gives the groups `parse`
uses; the tests (tests/backends/test_log_columns.py) compare every shaped format with the Python reading.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

from evcli.backends.logformats import (
    access_log,
    apache_error,
    cfdr,
    cri,
    epoch,
    glog,
    hdfs,
    healthapp,
    hpc,
    iso8601,
    java,
    logcat,
    nginx_error,
    openstack,
    postgres,
    proxifier,
    python_logging,
    rfc3164,
    rfc5424,
    spark,
    windows_cbs,
)

_REST_GROUP = re.compile(r"\(\?P<(\w+)>\.\*\)(\)*)$")  # a last group taking the rest of the line
_JSON_OBJECT = r"^\{.*\}\s*$"  # json_object: `{` first, `}` last but blanks


@dataclass(frozen=True)
class Shape:
    """How the vectorised reader reads one format's lines (see the module docstring)."""

    pattern: str
    time: str  # "iso": group stamp read as datetime.fromisoformat (after `/` read as `-` in "slashed");
    # "syslog": month name..second, no year; "monthday": month..second in digits, no year unless `year`,
    # `fraction` (µs digits) or `millis`; "century": yy..second (with_century), `millis`; "access": stamp
    # `dd/Mon/yyyy:HH:MM:SS +zzzz`; "apache"; "healthapp"; "postgres": stamp and zone; "epoch": number
    # (base.epoch_stamp); "seconds": 10-digit `epoch` (cfdr: its `fraction` where `second` agrees)
    levels: tuple[str, ...] = ()
    level_table: str = "word"  # "word": base.level_of after `level_words`; "table": `level_words` only;
    # "syslog": PRI, else the message's first word; "pri": PRI's severity; "error": levels[0] a regex on
    # the message that makes it ERROR
    level_words: tuple[tuple[str, str], ...] = ()
    instance_fields: tuple[str, ...] = ()
    nil: str = ""  # an instance field of this value is absent (rfc5424's `-`)
    message: str | tuple[str, ...] = "message"  # the first present of these groups, else ""
    strip: bool = False  # the message is stripped
    after: str = ""  # "leading_level": the rest of the line after the match (`rest_`) is read by
    # leading_level after a blank or at the line end; "epoch": after `,;|` are taken off its front
    derived: str = ""  # "status": an access log's status gives the level, marked derived
    required: tuple[str, ...] = ()  # groups a line must have for the shape to read it (else Python)
    unsure: str = ""  # a regex: a line it finds is left to Python
    sniff: tuple[str, ...] = ()  # regexes a line must all match where the format is not the first tried
    # (its `sniff`, where the pattern does not imply it)
    branches: tuple[str, ...] = ()  # `pattern` split at its alternation (`_branches`): a line is read by the
    # first branch that matches it (fewer groups per regex: faster), each branch is a whole pattern


def _lead(pattern: str) -> str:
    return f"^(?:{pattern})"


def _branches(pattern: str, opening: str) -> tuple[str, ...]:
    """`pattern` once per alternative of its group opened by the first `opening` (which ends in `(?:`), in
    order. The alternation takes the first alternative that matches after what comes before the group,
    so a line is read by the first branch that matches it where that prefix can match only one way before
    the group (java: a stamp, then a blank it cannot hold)."""
    start = pattern.index(opening) + len(opening)
    depth, index, alternatives, last = 0, start, [], start
    while depth >= 0:
        char = pattern[index]
        if char in "()":
            depth += 1 if char == "(" else -1
        if char == "|" and depth == 0 or depth < 0:
            alternatives.append(pattern[last:index])
            last = index + 1
        index = token_end(pattern, index)
    head, tail = pattern[:start], pattern[index:]
    return tuple(_lead(head + alternative + ")" + tail) for alternative in alternatives)


def token_end(pattern: str, index: int) -> int:
    """The index after the regex token at `index`: an escape, a class (`]` first, after `^`, is itself;
    `(`, `)` and `|` in it are literal) or one character."""
    if pattern[index] == "\\":
        return index + 2
    if pattern[index] != "[":
        return index + 1
    index += 1 + (pattern[index + 1] == "^")
    index += pattern[index] == "]"
    while pattern[index] != "]":
        index += 2 if pattern[index] == "\\" else 1
    return index + 1


@cache
def split_rest(pattern: str) -> tuple[str, str] | None:
    """(`pattern` without its last group, the group's name) where the pattern ends by taking the rest of
    the line into a group `(?P<name>.*)` that every match passes through (no `|` in a group around it nor
    at the top level): that group is then the line after the shorter pattern's match (a line holds no
    line end, so `.*` takes all of it; both engines are leftmost-first, and `.*` matches whatever is
    left, so the shorter pattern matches the same way). None where the pattern ends otherwise. Matching
    the shorter pattern is faster: a capture over `.*` walks the rest of the line (iso8601: 4x)."""
    found = _REST_GROUP.search(pattern)
    if found is None:
        return None
    alternated, index = [False], 0
    while index < found.start():
        char = pattern[index]
        if char == "(":
            alternated.append(False)
        elif char == ")":
            alternated.pop()
        elif char == "|":
            alternated[-1] = True
        index = token_end(pattern, index)
    return None if any(alternated) else (pattern[: found.start()] + found.group(2), found.group(1))


LEADS: dict[str, str] = {
    "container_json": _JSON_OBJECT,
    "cri": _lead(cri._LINE.pattern),
    "json": _JSON_OBJECT,
    "rfc5424": _lead(rfc5424._LINE.pattern),
    "rfc3164": _lead(rfc3164._LINE.pattern),
    "cfdr": _lead(cfdr._LINE.pattern),
    "apache_error": _lead(apache_error._LINE.pattern),
    "nginx_error": _lead(nginx_error._LINE.pattern),
    "access_log": _lead(access_log._LINE.pattern),
    "glog": _lead(glog._LINE.pattern),
    "hdfs": _lead(hdfs._LINE.pattern),
    "spark": _lead(spark._LINE.pattern),
    "logcat": _lead(logcat._LINE.pattern),
    "healthapp": _lead(healthapp._LINE.pattern),
    "openstack": _lead(openstack._LINE.pattern),
    "postgres": _lead(postgres._LINE.pattern),
    "java": _lead(java._LINE.pattern),
    "python": _lead(python_logging._LINE.pattern),
    "windows_cbs": _lead(windows_cbs._LINE.pattern),
    "hpc": _lead(hpc._LINE.pattern),
    "proxifier": _lead(proxifier._LINE.pattern),
    "logfmt": r"^[A-Za-z_@][\w.@-]*=",  # _pairs: the pairs cover the line, the first starts it
    "iso8601": _lead(iso8601._LINE.pattern),
    "epoch": r"^\[?\d{10}",  # its regex without the look-ahead after the number
}

SHAPES: dict[str, Shape] = {
    "iso8601": Shape(_lead(iso8601._LINE.pattern) + "(?P<rest_>.*)", "iso", after="leading_level"),
    "java": Shape(
        _lead(java._LINE.pattern),
        "iso",
        levels=("zk_level", "lb_level", "l4_level", "sb_level"),
        instance_fields=("zk_thread", "lb_thread", "l4_thread", "sb_thread"),
        branches=_branches(java._LINE.pattern, " (?:"),
    ),
    "python": Shape(_lead(python_logging._LINE.pattern), "iso", levels=("level", "bare")),
    "rfc3164": Shape(
        _lead(rfc3164._LINE.pattern), "syslog", levels=("pri",), level_table="syslog", instance_fields=("host",)
    ),
    "access_log": Shape(
        _lead(access_log._LINE.pattern), "access", levels=("status",), message="rest", derived="status"
    ),
    "rfc5424": Shape(
        _lead(rfc5424._LINE.pattern), "iso", levels=("pri",), level_table="pri", instance_fields=("host",), nil="-"
    ),
    "nginx_error": Shape(_lead(nginx_error._LINE.pattern), "slashed", levels=("level",), unsure=", host: "),
    "apache_error": Shape(_lead(apache_error._LINE.pattern), "apache", levels=("level",)),
    "glog": Shape(
        _lead(glog._LINE.pattern),
        "monthday",
        levels=("level",),
        level_table="table",
        level_words=tuple(glog._LEVELS.items()),
        instance_fields=("thread",),
    ),
    "openstack": Shape(_lead(openstack._LINE.pattern), "iso", levels=("level",), level_words=(("AUDIT", "INFO"),)),
    "postgres": Shape(
        _lead(postgres._LINE.pattern),
        "postgres",
        levels=("severity",),
        level_table="table",
        level_words=tuple(postgres._LEVELS.items()),
        strip=True,
        sniff=(r"^\d", r"^.{0,46}\] ", r"^.{0,38} \["),  # a digit first, `] ` in 48 characters, ` [` in 40
    ),
    # epoch's regex with its look-ahead read as the first character of the rest (no other way through the
    # number matches when it does: the characters after those ways are digits, `.` or `]`)
    "epoch": Shape("^" + epoch._LINE.pattern.replace(r"(?=[\s,;|])", r"(?P<rest_>[\s,;|].*)$"), "epoch", after="epoch"),
    "hdfs": Shape(_lead(hdfs._LINE.pattern), "century", levels=("level",)),
    "spark": Shape(_lead(spark._LINE.pattern), "century", levels=("level",)),
    "logcat": Shape(
        _lead(logcat._LINE.pattern),
        "monthday",
        levels=("level", "time_level"),
        level_table="table",
        level_words=tuple(logcat._LEVELS.items()),
    ),
    "healthapp": Shape(_lead(healthapp._LINE.pattern), "healthapp"),
    "cfdr": Shape(
        _lead(cfdr._LINE.pattern),
        "seconds",
        levels=("level",),
        level_table="table",
        level_words=tuple(cfdr._LEVELS.items()),
        instance_fields=("node",),
        message=("bgl_message",),
        required=("level",),
    ),
    "hpc": Shape(_lead(hpc._LINE.pattern), "seconds", instance_fields=("node",)),
    "windows_cbs": Shape(_lead(windows_cbs._LINE.pattern), "iso", levels=("level",)),
    "proxifier": Shape(_lead(proxifier._LINE.pattern), "monthday", levels=("(?:^| )error : ",), level_table="error"),
}
if "(?P<rest_>" not in SHAPES["epoch"].pattern:
    raise ValueError("epoch's look-ahead moved: its shape no longer reads its lines")
