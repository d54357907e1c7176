"""serve/doorbell.py with real pipes and real spawned processes: rings wake a waiting worker and are read in
one go, closing the doorbell tells a worker the server is gone, and ringing never blocks or fails."""

from __future__ import annotations

import json
import multiprocessing
from pathlib import Path

from evcli.serve.doorbell import Bell, Doorbell

LONG_WAIT_S = 120.0  # far beyond the join below: a worker that is not woken makes the test fail
JOIN_S = 30.0


def _wait_twice(bell: Bell, report: str) -> None:
    """In a spawned process: a long wait, then one that does not wait; what each returned."""
    first = bell.wait(LONG_WAIT_S)
    second = bell.wait(0)
    Path(report).write_text(json.dumps([first, second, bell.server_gone]))


def _start(doorbell: Doorbell, report: Path) -> multiprocessing.process.BaseProcess:
    bell = doorbell.add(1)
    process = multiprocessing.get_context("spawn").Process(target=_wait_twice, args=(bell, str(report)))
    process.start()
    bell.started()
    return process


def _finished(process: multiprocessing.process.BaseProcess, report: Path) -> list[bool]:
    process.join(JOIN_S)
    if process.is_alive():
        process.kill()
        process.join()
    assert process.exitcode == 0
    return json.loads(report.read_text())


def test_rings_wake_a_waiting_worker_and_are_read_in_one_go(tmp_path):
    doorbell = Doorbell()
    report = tmp_path / "report.json"
    process = _start(doorbell, report)
    for _ in range(3):
        doorbell.ring()
    try:
        assert _finished(process, report) == [True, False, False]  # woken; nothing left to read; server there
    finally:
        doorbell.close()


def test_a_closed_doorbell_tells_the_worker_the_server_is_gone(tmp_path):
    doorbell = Doorbell()
    report = tmp_path / "report.json"
    process = _start(doorbell, report)
    doorbell.close()
    assert _finished(process, report) == [True, True, True]


def test_ringing_never_blocks_on_a_full_pipe_nor_fails_once_the_worker_is_gone():
    doorbell = Doorbell()
    bell = doorbell.add(1)
    for _ in range(70_000):  # more than a pipe holds (64 KiB): the writes past it are dropped, not waited on
        doorbell.ring()
    assert bell.wait(0) is True and bell.wait(0) is False  # all read at once
    bell.started()  # the read end closed, as when the worker process is gone
    doorbell.ring()
    replacement = doorbell.add(1)  # a new worker in the slot: only its pipe is rung
    doorbell.ring()
    assert replacement.wait(0) is True
    doorbell.close()
    assert replacement.wait(0) is True and replacement.server_gone
