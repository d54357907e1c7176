"""The persistent per-file log index (evcli/backends/logindex.py) through SnapshotBackend.query_logs:
built once, reused, rebuilt on change or damage, safe under concurrent builders, stopped by the
deadline, holding the rows the per-line reading gives and no secret, and the issue 9 semantics of its
results (range, unleveled lines, stats, patterns, provenance)."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import polars as pl
import pytest

from evcli.backends import logcolumns, logindex, logstore
from evcli.backends.base import LogQuery
from evcli.backends.logrows import mask
from evcli.backends.logtable import reference_table
from evcli.backends.snapshot import SnapshotBackend
from evcli.core.files import Deadline, DeadlineExceeded, deadline_scope
from evcli.core.paths import index_home
from evcli.core.time import TimeRange

ENV = 'now = "2026-07-08T23:10:00Z"\ntimezone = "Asia/Shanghai"\n'
# local times (+08:00): 06:50 .. 07:09 on 2026-07-09
LOG = (
    "2026-07-09 06:50:00.000 ERROR [pay-1] c.e.Pay - timeout after 3000ms to 10.0.0.7:6379 order ORD-1\n"
    "2026-07-09 06:55:00.000 INFO [pay-1] c.e.Pay - GET /api/v1/orders/42 status=200\n"
    "2026-07-09 06:58:00 no level on this line, timeout again\n"
    "java.lang.IllegalStateException: pool closed\n"
    "\tat com.example.Pool.get(Pool.java:12)\n"
    "\n"
    "2026-07-09 07:01:00.000 ERROR [pay-2] c.e.Pay - timeout after 5000ms to 10.0.0.8:6379 order ORD-2\n"
    "2026-07-09 07:05:00.000 WARN [pay-2] c.e.Pay - slow call id=550e8400-e29b-41d4-a716-446655440000\n"
    "2026-07-09 07:09:00.000 ERROR [pay-2] c.e.Pay - timeout after 1200ms to 10.0.0.9:6379 order ORD-3\n"
)


def snapshot(tmp_path: Path, text: str = LOG) -> SnapshotBackend:
    (tmp_path / "logs").mkdir(parents=True, exist_ok=True)
    (tmp_path / "env.toml").write_text(ENV)
    (tmp_path / "logs" / "pay.log").write_text(text)
    return SnapshotBackend(tmp_path)


def query(snap: SnapshotBackend, *keywords: str, level=None, strict=False, since=None, until=None, limit=50):
    named = None if since is None and until is None else TimeRange(since, until)
    return snap.query_logs(LogQuery("pay", keywords, level, None, limit, range=named, level_strict=strict))


def stores(home: Path) -> list[Path]:
    return sorted(home.glob(f"*{logindex.SUFFIX}"))


def builds(home: Path) -> list[tuple[str, str]]:
    """(file name, build id) of every log index in `home`, from each store's metadata."""
    return [
        (store.name, json.loads(pl.read_parquet_metadata(store)[logstore.META_KEY])["build"]["id"])
        for store in stores(home)
    ]


def stored_rows(indexed: logindex.IndexedFile) -> tuple[list[tuple], dict[int, str], dict[int, str]]:
    """The rows an index holds (as LogTable.rows gives them), its line texts and its unescaped texts."""
    with logstore.open_store(indexed.store, indexed.log, indexed.root) as stored:
        columns = {name: stored.column(name) for name in ("lineno", "ts", "level", "derived", "template")}
        instances, records = stored.column("instance"), stored.column("record")
        templates, names = stored.side("templates"), stored.side("instances")
        rows = [
            (
                int(columns["lineno"][row]),
                None if columns["ts"][row] != columns["ts"][row] else float(columns["ts"][row]),
                None if columns["level"][row] < 0 else int(columns["level"][row]),
                bool(columns["derived"][row]),
                templates[columns["template"][row]],
                "" if instances[row] < 0 else names[instances[row]],
                int(records[row]),
            )
            for row in range(stored.rows)
        ]
        unescaped = dict(zip(stored.side("unescaped_lineno"), stored.side("unescaped"), strict=True))
        return rows, stored.texts(), unescaped


def test_index_is_built_once_and_reused_while_the_file_is_unchanged(tmp_path):
    snap = snapshot(tmp_path)
    first = query(snap, "timeout")
    after_first = builds(index_home())
    assert len(after_first) == 1
    second = query(SnapshotBackend(tmp_path), "timeout", level="ERROR")  # a new backend, the same index
    assert builds(index_home()) == after_first
    assert (first.total, second.total) == (4, 4)  # ERROR keeps the unleveled "timeout again" line


def test_index_is_rebuilt_when_the_file_changes(tmp_path):
    snap = snapshot(tmp_path)
    assert query(snap, "ORD-4").total == 0
    before = builds(index_home())
    with (tmp_path / "logs" / "pay.log").open("a") as handle:
        handle.write("2026-07-09 07:09:30.000 ERROR [pay-2] c.e.Pay - timeout order ORD-4\n")
    result = query(SnapshotBackend(tmp_path), "ORD-4")
    assert result.total == 1
    after = builds(index_home())
    assert len(after) == 2 and set(before) < set(after)


def test_no_range_is_the_whole_snapshot_and_says_so(tmp_path):
    result = query(snapshot(tmp_path))
    lines = [line for line in LOG.splitlines() if line.strip()]
    assert result.total == len(lines) == 8
    assert result.stats["range_origin"] == "whole snapshot"
    # the whole snapshot ends at its clock (env.toml now, 07:10 local), not at the last line (07:09)
    assert result.stats["range"] == result.searched_range == "2026-07-09T06:50:00+08:00..2026-07-09T07:10:00+08:00"


def test_since_until_in_another_zone_select_the_local_lines(tmp_path):
    utc = UTC
    since = datetime(2026, 7, 8, 22, 58, tzinfo=utc)  # 06:58 +08:00
    until = datetime(2026, 7, 9, 7, 5, tzinfo=timezone(timedelta(hours=8)))
    result = query(snapshot(tmp_path), since=since, until=until)
    assert [entry["source"]["line"] for entry in result.logs] == [3, 4, 5, 7, 8]
    assert result.stats["range_origin"] == "question/call"
    assert result.searched_range == "2026-07-09T06:58:00+08:00..2026-07-09T07:05:00+08:00"
    assert result.logs[0]["timestamp"] == "2026-07-09T06:58:00.000+08:00"


def test_level_keeps_unleveled_lines_unless_strict(tmp_path):
    snap = snapshot(tmp_path)
    loose = query(snap, "timeout", level="ERROR")
    strict = query(snap, "timeout", level="ERROR", strict=True)
    assert [entry["level"] for entry in loose.logs] == ["ERROR", None, "ERROR", "ERROR"]
    assert [entry["level"] for entry in strict.logs] == ["ERROR", "ERROR", "ERROR"]
    assert loose.stats["by_level"] == {"ERROR": 3, "none": 1}
    assert strict.stats["by_level"] == {"ERROR": 3, "none": 0}
    assert "1 without a level" in loose.message


def test_a_number_keyword_matches_whole_numbers_only(tmp_path):
    """ "500" is a status, not the 500 of "len: 1500" or "time: 0.500" (OpenStack WSGI lines)."""
    text = (
        '2017-05-16 00:00:01.000 1 INFO wsgi [req-1 - - - - -] 10.11.10.1 "GET /v2/x HTTP/1.1" status: 500 len: 12 time: 0.1\n'
        '2017-05-16 00:00:02.000 1 INFO wsgi [req-2 - - - - -] 10.11.10.1 "GET /v2/x HTTP/1.1" status: 200 len: 1500 time: 0.5\n'
        '2017-05-16 00:00:03.000 1 INFO wsgi [req-3 - - - - -] 10.11.10.1 "GET /v2/x HTTP/1.1" status: 200 len: 12 time: 0.500\n'
        "2017-05-16 00:00:04.000 1 ERROR wsgi [req-4 - - - - -] upstream answered 500\n"
        "2017-05-16 00:00:05.000 1 ERROR wsgi [req-5 - - - - -] 500 errors in a row; 5000 requests\n"
    )
    snap = snapshot(tmp_path, text)
    found = query(snap, "500")
    assert found.total == 3
    assert [item["source"]["line"] for item in found.logs] == [1, 4, 5]
    assert query(snap, "5000").total == 1 and query(snap, "0.500").total == 1  # not digits alone: as written
    assert query(snap, "status: 500").total == 1


def test_stats_match_a_hand_count(tmp_path):
    snap = snapshot(tmp_path)
    result = query(snap, "Timeout")
    by_hand = [number for number, line in enumerate(LOG.splitlines(), 1) if "timeout" in line.lower()]
    assert result.stats["total"] == result.total == len(by_hand) == 4
    assert [entry["source"]["line"] for entry in result.logs] == by_hand
    assert result.stats["by_source"] == {"logs/pay.log": 4}
    assert (result.stats["first"], result.stats["last"]) == (
        "2026-07-09T06:50:00.000+08:00",
        "2026-07-09T07:09:00.000+08:00",
    )
    capped = query(snap, "timeout", limit=1)
    assert (capped.total, capped.stats["total"], len(capped.logs), capped.truncated) == (4, 4, 1, True)


def test_template_masking_token_by_token_equals_the_whole_message_regex():
    from evcli.backends.logrows import _VARIABLE

    messages = [
        "  two  spaces\tand a tab 10.0.0.7:6379\tx1 ",
        "deadbeef-dead-beef-dead-beefdeadbeef path /var/log/app1/x.log and /tmp/y",
        "c.e.Service - order ORD-280110 took 141ms 0x1f .5 a.b.c-9 -x- [app-3]",
        "",
        " ",
    ]
    for message in messages:
        assert mask(message) == _VARIABLE.sub("<*>", message), message


def test_templates_remembered_by_digit_shape_equal_the_regex_for_every_message():
    from evcli.backends.logrows import _VARIABLE

    # same shape once digits read as 1: the first one's template must not be reused wrongly
    messages = [
        "order ORD-280110 took 141ms",
        "order ORD-999999 took 999ms",
        "pool 0x1f.log full",  # `0x`: the hex rule, not the token rule
        "pool 5x1f.log full",
        "ip 10.0.0.7:6379 and 1.2.3",
        "ip 99.9.9.9:1111 and 9.9.9",
        'quoted "id 12" and 34',
        'quoted "id 56" and 78',
        "١٢٣ Arabic-Indic digits 42",  # \d matches them too; their bytes are not translated
        "٤٥٦ Arabic-Indic digits 42",
        "lone surrogate \ud800 7",
    ]
    for message in [*messages, *messages]:  # the second round reads the remembered templates
        assert mask(message) == _VARIABLE.sub("<*>", message), message


def test_no_corpus_secret_reaches_the_index(tmp_path):
    from tests.adversarial.secrets_corpus import PEM_BLOCK_LINES, SECRETS, leaked

    lines = [
        f"2026-07-09 06:50:{n % 60:02d}.000 ERROR [pay-1] c.e.Pay - {entry.line}" for n, entry in enumerate(SECRETS)
    ]
    snap = snapshot(tmp_path, "\n".join([*lines, *PEM_BLOCK_LINES, LOG]))
    found = query(snap, limit=len(lines) + len(PEM_BLOCK_LINES) + 8)
    assert found.total == len(SECRETS) + len(PEM_BLOCK_LINES) + 8
    [store] = stores(index_home())
    frame = pl.read_parquet(store)  # every column, decompressed, and the metadata
    dump = "\n".join(str(value) for column in frame.columns for value in frame[column].to_list())
    dump += json.dumps(pl.read_parquet_metadata(store))
    assert "***" in dump  # the masked text of the lines masking changed is stored: the dump is no empty one
    assert not leaked(dump)
    assert not leaked(store.read_bytes().decode("latin-1"))
    # the results read the log's bytes, but a masked line's stored text only
    assert not leaked(json.dumps([found.logs, found.patterns], ensure_ascii=False))
    assert not query(snap, SECRETS[0].secret.lower()).total


def test_patterns_mask_variable_parts_and_count(tmp_path):
    assert mask('timeout after 3000ms to 10.0.0.7:6379 order ORD-1 "k"') == "timeout after <*> to <*> order <*> <*>"
    assert mask("id=550e8400-e29b-41d4-a716-446655440000 at /data/x1/y") == "id=<*> at <*>"
    result = query(snapshot(tmp_path), "timeout after")
    assert result.patterns == [
        {
            "template": "c.e.Pay - timeout after <*> to <*> order <*>",
            "count": 3,
            "first": "2026-07-09T06:50:00.000+08:00",
            "last": "2026-07-09T07:09:00.000+08:00",
            "example": LOG.splitlines()[-1],
            "level": "ERROR",
            "starts_record": True,
        }
    ]


def test_a_pattern_says_its_level_and_whether_its_example_starts_a_record(tmp_path):
    """A traceback's exception and frame lines repeat as often as the line above them: their patterns say
    they continue a record (what "the most common errors" must not list as errors of their own)."""
    snap = snapshot(tmp_path)
    patterns = {pattern["template"]: pattern for pattern in query(snap, level="DEBUG").patterns}  # filtered rows
    exception = patterns["java.lang.IllegalStateException: pool closed"]
    assert (exception["starts_record"], exception["level"]) == (False, None)
    assert patterns["no level on this line, timeout again"]["starts_record"] is True
    assert patterns["c.e.Pay - slow call id=<*>"]["level"] == "WARN"
    # the same over the whole file without keywords
    whole = {pattern["template"]: pattern for pattern in query(snap).patterns}
    assert whole["java.lang.IllegalStateException: pool closed"]["starts_record"] is False
    assert whole["c.e.Pay - slow call id=<*>"]["starts_record"] is True


def test_provenance_points_at_the_exact_line_and_digests_are_sha256(tmp_path):
    snap = snapshot(tmp_path)
    result = query(snap)
    file_lines = (tmp_path / "logs" / "pay.log").read_text().splitlines()
    for entry in result.logs:
        assert entry["source"]["path"] == "logs/pay.log"
        assert file_lines[entry["source"]["line"] - 1] == entry["line"]
    trace = next(entry for entry in result.logs if entry["line"].startswith("\tat "))
    assert (trace["timestamp"], trace["level"]) == ("2026-07-09T06:58:00.000+08:00", None)
    expected = hashlib.sha256((tmp_path / "logs" / "pay.log").read_bytes()).hexdigest()
    assert result.digests == {"logs/pay.log": f"sha256:{expected}"}


BUILD = """
import sys
from evcli.backends.base import LogQuery
from evcli.backends.snapshot import SnapshotBackend
result = SnapshotBackend(sys.argv[1]).query_logs(LogQuery("pay", ("timeout",), None))
print(result.total, result.stats["by_level"])
"""


def test_two_processes_indexing_the_same_file_both_get_a_whole_index(tmp_path, evcli_home):
    lines = "".join(
        f"2026-07-09 06:{index // 60 % 60:02d}:{index % 60:02d} ERROR [p] c.e.X - timeout n={index}\n"
        for index in range(30_000)
    )
    snapshot(tmp_path / "env", lines)
    processes = [
        subprocess.Popen([sys.executable, "-c", BUILD, str(tmp_path / "env")], stdout=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    outputs = [process.communicate(timeout=60)[0].strip() for process in processes]
    assert [process.returncode for process in processes] == [0, 0]
    assert outputs == ["30000 {'ERROR': 30000, 'none': 0}"] * 2
    assert len(builds(evcli_home / "logindex")) == 1
    assert not list((evcli_home / "logindex").glob(".building-*"))


def test_deadline_stops_indexing_and_leaves_no_index(tmp_path, evcli_home):
    snap = snapshot(tmp_path, LOG * 2000)
    with deadline_scope(Deadline(0.0)), pytest.raises(DeadlineExceeded):
        query(snap, "timeout")
    home = evcli_home / "logindex"
    assert not stores(home) and not list(home.glob(".building-*"))
    assert query(snap, "timeout").total == 8000  # without a deadline the next call builds it


def test_a_deadline_passing_while_the_file_is_read_keeps_no_index(tmp_path, evcli_home, monkeypatch):
    read_windows = logcolumns.read_windows

    def slow(*args, **kwargs):
        time.sleep(0.5)  # the deadline passes while the file is read
        return read_windows(*args, **kwargs)

    monkeypatch.setattr(logcolumns, "read_windows", slow)
    snap = snapshot(tmp_path, LOG * 2000)
    with deadline_scope(Deadline(0.3)), pytest.raises(DeadlineExceeded):
        query(snap, "timeout")
    home = evcli_home / "logindex"
    assert not stores(home) and not list(home.glob(".building-*"))


def test_deadline_stops_a_keyword_query_over_a_built_index(tmp_path):
    snap = snapshot(tmp_path, LOG * 2000)
    assert query(snap, "timeout").total == 8000  # built, no deadline
    with deadline_scope(Deadline(0.0)), pytest.raises(DeadlineExceeded):
        query(SnapshotBackend(tmp_path), "timeout")


TRACE = "\tat com.example.Pool.get(Pool.java:12)\n" * 200
UNTIMED = "an untimed line of its own\n\tat a frame that joins it\n" * 150
KEY = (
    "-----BEGIN RSA PRIVATE KEY-----\n"
    + "MIIEowIBAAKCAQEA7bq98rVq3nWsecretsecretsecret\n" * 150
    + "-----END RSA PRIVATE KEY-----\n"
)
ESCAPED = '{"ts": "2026-07-09T06:54:00Z", "level": "error", "msg": "\\u8fde\\u63a5\\u6c60 timeout"}\n'


@pytest.mark.parametrize(
    "text",
    [
        "no timestamp before the first event\n" + (LOG + TRACE) * 4 + "\n",
        UNTIMED + "\tat a frame\n" * 3 + UNTIMED + (LOG + TRACE) * 2,  # untimed lines before any timestamp
        LOG * 50 + KEY + LOG * 50,  # a private key block amid the lines: masked whole
        LOG + ESCAPED + "2026-07-09 07:09:30.000 ERROR [pay-2] c.e.Pay - Authorization: Bearer abcdef0123456789abcd\n",
    ],
)
def test_an_index_holds_the_rows_the_per_line_reading_gives(tmp_path, text):
    """The store built by open_index keeps every row as the per-line reading (logtable.reference_table) gives it
    (ts, level and record inherited by the lines without a timestamp, templates, instances), the text of the
    lines masking changed and the unescaped text of JSON lines, and its build record counts the same."""
    snap = snapshot(tmp_path, text)
    path = tmp_path / "logs" / "pay.log"
    context = snap.parse_context(path)
    indexed = logindex.open_index(path, tmp_path, context, tmp_path / "home")
    expected = reference_table(path, tmp_path, context)
    assert stored_rows(indexed) == (expected.rows(), expected.text, expected.unescaped)
    timed = [row[1] for row in expected.rows() if row[1] is not None]
    assert (indexed.lines, indexed.first, indexed.last) == (len(expected.lineno), min(timed), max(timed))
    assert (indexed.format, indexed.cut, indexed.built) == (expected.format, expected.cut, True)
    assert not [name for name in (tmp_path / "home").iterdir() if name.name.startswith(".")]  # no temporary left


@pytest.mark.parametrize(("level", "strict"), [(None, False), ("WARN", False), ("ERROR", True)])
def test_whole_file_counts_equal_those_of_a_range_over_every_row(tmp_path, level, strict):
    snap = snapshot(tmp_path, LOG * 3)  # every line after the first timestamp: a range over all is the same set
    whole = query(snap, level=level, strict=strict, limit=5)
    early, late = datetime(2020, 1, 1, tzinfo=UTC), datetime(2030, 1, 1, tzinfo=UTC)
    ranged = query(snap, level=level, strict=strict, limit=5, since=early, until=late)
    assert whole.stats["range_origin"] != ranged.stats["range_origin"]
    assert (
        whole.total,
        whole.stats["records"],
        whole.stats["by_level"],
        whole.stats["first"],
        whole.stats["last"],
    ) == (
        ranged.total,
        ranged.stats["records"],
        ranged.stats["by_level"],
        ranged.stats["first"],
        ranged.stats["last"],
    )
    assert sorted(map(str, whole.patterns)) == sorted(map(str, ranged.patterns))
    assert whole.logs == ranged.logs


def test_keywords_match_literally_and_ignore_ascii_case(tmp_path):
    snap = snapshot(tmp_path, LOG + "2026-07-09 07:09:40.000 WARN [pay-2] c.e.Pay - disk 91% full on data_1\n")
    totals = [query(snap, keyword).total for keyword in ("%", "_", "1%", "a_1", "TIMEOUT", "c.e.pay")]
    assert totals == [1, 1, 1, 1, 4, 6]


JAVA_TRACE = (
    "2026-07-09 07:00:00.000 ERROR [pay-1] c.e.Pay - charge failed for ORD-9\n"
    "java.lang.IllegalStateException: pool exhausted\n"
    "\tat com.example.Pool.get(Pool.java:12)\n"
    "Caused by: java.net.SocketTimeoutException: connect timed out\n"
    "\t... 12 more\n"
    "2026-07-09 07:00:01.000 INFO [pay-1] c.e.Pay - retry scheduled\n"
    "  free text the app wrote on a line of its own\n"
    "\n"
    "2026-07-09 07:00:02.000 ERROR [pay-1] c.e.Pay - charge failed for ORD-10\n"
    "Traceback (most recent call last):\n"
    '  File "/app/pay.py", line 7, in charge\n'
    "TimeoutError: pool exhausted\n"
)


def _records(store: Path, log: Path, root: Path) -> list[tuple[int, int]]:
    with logstore.open_store(store, log, root) as stored:
        return list(zip(stored.column("lineno").tolist(), stored.column("record").tolist(), strict=True))


def test_lines_without_a_timestamp_belong_to_the_record_of_the_line_before(tmp_path, evcli_home):
    snap = snapshot(tmp_path, "untimed first line\n\tat an orphan frame\nanother untimed line\n" + JAVA_TRACE)
    query(snap)  # builds the index
    (store,) = stores(evcli_home / "logindex")
    heads = [1, 1, 3, *[4] * 5, 9, 9, 12, 12, 12, 12]  # line 11 is blank: no row
    records = _records(store, tmp_path / "logs" / "pay.log", tmp_path)
    assert records == list(zip([*range(1, 11), *range(12, 16)], heads, strict=True))


def test_stats_count_the_records_of_the_matching_lines_and_say_so(tmp_path):
    from evcli.tools.query_logs import stats_text

    snap = snapshot(tmp_path, JAVA_TRACE)
    found = query(snap, "pool")  # the exception and a frame of the first trace, the last line of the second
    assert (found.total, found.stats["records"], len(found.logs)) == (3, 2, 3)
    assert [entry["source"]["line"] for entry in found.logs] == [2, 3, 12]  # refs stay one line each
    assert stats_text(found.stats).startswith("stats: 3 matching lines in 2 records, in 2026-")
    one = query(snap, "retry")
    assert (one.total, one.stats["records"]) == (1, 1)
    assert stats_text(one.stats).startswith("stats: 1 matching line in 2026-")
    errors = query(snap, level="ERROR", strict=True)  # continuation lines carry their head's level
    assert (errors.total, errors.stats["records"]) == (9, 2)


def _docker_json(text: str) -> str:
    """Each line of `text` as Docker's json-file driver writes it, one runtime second apart."""
    lines = [line for line in text.splitlines() if line]
    return "".join(
        json.dumps({"log": line + "\n", "stream": "stdout", "time": f"2026-07-08T23:00:{second:02d}.5Z"}) + "\n"
        for second, line in enumerate(lines)
    )


def test_a_wrapped_file_has_the_levels_records_and_patterns_of_its_inner_lines(tmp_path):
    """A container runtime's file of a Java service: its lines read as the service's own (ERROR heads,
    their stack traces continuing them), not as one level-less record per runtime line."""
    bare = snapshot(tmp_path / "bare", JAVA_TRACE.replace("\n\n", "\n"))
    wrapped = snapshot(tmp_path / "wrapped", _docker_json(JAVA_TRACE))
    for level, strict in ((None, False), ("ERROR", True), ("ERROR", False), ("INFO", True)):
        got, expected = query(wrapped, level=level, strict=strict), query(bare, level=level, strict=strict)
        assert (got.total, got.stats["records"], got.stats["by_level"]) == (
            expected.total,
            expected.stats["records"],
            expected.stats["by_level"],
        ), (level, strict)
        shape = [(p["template"], p["count"], p["level"], p["starts_record"]) for p in got.patterns]
        assert shape == [(p["template"], p["count"], p["level"], p["starts_record"]) for p in expected.patterns]
    errors = query(wrapped, level="ERROR", strict=True)
    assert (errors.total, errors.stats["records"]) == (9, 2)
    bare_errors = query(bare, level="ERROR", strict=True)
    assert [(entry["level"], entry["message"]) for entry in errors.logs] == [
        (entry["level"], entry["message"]) for entry in bare_errors.logs
    ]
    assert errors.logs[2]["message"] == "at com.example.Pool.get(Pool.java:12)"


def test_host_shop_api_session_expired_is_42_lines_in_14_records():
    """`grep` by hand: 14 tracebacks 09:05-09:12 whose head and last two lines hold both words."""
    host = Path(__file__).parents[2] / "evcli" / "envs" / "host"
    snap = SnapshotBackend(host)
    tz = snap.config.timezone
    since, until = datetime(2026, 3, 18, 9, 5, tzinfo=tz), datetime(2026, 3, 18, 9, 12, 59, tzinfo=tz)
    named = TimeRange(since, until)
    found = snap.query_logs(LogQuery("shop-api", ("session", "expired"), None, None, 50, range=named))
    assert (found.total, found.stats["records"]) == (42, 14)


@pytest.mark.parametrize("zone", ["Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "UTC"])
def test_epochs_per_minute_offsets_equal_epoch_across_dst_changes(zone):
    from zoneinfo import ZoneInfo

    from evcli.backends.logrows import Epochs, epoch

    tz = ZoneInfo(zone)
    epochs = Epochs(tz)
    moment = datetime(2025, 1, 1, 0, 0, 7, 123456)
    while moment.year == 2025:  # every DST change of the year, gap and fold hours included
        assert epochs(moment) == epoch(moment, tz), moment
        moment += timedelta(minutes=17, microseconds=1)
    aware = datetime(2025, 3, 30, 1, 30, tzinfo=timezone(timedelta(hours=5)))
    assert epochs(aware) == aware.timestamp()


def test_words_after_a_nul_byte_are_found_and_counted(tmp_path):
    """A NUL is read as U+FFFD, and what follows it is found (a false "no matching lines" is what
    $.no_evidence must never say); the line shown holds no NUL."""
    text = LOG + "2026-07-09 07:10:00.000 FATAL [pay-2] c.e.Pay - fatal\x00 DiskQuotaExceeded on /data\n"
    result = query(snapshot(tmp_path, text), "DiskQuotaExceeded")
    assert result.total == 1 and "DiskQuotaExceeded" in result.logs[0]["line"]
    assert "\x00" not in result.logs[0]["line"]


def test_a_lone_carriage_return_does_not_split_a_line_and_line_numbers_match_grep(tmp_path):
    """Only "\\n" ends a line, as `grep -n` counts: a "\\r" inside a line (and a CRLF ending) keeps the numbers."""
    text = (
        "2026-07-09 06:50:00.000 ERROR [pay-1] c.e.Pay - first\r\n"
        "2026-07-09 06:51:00.000 ERROR [pay-1] c.e.Pay - half one\rhalf two\n"
        "2026-07-09 06:52:00.000 ERROR [pay-1] c.e.Pay - third\n"
    )
    result = query(snapshot(tmp_path, text), "third")
    assert result.logs[0]["source"]["line"] == 3
    halves = query(snapshot(tmp_path, text), "half two")
    assert halves.total == 1 and halves.logs[0]["source"]["line"] == 2


@pytest.mark.parametrize("damage", ["truncated", "emptied", "another file's"])
def test_a_damaged_index_file_is_rebuilt_not_reported_as_a_corrupt_store(tmp_path, damage):
    snap = snapshot(tmp_path)
    assert query(snap, "timeout after").total == 3
    [(name, build)] = builds(index_home())
    store = index_home() / name
    if damage == "another file's":  # a whole store, of another size of file
        other = snapshot(tmp_path / "other", LOG * 2)
        query(other)
        [other_store] = [path for path in stores(index_home()) if path.name != name]
        other_store.replace(store)
    else:
        with store.open("r+b") as handle:
            handle.truncate(store.stat().st_size // 2 if damage == "truncated" else 0)
    assert query(SnapshotBackend(tmp_path), "timeout after").total == 3
    assert [entry for entry in builds(index_home()) if entry[0] == name] != [(name, build)]  # built again
