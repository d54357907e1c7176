"""Counts by address and by path, vectorised (evcli/backends/logcounts.py): exactly the Counter that
`count_addresses` / `count_paths` give over the store's matching lines, for a grid of filters on several
logs (the differential test), including generated lines that put every look-around of the Python regexes
next to every kind of neighbour; and `query_logs`' stats over the packaged environments."""

from __future__ import annotations

import functools
import itertools
import random
import re
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import polars as pl
import pytest

from evcli.backends import logcolumns, logcounts, logstore
from evcli.backends.addresses import PATH_FIELD, REQUEST, SOURCE_NAMED, count_addresses, count_paths, top_counts
from evcli.backends.base import LEVELS, LogQuery
from evcli.backends.logformats import ParseContext
from evcli.backends.logindex import open_index
from evcli.backends.logsearch import Filter, opened
from evcli.backends.snapshot import SnapshotBackend, demo_env_dir
from evcli.backends.spec import PACKAGED_ENVS
from evcli.core.files import Deadline, DeadlineExceeded, deadline_scope

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))  # the bench scripts import each other as top-level modules
from bench_tools import write_mixed_log  # noqa: E402

CONTEXT = ParseContext(datetime(2026, 7, 9, 23, 10, tzinfo=UTC), ZoneInfo("Asia/Shanghai"))
STAMP = "2026-07-09 06:{:02d}:00.000 {} [edge-1] c.e.Gw - "
KNOWN = (
    "Failed password for root from 203.0.113.45 port 47757 ssh2",
    "Accepted publickey for deploy from 10.0.0.9 port 22 ssh2 on 10.0.0.1",
    "pam_unix(sshd:auth): authentication failure; logname= uid=0 euid=0 tty=ssh ruser= rhost=198.51.100.7  user=root",
    "kernel: IN=eth0 OUT= SRC=192.0.2.10 DST=10.1.1.1 LEN=60 PROTO=TCP SPT=51515 DPT=22",
    "kernel: IN=eth0 OUT= SRC=192.0.2.300 DST=10.1.1.1 LEN=60",  # a source that is no address: DST counts
    '2026/07/09 06:50:00 [error] 31#31: *9 upstream timed out, client: 172.16.0.4, server: _, request: "GET '
    '/api/orders/8115?x=1 HTTP/1.1", upstream: "http://10.0.3.8:8080/api/orders/8115"',
    '10.20.30.40 - - [18/Mar/2026:09:21:45 +0100] "POST /api/login HTTP/1.1" 401 43 "-" "Mozilla/5.0 (X11) '
    'AppleWebKit/537.36 Chrome/126.0.0.0 Safari/537.36"',
    '10.20.30.41 - - [18/Mar/2026:09:21:46 +0100] "GET /products/3f2b1c4d-aaaa-bbbb-cccc-0123456789ab/reviews '
    'HTTP/1.1" 200 9',
    '10.20.30.41 - - [18/Mar/2026:09:21:47 +0100] "GET /blobs/0123456789abcdef0123/raw?sig=abc HTTP/2.0" 200 9',
    "openssl 1.1.1.1234 and 256.1.1.1 spark 3.5.1.2.7 on 1.2.3",
    "Receiving block blk_1 src: /10.40.1.35:50010 dest: /10.40.1.36:50010",
    "listening on [::1]:8080 and fe80::1ff:fe23:4567:890a and ::ffff:10.9.8.7",
    "method=GET path=/api/v2/users/42/orders status=200 remote_addr=10.1.2.3 dur=3ms",
    '{"ts": "2026-07-09T06:54:00Z", "level": "warn", "url": "/cart/items/77", "client_ip": "10.7.7.7"}',
    "route=/health uri=/other",
    "client 10.1.1.1 then 10.1.1.1 again, src:10.2.2.2 and src: 10.3.3.3",
    "Verbindung von 10.5.5.5 abgelehnt für Müller from 10.6.6.6",  # not ASCII: read in Python
    "连接 from 10.8.8.8 失败 path=/路径/1",
    "login password=hunter2secret from 10.9.9.9 path=/secret/9",  # masked: its text is in the store
    '{"msg": "\\u8fde\\u63a5 from 10.4.4.4", "path": "/esc/5"}',  # JSON escapes: the unescaped text counts
    "nul\x00byte from 10.3.2.1 path=/nul/\x00x",
    "field\x1cfrom\x1c10.11.11.11 path=/sep\x1c/x",  # Python's \s holds \x1c
    "tabbed from\t10.12.12.12 and CR\rfrom 10.13.13.13",
)
# generated lines join cores (addresses and near misses, sources, requests, path fields) with neighbours
# that each look-around and each `\s`, `\b` or `[^...]` of the Python regexes tells apart
CORES = (
    "1.2.3.4",
    "10.0.0.1",
    "255.255.255.255",
    "256.1.1.1",
    "1.2.3.4.5",
    "01.2.3.4",
    "1.2.3",
    "9.8.7.6:443",
    "from 10.0.0.2",
    "from",
    "SRC=10.0.0.3",
    "src=10.0.0.4",
    "src:10.0.0.5",
    "src: 10.0.0.6",
    "client: 10.0.0.7",
    "client_ip=10.0.0.8",
    "rhost=10.0.0.9",
    "remote_addr: 300.1.1.1",
    "SRC=",
    "Chrome/126.0.0.0",
    '"GET /api/items/123?q=1 HTTP/1.1"',
    '"POST /u/0123456789abcdef HTTP/2"',
    '"GET /a/b/ HTTP/1.0"',
    "path=/v/3f2b1c4d-aaaa-bbbb-cccc-0123456789ab/x",
    '"url": "/c/77/d"',
    "uri=/e,f",
    "route=/",
    "/10.1.1.1",
)
NEIGHBOURS = ("", " ", "  ", "/", "./", ".", "_", "a", "-", "=", ":", "\t", "\x1c", '"', "{", ",", "?", "é", "\x00")


def _generated(count: int, seed: int) -> list[str]:
    """Lines of 1-6 cores, each after a random neighbour: every look-around next to every neighbour."""
    rng = random.Random(seed)
    return [
        "".join(rng.choice(NEIGHBOURS) + rng.choice(CORES) for _ in range(rng.randint(1, 6))) + rng.choice(NEIGHBOURS)
        for _ in range(count)
    ]


def _log(lines: list[str], seed: int) -> bytes:
    """The lines, most with a timestamp and a level (filters cut through them), some CRLF, blank lines."""
    rng = random.Random(seed)
    written = []
    for at, line in enumerate(lines):
        prefix = STAMP.format(at % 60, rng.choice(LEVELS)) if rng.random() < 0.8 else ""
        written.append(prefix + line + rng.choice(("\n", "\n", "\r\n", "\n\n")))
    return "".join(written).encode("utf-8")


@pytest.fixture(autouse=True)
def one_row_group_at_a_time(monkeypatch):
    """Queries read the row groups one at a time, however small: their results are merged across many."""
    monkeypatch.setattr(logstore, "_GROUP_ROWS", 1)


@pytest.fixture(scope="module")
def stores(tmp_path_factory) -> Iterator[dict[str, logstore.StoredLog]]:
    """Each log's store, built as a query builds it (open_index) but in windows of 64 KiB: many row groups."""
    tmp = tmp_path_factory.mktemp("counts")
    (tmp / "logs").mkdir()
    write_mixed_log(tmp / "logs" / "mixed.log", 20_000)
    (tmp / "logs" / "known.log").write_bytes(_log(list(KNOWN) * 3, 1))
    (tmp / "logs" / "generated.log").write_bytes(_log(_generated(6_000, 2), 3))
    (tmp / "logs" / "bad.log").write_bytes(_log(list(KNOWN), 4).replace(b"Verbindung", b"Verb\xff\xfeindung"))
    found = {}
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(logcolumns, "read_windows", functools.partial(logcolumns.read_windows, window=1 << 16))
        for path in sorted((tmp / "logs").iterdir()):
            found[path.stem] = opened(open_index(path, tmp, CONTEXT, tmp / "home"))
    yield found
    for stored in found.values():
        stored.close()


def _filters(stored: logstore.StoredLog) -> list[Filter]:
    ts = stored.column("ts")
    timed = ts[ts == ts]
    first, last = float(timed.min()), float(timed.max())
    middle = (first + last) / 2
    ranges = [(None, None, True), (None, None, False), (middle, None, False), (first, middle, False)]
    levels = [(None, False), (LEVELS.index("WARN"), False), (LEVELS.index("ERROR"), True)]
    keywords = [(), ("from",), ("get",), ("10.",), ("no such words",)]
    return [
        Filter(start, end, words, level, strict, whole)
        for (start, end, whole), (level, strict), words in itertools.product(ranges, levels, keywords)
    ]


@pytest.mark.parametrize("name", ["mixed", "known", "generated", "bad"])
def test_counts_equal_the_python_counts_over_the_matching_lines(stores, name):
    stored = stores[name]
    for wanted in _filters(stored):
        lines = list(logstore.matching_lines(stored, wanted))
        assert logcounts.address_counts(stored, wanted) == count_addresses(lines), wanted
        assert logcounts.path_counts(stored, wanted) == count_paths(lines), wanted


def test_the_logs_reach_every_kind_of_line(stores):
    """The differential test means something: sources, tokens, paths of both kinds, lines read in Python."""
    every = Filter(None, None, (), None, whole=True)
    known = logcounts.address_counts(stores["known"], every)
    assert known["203.0.113.45"] == 3 and known["10.1.1.1"] == 3  # sshd's source; DST where SRC is no address
    assert "10.0.0.1" not in known and "10.0.3.8" not in known  # not the source the line names
    assert known["10.40.1.35"] == 3 and not {"126.0.0.0", "1.1.1.1", "1.2.3.4"} & set(known)
    assert known["10.6.6.6"] == known["10.4.4.4"] == known["10.11.11.11"] == 3  # not ASCII, escaped, \x1c
    paths = logcounts.path_counts(stores["known"], every)
    assert paths["/products/{id}/reviews"] == paths["/api/orders/{id}"] == paths["/blobs/{id}/raw"] == 3
    assert paths["/esc/{id}"] == paths["/路径/{id}"] == 3
    generated = logcounts.address_counts(stores["generated"], every)
    assert len(generated) > 3 and sum(logcounts.path_counts(stores["generated"], every).values()) > 100


def test_polars_reads_the_patterns_as_python_on_every_ascii_character():
    ascii_characters = [chr(code) for code in range(1, 128)]
    lines = [f'"GET /a{c}b?{c} HTTP/1.1"{c}path{c}={c}/p{c}q{c}from{c}1.2.3.4 {c}src:{c}1' for c in ascii_characters]
    for pattern in (REQUEST, PATH_FIELD, re.compile(SOURCE_NAMED)):
        group = min(pattern.groups, 1)
        expected = [found.group(group) if (found := pattern.search(line)) else None for line in lines]
        assert pl.Series(lines).str.extract(logcounts.rust_pattern(pattern.pattern), group).to_list() == expected
    assert logcounts.rust_pattern(r"a\s[^\s\]x]\\s") == r"a[\t\n\x0b\x0c\r\x1c-\x1f ][^\t\n\x0b\x0c\r\x1c-\x1f \]x]\\s"


def test_the_deadline_stops_a_count(stores):
    with deadline_scope(Deadline(0.0)), pytest.raises(DeadlineExceeded):
        logcounts.address_counts(stores["mixed"], Filter(None, None, (), None, whole=True))


@pytest.mark.parametrize("env", [demo_env_dir(), *sorted(path.parent for path in PACKAGED_ENVS.glob("*/env.toml"))])
def test_query_logs_counts_as_before_on_the_packaged_environments(env):
    backend = SnapshotBackend(env)
    for keywords, level in [((), None), (("error",), None), ((), "WARN")]:
        wanted = Filter(None, None, keywords, None if level is None else LEVELS.index(level), whole=True)
        lines: list[str] = []
        for path in backend.log_files():
            with opened(open_index(path, backend.directory, backend.parse_context(path))) as stored:
                lines += logstore.matching_lines(stored, wanted)
        for count_by, counted in (("address", count_addresses), ("path", count_paths)):
            result = backend.query_logs(LogQuery(None, keywords, level, count_by=count_by))
            assert result.stats is not None
            assert result.stats[f"by_{count_by}"] == top_counts(counted(lines)), (env, keywords, level)


@pytest.mark.parametrize(
    "text",
    ["", " \n\n", "no address, no path\n", "连接 from 10.8.8.8 path=/路径/1\n", "a 10.0.0.1\nnon-ASCII é 10.0.0.2\n"],
)
def test_a_log_with_nothing_to_count_vectorised_counts_alike(tmp_path, text):
    """No rows, no candidate, every line read in Python, a chunk's plain lines without a path."""
    (tmp_path / "one.log").write_text(text)
    with opened(open_index(tmp_path / "one.log", tmp_path, CONTEXT, tmp_path / "home")) as stored:
        wanted = Filter(None, None, (), None, whole=True)
        lines = list(logstore.matching_lines(stored, wanted))
        assert logcounts.address_counts(stored, wanted) == count_addresses(lines)
        assert logcounts.path_counts(stored, wanted) == count_paths(lines)
