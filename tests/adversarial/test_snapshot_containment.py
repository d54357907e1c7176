"""Probes: a snapshot directory is read only inside itself, only as regular files, with a bounded walk.

Each probe builds a real snapshot in tmp with real symlinks, FIFOs, sockets and (as root) device
nodes, and runs the real readers: `env check`, the snapshot backend's queries and the knowledge
index. Probes that could hang the old code run `python -m evcli` in a subprocess with a timeout.
"""

from __future__ import annotations

import json
import os
import resource
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from evcli.backends.base import LogQuery, parse_window
from evcli.backends.envcheck import check_env
from evcli.backends.snapshot import SnapshotBackend
from evcli.core.errors import BackendError, BadInput
from evcli.kb.index import KnowledgeIndex, markdown_files
from tests.conftest import REPO

SECRET = "EXFILTRATED-7f3a"
ENV_TOML = 'name = "shop"\nnow = "2026-07-08T23:10:00Z"\n'
LOG = "2026-07-08T23:00:00Z ERROR checkout payment failed\n"
CSV = "timestamp,cpu[%]\n2026-07-08T23:00:00Z,42\n"
ALERTS = [{"labels": {"alertname": "HighCPU", "service": "checkout"}, "startsAt": "2026-07-08T22:50:00Z"}]
RUNBOOK = "# Checkout\n\nRestart the checkout pods when payment fails.\n"


def snapshot(root: Path) -> Path:
    """A small healthy snapshot: env.toml, alerts.json, one log, one metric file, one runbook."""
    files = {
        "env.toml": ENV_TOML,
        "alerts.json": json.dumps(ALERTS),
        "logs/checkout.log": LOG,
        "metrics/checkout.csv": CSV,
        "runbooks/checkout.md": RUNBOOK,
    }
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    return root


def outside(tmp_path: Path, name: str, text: str) -> Path:
    target = tmp_path / "outside" / name
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    return target


# Where the link goes, and what the file outside holds (each carries SECRET where a reader would show it).
LEAKS = {
    "logs/checkout.log": f"2026-07-08T23:01:00Z ERROR checkout {SECRET}\n",
    "metrics/checkout.csv": "timestamp,cpu[%]\n2026-07-08T23:00:00Z,77.7\n",
    "alerts.json": json.dumps(
        [{"labels": {"alertname": SECRET, "service": "checkout"}, "startsAt": "2026-07-08T22:50:00Z"}]
    ),
    "env.toml": f'name = "{SECRET}"\nnow = "2026-07-08T23:10:00Z"\n',
    "runbooks/checkout.md": f"# Checkout\n\nThe secret is {SECRET} payment.\n",
}


def read_everything(env: Path, tmp_path: Path) -> str:
    """What every reader reveals of the snapshot: env check, logs, metrics, alerts and the knowledge index."""
    seen = [check_env(env).model_dump_json()]
    try:
        backend = SnapshotBackend(env)
        window = parse_window("1h", backend.now())
        seen.append(repr(backend.query_logs(LogQuery("checkout", (), None, window, 50))))
        seen.append(repr(backend.query_metrics(service="checkout", alertname=None, metric=None, window=window)))
        seen.append(backend.name)
    except BackendError as error:
        seen.append(str(error))
    with KnowledgeIndex(tmp_path / "kb.db") as index:
        try:
            index.index_dir(env)
        except BadInput as error:
            seen.append(error.message)
        seen.append(repr(index.search(f"secret {SECRET} payment", directory=env)))
    return "\n".join(seen)


@pytest.mark.parametrize("name", sorted(LEAKS))
def test_a_file_symlinked_outside_the_snapshot_is_refused_by_every_reader(tmp_path, name):
    env = snapshot(tmp_path / "env")
    (env / name).unlink()
    (env / name).symlink_to(outside(tmp_path, Path(name).name, LEAKS[name]))
    seen = read_everything(env, tmp_path)
    assert SECRET not in seen and "77.7" not in seen
    report = check_env(env)
    assert any(p.path == name and "outside" in p.message for p in report.problems), report.problems
    assert not report.ok


@pytest.mark.parametrize("folder", ["logs", "metrics", "runbooks"])
def test_a_subdirectory_symlinked_outside_the_snapshot_is_refused(tmp_path, folder):
    env = snapshot(tmp_path / "env")
    name = {"logs": "logs/checkout.log", "metrics": "metrics/checkout.csv", "runbooks": "runbooks/checkout.md"}[folder]
    target_dir = outside(tmp_path, Path(name).name, LEAKS[name]).parent
    for path in (env / folder).iterdir():
        path.unlink()
    (env / folder).rmdir()
    (env / folder).symlink_to(target_dir, target_is_directory=True)
    assert SECRET not in read_everything(env, tmp_path) and "77.7" not in read_everything(env, tmp_path)


def test_a_runbook_subdirectory_symlinked_outside_is_refused_and_named(tmp_path):
    env = snapshot(tmp_path / "env")
    leak_dir = outside(tmp_path, "leak.md", LEAKS["runbooks/checkout.md"]).parent
    (env / "runbooks" / "shared").symlink_to(leak_dir, target_is_directory=True)
    assert SECRET not in read_everything(env, tmp_path)
    report = check_env(env)
    assert any(p.path == "runbooks/shared" and "outside" in p.message for p in report.problems), report.problems
    with KnowledgeIndex(tmp_path / "kb2.db") as index:
        assert any("runbooks/shared" in refused for refused in index.index_dir(env).refused)


def test_symlinks_that_stay_inside_the_snapshot_are_still_read(tmp_path):
    env = snapshot(tmp_path / "env")
    (env / "logs" / "payments.log").symlink_to("checkout.log")
    (env / "runbooks" / "again.md").symlink_to(env / "runbooks" / "checkout.md")
    backend = SnapshotBackend(env)
    result = backend.query_logs(LogQuery("payments", ("payment",), None, parse_window("1h", backend.now()), 50))
    assert result.total == 1
    assert check_env(env).ok
    with KnowledgeIndex(tmp_path / "kb.db") as index:
        assert index.index_dir(env).added == 2


# --- special files: refused from their stat, never opened for reading --------------------------


def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _socket(path: Path) -> None:
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))  # left bound: the node stays a socket while the probe runs


def _dev_zero_link(path: Path) -> None:
    path.symlink_to("/dev/zero")


def _dev_zero_node(path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("creating a device node needs root")
    os.mknod(path, stat.S_IFCHR | 0o644, os.makedev(1, 5))  # a /dev/zero inside the snapshot


SPECIALS = {"fifo": _fifo, "socket": _socket, "dev-zero-link": _dev_zero_link, "dev-zero-node": _dev_zero_node}
SPECIAL_PLACES = ["logs/checkout.log", "metrics/checkout.csv", "alerts.json", "env.toml", "runbooks/checkout.md"]


def run_evcli(*args: str, timeout: float = 8) -> tuple[subprocess.CompletedProcess, float]:
    """`python -m evcli ARGS` with 1 GiB of address space (an unbounded read dies instead of swapping)."""

    def limit_memory() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "evcli", *args], cwd=REPO, capture_output=True, text=True,
        timeout=timeout, preexec_fn=limit_memory, env={**os.environ, "NO_COLOR": "1", "COLUMNS": "4000"},
    )  # fmt: skip
    return done, time.monotonic() - started


@pytest.mark.parametrize("kind", sorted(SPECIALS))
def test_env_check_refuses_special_files_without_reading_them(tmp_path, kind):
    env = snapshot(tmp_path / "env")
    for place in SPECIAL_PLACES:
        (env / place).unlink()
        SPECIALS[kind](env / place)
    done, seconds = run_evcli("env", "check", str(env), "--json")
    assert done.returncode == 2, done.stderr
    problems = json.loads(done.stdout)["problems"]
    for place in SPECIAL_PLACES:
        messages = [p["message"] for p in problems if p["path"] == place]
        assert any("not a regular file" in m or "outside" in m for m in messages), (place, problems)
    assert seconds < 6


@pytest.mark.parametrize("kind", ["fifo", "dev-zero-link"])
def test_query_logs_fails_fast_on_a_special_log_file(tmp_path, kind):
    env = snapshot(tmp_path / "env")
    SPECIALS[kind](env / "logs" / "cart.log")
    done, seconds = run_evcli("tool", "query_logs", "--env", str(env), "--service", "cart", "--window", "1h")
    assert done.returncode == 1, done.stderr
    assert "logs/cart.log" in done.stderr and ("not a regular file" in done.stderr or "outside" in done.stderr)
    assert seconds < 6


# --- the knowledge walk is bounded and says so --------------------------------------------------


def test_the_markdown_walk_stops_at_its_file_limit_and_says_so(tmp_path):
    from evcli.core.files import ReadLimits

    for number in range(12):
        (tmp_path / f"note{number}.md").write_text(f"# Note {number}\n\nbody\n", encoding="utf-8")
    with pytest.raises(BadInput, match=r"more than 10 \.md files"):
        markdown_files(tmp_path, ReadLimits(max_files=10))
    with pytest.raises(BadInput, match="more than 5 entries"):
        markdown_files(tmp_path, ReadLimits(max_entries=5))
    assert len(markdown_files(tmp_path, ReadLimits(max_files=12)).files) == 12


def test_the_markdown_walk_stops_at_its_byte_limits_and_says_so(tmp_path):
    from evcli.core.files import ReadLimits

    (tmp_path / "big.md").write_text("# Big\n\n" + "x" * 5000, encoding="utf-8")
    (tmp_path / "small.md").write_text("# Small\n\nok\n", encoding="utf-8")
    with pytest.raises(BadInput, match="more than 4000 bytes"):
        markdown_files(tmp_path, ReadLimits(max_total_bytes=4000))
    found = markdown_files(tmp_path, ReadLimits(max_file_bytes=1000))
    assert found.files == [tmp_path / "small.md"]
    assert [(path.name, "larger than 1000 bytes" in why) for path, why in found.refused] == [("big.md", True)]


def test_kb_index_of_the_root_directory_is_refused_promptly(tmp_path):
    done, seconds = run_evcli("kb", "index", "/", "--kb", str(tmp_path / "kb.db"), timeout=30)
    assert done.returncode == 2, (done.returncode, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "more than" in lines[0] and "runbook directory" in lines[0], done.stderr
    assert seconds < 10


def test_ask_on_the_root_directory_does_not_index_the_machine(tmp_path):
    done, seconds = run_evcli(
        "tool", "lookup_knowledge", "--query", "disk full", "--env", "/", "--db", str(tmp_path / "t.db"), timeout=30
    )
    assert done.returncode == 1, (done.returncode, done.stderr)
    assert "more than" in done.stderr, done.stderr
    assert seconds < 10
