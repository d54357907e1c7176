"""A stopped log index build keeps its progress and the next build continues it (evcli/backends/logindex.py,
evcli/backends/logstore_write.py): the store it ends with equals one built in one go; a damaged partial is
discarded; a real Ctrl-C of `evcli env index` keeps one and the next run says what it continued; and a big
file's build shows a progress bar of its bytes on a terminal, from the bytes a stopped build did, and a small
file's nothing (nothing without a terminal: tests/cli/test_env_index.py)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import polars as pl
import pyarrow.parquet as pq
import pytest

from evcli.backends import logcolumns, logindex, logstore, logstore_write
from evcli.backends.logformats import ParseContext
from evcli.backends.logsearch import Filter
from evcli.core.files import Deadline, DeadlineExceeded, deadline_scope
from tests.backends.test_log_index import ESCAPED, KEY, LOG, TRACE
from tests.terminal import stderr_on_a_terminal

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))  # the bench scripts import each other as top-level modules
from bench_tools import write_mixed_log  # noqa: E402

CONTEXT = ParseContext(datetime(2026, 7, 9, 23, 10, tzinfo=UTC), ZoneInfo("Asia/Shanghai"))
WINDOW = 1 << 16  # bytes per window here: a build of a few hundred KB reads many windows
SECRET = "2026-07-09 06:51:00.000 ERROR [pay-1] c.e.Pay - login failed password=hunter2hunter2\n"


class CountedDeadline(Deadline):
    """The project's deadline, counting its checks, that passes at check number `passes_at` (None: never)."""

    def __init__(self, passes_at: int | None = None) -> None:
        super().__init__(3600)
        self.checks = 0
        self.passes_at = passes_at

    def check(self) -> None:
        self.checks += 1
        if self.checks == self.passes_at:
            self.cancel()
        super().check()


@pytest.fixture
def log(tmp_path, monkeypatch) -> Path:
    """A mixed log of many windows, with masked secrets, JSON escapes, a key block, stack frames and
    untimed lines spread over them."""
    monkeypatch.setattr(logcolumns, "WINDOW_BYTES", WINDOW)
    mixed = tmp_path / "mixed.src"
    write_mixed_log(mixed, 12_000)
    lines = mixed.read_text().splitlines(keepends=True)
    special = [SECRET, ESCAPED, KEY, TRACE, "an untimed line\n", LOG]
    path = tmp_path / "logs" / "app.log"
    path.parent.mkdir()
    path.write_text(
        "".join(line + (special[at // 1000 % 6] if at % 1000 == 999 else "") for at, line in enumerate(lines))
    )
    return path


def build(path: Path, home: Path, deadline: Deadline | None = None) -> logindex.IndexedFile:
    with deadline_scope(deadline or CountedDeadline()):
        return logindex.open_index(path, path.parent, CONTEXT, home)


def contents(store: Path) -> tuple[object, list[int], dict]:
    """A store's columns, its row groups' sizes and its metadata but for the build's id and seconds."""
    with pq.ParquetFile(store) as parquet:
        groups = [parquet.metadata.row_group(index).num_rows for index in range(parquet.num_row_groups)]
        table = parquet.read()
    meta = json.loads(pl.read_parquet_metadata(store)[logstore.META_KEY])
    build_record = {key: value for key, value in meta.pop("build").items() if key not in ("id", "seconds")}
    return table, groups, meta | {"build": build_record}


def answers(indexed: logindex.IndexedFile) -> list[object]:
    """A few queries' results over the index."""
    wanted = [
        Filter(None, None, ("timeout",), None, whole=True),
        Filter(None, None, ("password",), None, whole=True),
        Filter(None, None, ("连接池",), None, whole=True),
        Filter(None, None, (), 4, level_strict=True, whole=True),
    ]
    with logstore.open_store(indexed.store, indexed.log, indexed.root) as stored:
        found = [logstore.search(stored, filter_, 20) for filter_ in wanted]
        return found + [logstore.instance_counts(stored, wanted[0])]


def partial_state(store: Path) -> dict:
    partial = logstore_write.partial_path(store)
    return json.loads(pq.ParquetFile(partial).metadata.metadata[logstore_write.PARTIAL_KEY.encode()])


def leftovers(home: Path) -> list[str]:
    return sorted(path.name for path in home.iterdir() if path.name.startswith((".building-", ".resuming-")))


def stop_partway(log: Path, home: Path, part: float = 0.75) -> tuple[logindex.IndexedFile, int]:
    """A whole build of `log` in a home of its own, then a build in `home` whose deadline passes at `part`
    of the checks a whole build makes (0.75: after some windows are stored, before the last; 1: at the
    check after the last window); returns the whole build and the checks a build of `log` makes once its
    digest is remembered (a second build in the same home: it hashes nothing)."""
    fresh = CountedDeadline()
    whole = build(log, home.parent / "whole", fresh)
    whole.store.unlink()
    known = CountedDeadline()
    whole = build(log, home.parent / "whole", known)
    with pytest.raises(DeadlineExceeded):
        build(log, home, CountedDeadline(passes_at=int(fresh.checks * part)))
    return whole, known.checks


def test_the_windows_after_any_window_end_are_the_ones_a_whole_read_has_after_it(log):
    data = log.read_bytes()
    assert b"PRIVATE KEY" in data  # windows are moved past key blocks: those ends too
    ends = list(logcolumns._window_ends(data, 4096))
    assert len(ends) > 100 and ends[-1] == len(data)
    for at, end in enumerate(ends):
        assert list(logcolumns._window_ends(data, 4096, end)) == ends[at + 1 :]


@pytest.mark.parametrize("part", [0.75, 1])
def test_a_build_stopped_partway_keeps_its_windows_and_the_next_continues_them_to_the_same_store(log, tmp_path, part):
    home = tmp_path / "home"
    whole, checks = stop_partway(log, home, part)
    store, partial = home / whole.store.name, logstore_write.partial_path(home / whole.store.name)
    assert not store.exists() and partial.exists() and not leftovers(home)
    state = partial_state(store)
    done = state["reader"]["size"]
    assert 0 < done <= log.stat().st_size and state["written"]["size"] == done
    assert (done == log.stat().st_size) == (part == 1)
    assert log.read_bytes()[done - 1 : done] == b"\n"  # a window ends at a line's end
    windows_kept = pq.ParquetFile(partial).num_row_groups - 1  # the side lists' row group aside

    counted = CountedDeadline()
    resumed = build(log, home, counted)
    assert resumed.built and resumed.resumed == done
    # the deadline is checked once before each window read: the continued build read the others only
    assert windows_kept > 1 and counted.checks == checks - windows_kept
    assert not partial.exists() and not leftovers(home)

    first, second = contents(whole.store), contents(resumed.store)
    assert second[1] == first[1]  # the same row groups: the windows end where one build ends them
    assert second[0].equals(first[0])
    assert second[2] == first[2]
    assert answers(resumed) == answers(whole)
    assert answers(whole)[2].rows  # the escaped lines are found by their unescaped text


@pytest.mark.parametrize("stop", ["before", "after"])
def test_a_ctrl_c_inside_a_row_group_s_write_keeps_that_window_once(log, tmp_path, monkeypatch, stop):
    """A Ctrl-C lands between Python's steps, so on either side of the writer's call for a window; that
    moment cannot be timed from outside, so here the call raises KeyboardInterrupt just before or after
    it writes the third window. Either way the partial holds the three windows, each once."""
    whole = build(log, tmp_path / "whole")
    write_table, calls = pq.ParquetWriter.write_table, []

    def interrupted(writer, table, *args, **options):
        calls.append(1)
        if len(calls) == 3 and stop == "before":
            raise KeyboardInterrupt
        write_table(writer, table, *args, **options)
        if len(calls) == 3 and stop == "after":
            raise KeyboardInterrupt

    monkeypatch.setattr(pq.ParquetWriter, "write_table", interrupted)
    with pytest.raises(KeyboardInterrupt):
        build(log, tmp_path / "home")
    monkeypatch.setattr(pq.ParquetWriter, "write_table", write_table)
    partial = logstore_write.partial_path(tmp_path / "home" / whole.store.name)
    assert pq.ParquetFile(partial).num_row_groups - 1 == 3
    done = partial_state(tmp_path / "home" / whole.store.name)["reader"]["size"]
    resumed = build(log, tmp_path / "home")
    assert resumed.resumed == done > 0
    assert contents(resumed.store) == contents(whole.store)


@pytest.mark.parametrize("damage", ["truncated", "not a store"])
def test_a_damaged_partial_is_deleted_and_the_build_starts_from_the_first_line(log, tmp_path, damage):
    home = tmp_path / "home"
    whole, _ = stop_partway(log, home)
    partial = logstore_write.partial_path(home / whole.store.name)
    if damage == "truncated":
        with partial.open("r+b") as handle:
            handle.truncate(partial.stat().st_size // 2)
    else:
        partial.write_bytes(b"PAR1 not a parquet file")
    rebuilt = build(log, home)
    assert rebuilt.built and rebuilt.resumed == 0
    assert not partial.exists() and not leftovers(home)
    assert contents(rebuilt.store)[0].equals(contents(whole.store)[0])
    assert answers(rebuilt) == answers(whole)


ENV_INDEX = """
import sys
from evcli.backends import logcolumns
from evcli.cli import main
logcolumns.WINDOW_BYTES = int(sys.argv.pop(1))
main()
"""  # `evcli env index` with windows of WINDOW bytes


def env_index(home: Path, env: Path, *options: str) -> subprocess.Popen[str]:
    """`evcli env index ENV` started as its own process, reading the log WINDOW bytes at a time."""
    environment = {**os.environ, "EVCLI_HOME": str(home), "COLUMNS": "200", "NO_COLOR": "1"}
    command = [sys.executable, "-c", ENV_INDEX, str(WINDOW), "env", "index", str(env), *options]
    return subprocess.Popen(command, env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def snapshot_with(tmp_path: Path, lines: int) -> Path:
    env = tmp_path / "env"
    (env / "logs").mkdir(parents=True)
    (env / "env.toml").write_text('now = "2026-07-09T23:10:00Z"\ntimezone = "Asia/Shanghai"\n')
    write_mixed_log(env / "logs" / "big.log", lines)
    return env


def test_ctrl_c_keeps_the_windows_stored_and_the_next_env_index_continues_them_and_says_so(tmp_path):
    env = snapshot_with(tmp_path, 25_000)
    log, home = env / "logs" / "big.log", tmp_path / "home"
    stopped = env_index(home, env)
    deadline = time.monotonic() + 60
    while not any(path.stat().st_size > 4 for path in home.glob("logindex/.building-*")):  # a window stored
        assert stopped.poll() is None and time.monotonic() < deadline, stopped.communicate()
        time.sleep(0.005)
    stopped.send_signal(signal.SIGINT)
    _, stderr = stopped.communicate(timeout=60)
    assert stopped.returncode == 130 and "Traceback" not in stderr, stderr  # Ctrl-C's exit: one clean line
    [partial] = (home / "logindex").glob(f"*{logstore_write.PARTIAL_SUFFIX}")
    store = partial.with_name(partial.name.removesuffix(logstore_write.PARTIAL_SUFFIX))
    done = partial_state(store)["reader"]["size"]
    assert 0 < done < log.stat().st_size and not leftovers(home / "logindex")

    again = env_index(home, env)
    said = again.communicate(timeout=120)[0]
    assert again.returncode == 0, said
    assert "logs/big.log: built, 25000 lines (iso8601) in " in said
    assert f" s, continuing a stopped build that had indexed {done:,} bytes\n" in said
    assert not partial.exists() and not leftovers(home / "logindex")

    whole = env_index(tmp_path / "home-whole", env, "--json")
    report = json.loads(whole.communicate(timeout=120)[0])
    assert whole.returncode == 0 and [entry["resumed"] for entry in report["logs"]] == [0]
    assert contents(store) == contents(tmp_path / "home-whole" / "logindex" / store.name)


def test_a_big_log_shows_a_bar_of_bytes_and_percent_on_a_terminal_and_a_small_one_nothing(tmp_path):
    env = snapshot_with(tmp_path, 120_000)
    size = (env / "logs" / "big.log").stat().st_size
    assert size > logindex._PROGRESS_MIN_BYTES
    environment = {**os.environ, "EVCLI_HOME": str(tmp_path / "home"), "COLUMNS": "160"}
    shown = stderr_on_a_terminal([sys.executable, "-m", "evcli", "env", "index", str(env)], environment)
    assert "indexing big.log" in shown
    percents = [int(found) for found in re.findall(r"(\d+)%", shown)]
    assert percents and percents[-1] == 100 and percents == sorted(percents), shown
    assert f"{size / 1e6:.1f}/{size / 1e6:.1f} MB" in shown  # bytes done of the log's

    (env / "logs" / "big.log").write_text(LOG)  # below the threshold: no bar
    environment["EVCLI_HOME"] = str(tmp_path / "home-small")
    assert stderr_on_a_terminal([sys.executable, "-m", "evcli", "env", "index", str(env)], environment) == ""


PROGRESS = """
import sys
from pathlib import Path
from evcli.backends import logindex
path, done = Path(sys.argv[1]), int(sys.argv[2])
with logindex._progress(path, done) as reached:
    reached(path.stat().st_size)
"""  # the bar of a build that continues one stopped after `done` bytes


def test_a_continued_build_s_bar_starts_at_the_bytes_done_before(tmp_path):
    log = tmp_path / "sparse.log"
    with log.open("wb") as handle:
        handle.truncate(20 << 20)  # the size of a log that shows a bar (the bar reads only its size)
    command = [sys.executable, "-c", PROGRESS, str(log), str(8 << 20)]
    shown = stderr_on_a_terminal(command, {**os.environ, "COLUMNS": "160"})
    percents = re.findall(r"(\d+)%", shown)
    assert percents and (percents[0], percents[-1]) == ("40", "100"), shown  # 8 of 20 MiB done before


def test_a_build_removes_what_killed_builds_left_and_the_partial_of_an_index_built_since(log, tmp_path):
    home = tmp_path / "home"
    stop_partway(log, home)
    (partial,) = home.glob(f"*{logstore_write.PARTIAL_SUFFIX}")
    other = home / f"{'0' * 64}-{'1' * 16}{logindex.SUFFIX}"  # an index another process completed since
    other.write_bytes(b"")
    other_partial = logstore_write.partial_path(other)
    os.link(partial, other_partial)
    stale, fresh = home / ".building-dead.parquet", home / ".resuming-live-x.partial"
    for leftover in (stale, fresh):
        leftover.write_bytes(b"half")
    hour_ago = time.time() - logindex._STALE_S - 60
    os.utime(stale, (hour_ago, hour_ago))
    assert build(log, home).resumed  # its own partial is continued, not swept
    assert not other_partial.exists() and other.exists()
    assert not stale.exists() and fresh.exists()  # a recent temporary file may be a live build's
