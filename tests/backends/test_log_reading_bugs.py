"""Three found faults of the per-line log reading (evcli/backends/logformats/base.py, _keys.py,
evcli/backends/logtable.py), each on real files read by both readers: the reference
(logtable.reference_table) and the vectorised one (logcolumns.read_table) give the same table.

  - a level word is a whole word: `WARNING: disk almost full` is WARN with `disk almost full`, and
    `WARNINGS` (no level word) gives no level;
  - a JSON level (or time) that is a number no level (time) can be, NaN, Infinity or one too large
    for a float, is none: the line is read, never raises;
  - a line cut at the longest line where the kept part ends in "\\r" (a CRLF file) stays one line:
    line numbers follow `grep -n`."""

from __future__ import annotations

import subprocess
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from evcli.backends.base import LEVELS, LogQuery
from evcli.backends.logformats import ParseContext, format_named
from evcli.backends.logformats.base import leading_level
from evcli.backends.logtable import LogTable
from evcli.backends.snapshot import SnapshotBackend
from evcli.core import files
from tests.backends.test_log_columns import assert_same

BERLIN = ZoneInfo("Europe/Berlin")
CLOCK = datetime(2026, 7, 9, tzinfo=UTC)
CONTEXT = ParseContext(CLOCK, BERLIN)


def read_both(path: Path) -> LogTable:
    """The table of `path`, after checking that the vectorised reader gives the reference's."""
    return assert_same(path, CONTEXT)


def levels_and_templates(table: LogTable) -> list[tuple[str | None, str]]:
    codes = zip(table.level.tolist(), table.template.tolist(), strict=True)
    return [(LEVELS[level] if level >= 0 else None, table.templates[template]) for level, template in codes]


# --- 1. a level word ends at a word boundary -------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("WARNING: disk almost full", ("WARN", "disk almost full")),
        (" WARNING disk almost full", ("WARN", "disk almost full")),
        ("WARN: disk almost full", ("WARN", "disk almost full")),
        ("ERROR: write failed", ("ERROR", "write failed")),
        ("ERR: write failed", ("ERROR", "write failed")),
        ("CRITICAL: on fire", ("FATAL", "on fire")),
        ("CRIT | on fire", ("FATAL", "on fire")),
        ("INFORMATION: started", ("INFO", "started")),
        ("INFORMATIONAL started", ("INFO", "started")),
        ("EMERGENCY: halt", ("FATAL", "halt")),
        ("NOTICE: rotated", ("INFO", "rotated")),
        ("DEBUG cache miss", ("DEBUG", "cache miss")),
        ("FATAL", ("FATAL", "")),
        ("[Warning] disk almost full", ("WARN", "disk almost full")),
        # words that begin with a level word but are none
        ("WARNINGS: 3 emitted", (None, "WARNINGS: 3 emitted")),
        ("ERRORS in batch 7", (None, "ERRORS in batch 7")),
        ("INFOS: none", (None, "INFOS: none")),
        ("CRITERIA met", (None, "CRITERIA met")),
        ("ERR_CONNECTION_REFUSED from upstream", (None, "ERR_CONNECTION_REFUSED from upstream")),
        ("DEBUGGER attached", (None, "DEBUGGER attached")),
        ("TRACEID abc", (None, "TRACEID abc")),
        ("PANICKED: worker 3", (None, "PANICKED: worker 3")),
    ],
)
def test_a_level_word_in_first_position_is_a_whole_word(text, expected):
    assert leading_level(text) == expected


# one line per rule that reads a level after a timestamp: ISO 8601, epoch, and a container's inner line
LEVEL_LINES = [
    "2026-07-08 10:00:00 WARNING: disk almost full",
    "2026-07-08 10:00:01 WARNINGS: 3 emitted",
    "2026-07-08 10:00:02 CRITICAL: on fire",
    "2026-07-08 10:00:03 INFORMATION: started",
    "2026-07-08 10:00:04 ERRORS in batch",
    "2026-07-08 10:00:05 EMERGENCY: halt",
    "2026-07-08 10:00:06 INFO: plain",
]
LEVELS_READ = [
    ("WARN", "disk almost full"),
    (None, "WARNINGS: <*> emitted"),
    ("FATAL", "on fire"),
    ("INFO", "started"),
    (None, "ERRORS in batch"),
    ("FATAL", "halt"),
    ("INFO", "plain"),
]


def test_level_words_of_iso_lines_in_both_readers(tmp_path):
    path = tmp_path / "app.log"
    path.write_text("\n".join(LEVEL_LINES * 30) + "\n")  # enough lines that the vector path reads them
    table = read_both(path)
    assert table.format == "iso8601"
    assert levels_and_templates(table) == LEVELS_READ * 30


def test_level_words_of_epoch_and_container_lines_in_both_readers(tmp_path):
    epoch = tmp_path / "epoch.log"
    epoch.write_text("".join(f"17835000{index:02d} {line[20:]}\n" for index, line in enumerate(LEVEL_LINES * 10)))
    table = read_both(epoch)
    assert table.format == "epoch" and levels_and_templates(table) == LEVELS_READ * 10
    cri = tmp_path / "cri.log"  # the inner lines have no timestamp: no format reads them, leading_level does
    cri.write_text("".join(f"2026-07-08T10:00:00.5Z stdout F {line[20:]}\n" for line in LEVEL_LINES * 10))
    table = read_both(cri)
    assert table.format == "cri" and levels_and_templates(table) == LEVELS_READ * 10


# --- 2. a JSON level or time that is no number a level or time can be -----------------------------------


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity", "1e400", "1" + "0" * 400])
def test_a_json_level_that_is_no_finite_number_is_no_level(value):
    parsed = format_named("json").parse(f'{{"ts":"2026-07-08T10:00:00Z","level":{value},"msg":"m"}}', CONTEXT)
    assert parsed is not None and (parsed.level, parsed.message) == (None, "m")
    assert parsed.timestamp == datetime(2026, 7, 8, 10, tzinfo=UTC)


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity", "1e400", "1" + "0" * 400])
def test_a_json_time_that_is_no_finite_number_is_no_time(value):
    parsed = format_named("json").parse(f'{{"ts":{value},"level":"error","msg":"m"}}', CONTEXT)
    assert parsed is not None and (parsed.timestamp, parsed.level, parsed.message) == (None, "ERROR", "m")
    wrapped = format_named("container_json").parse(f'{{"log":"x\\n","stream":"stdout","time":{value}}}', CONTEXT)
    assert wrapped is not None and wrapped.timestamp is None


@pytest.mark.parametrize("line", ['{"ts":"²","level":"error","msg":"m"}', "ts=1² level=error msg=m"])
def test_a_time_of_digits_float_does_not_read_is_no_time(line):
    parsed = format_named("json" if line[0] == "{" else "logfmt").parse(line, CONTEXT)
    assert parsed is not None and (parsed.timestamp, parsed.level, parsed.message) == (None, "ERROR", "m")


def test_json_lines_with_non_finite_numbers_in_both_readers(tmp_path):
    odd = ["NaN", "Infinity", "-Infinity", "1e400", "1" + "0" * 400]
    lines = [f'{{"ts":"2026-07-08T10:00:{second:02d}Z","level":"info","msg":"ok {second}"}}' for second in range(40)]
    lines += [f'{{"ts":"2026-07-08T10:01:00Z","level":{value},"msg":"odd level"}}' for value in odd]
    lines += [f'{{"ts":{value},"level":50,"msg":"odd time"}}' for value in odd]
    path = tmp_path / "app.jsonl"
    path.write_text("\n".join(lines) + "\n")
    table = read_both(path)
    assert table.format == "json"
    odd_level, odd_time = slice(40, 45), slice(45, 50)
    assert table.level[odd_level].tolist() == [-1] * 5  # no level; the time is the line's own
    assert set(table.ts[odd_level].tolist()) == {datetime(2026, 7, 8, 10, 1, tzinfo=UTC).timestamp()}
    # no time of their own: they take the previous event's, as lines without one do
    assert table.ts[odd_time].tolist() == [table.ts[44]] * 5
    assert table.level[odd_time].tolist() == [LEVELS.index("ERROR")] * 5


# --- 3. a cut at the longest line that ends in "\r" -------------------------------------------------------


def grep_numbers(path: Path, word: str) -> list[int]:
    found = subprocess.run(["grep", "-n", word, str(path)], capture_output=True, text=True, check=True).stdout
    return [int(line.split(":", 1)[0]) for line in found.splitlines()]


def crlf_lines_cut_at_a_carriage_return(limit: int) -> list[str]:
    """CRLF lines, two of them reaching the longest line (`limit` characters, its line end counted) so that
    the part kept ends in "\\r": one exactly one character short of it (its CRLF ends it: nothing of the
    text is lost), one longer with a lone "\\r" where the cut falls."""
    stamp = "2026-07-08 10:00:{:02d} INFO "
    short = stamp.format(1) + "x" * (limit - 1 - len(stamp.format(1)))  # + "\r" = limit characters
    long = stamp.format(2) + "y" * (limit - 1 - len(stamp.format(2))) + "\r" + "z" * 50
    lines = [stamp.format(0) + "first", short, long, stamp.format(3) + "after the cuts", stamp.format(4) + "last"]
    return [line + "\r\n" for line in lines]


def test_a_cut_ending_in_a_carriage_return_keeps_one_line_per_line_end(tmp_path, monkeypatch):
    monkeypatch.setattr(files, "LIMITS", files.ReadLimits(max_line_chars=64))
    path = tmp_path / "app.log"
    path.write_bytes("".join(crlf_lines_cut_at_a_carriage_return(64)).encode())
    table = read_both(path)
    assert table.lineno.tolist() == [1, 2, 3, 4, 5] and table.lines == 5
    assert grep_numbers(path, "after the cuts") == [4] and "after the cuts" in table.templates[table.template[3]]
    assert table.cut == 2
    assert table.text == {3: "2026-07-08 10:00:02 INFO " + "y" * 38}  # the kept part, its "\r" a line end
    data = path.read_bytes()
    spans = [data[start:end] for start, end in zip(table.start, table.end, strict=True)]
    assert spans == [line.removesuffix(b"\r") for line in data.split(b"\n")[:-1]]


def test_a_query_over_a_crlf_log_cut_at_a_carriage_return_at_the_real_limit(tmp_path):
    """The index of such a file is built (read whole, by the reference) and numbers lines as grep does."""
    (tmp_path / "logs").mkdir()
    (tmp_path / "env.toml").write_text('now = "2026-07-09T00:00:00Z"\ntimezone = "UTC"\n')
    path = tmp_path / "logs" / "pay.log"
    path.write_bytes("".join(crlf_lines_cut_at_a_carriage_return(files.LIMITS.max_line_chars)).encode())
    found = SnapshotBackend(tmp_path).query_logs(LogQuery("pay", ("after the cuts",), None, None, 10))
    assert found.total == 1
    assert found.logs[0]["source"]["line"] == grep_numbers(path, "after the cuts")[0] == 4
