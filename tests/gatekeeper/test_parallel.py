"""A large session is gated in two processes (evcli.gatekeeper.parallel): the result must be the sequential one,
byte for byte, and a failing child must change nothing."""

from __future__ import annotations

import gc
import os
import resource
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from evcli.contracts import GateResult
from evcli.evals.stitched import stitched_session
from evcli.gatekeeper import parallel
from evcli.gatekeeper.engine import gate
from evcli.gatekeeper.rules import load_rules
from evcli.resources import data_path
from evcli.store.documents import read_document


def _stitched(min_bindings: int):
    """Every shipped sample session (bases and faults) repeated into one session of at least `min_bindings`
    bindings."""
    documents = [read_document(path) for path in sorted(Path(data_path("sample_sessions")).glob("*.json"))]
    return stitched_session(documents, min_bindings)


_FORKS = pytest.mark.skipif(not hasattr(os, "fork") or parallel.usable_cores() < 2, reason="needs fork and two cores")


@pytest.fixture(scope="module")
def large_session():
    return _stitched(parallel.MIN_WEIGHT + 500)


def _run_alone(request) -> bool:
    """Whether this test ran, and passed, in a fresh interpreter instead: a fork is tried only in a process
    running no other thread, and the suite's earlier tests can leave server threads running in this one."""
    if threading.active_count() == 1:
        return False
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", request.node.nodeid],
        cwd=request.config.rootpath,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:]
    return True


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _gate_in_thread(output, invocations, rules, *, whole: bool = False):
    """gate() while a second thread runs: a process with another thread never forks (the sequential run);
    `whole`: the claims validated with the document before any is checked, as before each part validated
    its own."""
    from evcli.gatekeeper import engine

    found: dict[str, GateResult] = {}
    worker = threading.Thread(
        target=lambda: found.update(result=engine._gate(output, invocations, rules, None, None, whole=whole))
    )
    worker.start()
    worker.join()
    return found["result"]


@_FORKS
def test_a_large_session_gives_the_sequential_result_byte_for_byte(request):
    if _run_alone(request):
        return
    output, invocations, bindings = request.getfixturevalue("large_session")
    rules = load_rules()
    before = _children_cpu()
    split = gate(output, invocations, rules)
    assert _children_cpu() > before, "the session was not checked in a child process"
    sequential = _gate_in_thread(output, invocations, rules)
    assert split.model_dump_json() == sequential.model_dump_json()
    assert len(split.checked_bindings) == bindings
    # the sample faults fail in both halves, and their findings keep claim order
    assert {f.claim_id for f in split.errors[:3]} != {f.claim_id for f in split.errors[-3:]}
    assert [f.claim_id for f in split.errors] == [f.claim_id for f in sequential.errors]


@_FORKS
@pytest.mark.parametrize("where", [0.1, 0.9])  # a malformed claim in the caller's part, in the child's
def test_a_claim_that_does_not_validate_in_either_part_gives_the_whole_documents_result(request, where):
    if _run_alone(request):
        return
    output, invocations, bindings = request.getfixturevalue("large_session")
    rules = load_rules()
    claims = [dict(claim) for claim in output["claims"]]
    bad = int(len(claims) * where)
    claims[bad]["claim_text"] = ["not", "a", "text"]
    broken = {**output, "claims": claims}
    split = gate(broken, invocations, rules)
    whole = _gate_in_thread(broken, invocations, rules, whole=True)
    assert split.model_dump_json() == whole.model_dump_json()
    version = [f for f in split.errors if f.rule == "contract.answer_version"]
    assert version and f"claims.{bad}.claim_text" in version[0].message
    assert len(split.checked_bindings) == bindings - len(claims[bad]["evidence_bindings"])  # the rest salvaged


@_FORKS
def test_parts_that_validate_their_own_claims_give_the_whole_documents_result(request):
    if _run_alone(request):
        return
    output, invocations, _ = request.getfixturevalue("large_session")
    rules = load_rules()
    assert (
        gate(output, invocations, rules).model_dump_json()
        == _gate_in_thread(output, invocations, rules, whole=True).model_dump_json()
    )


def _pid_check(parent: int):
    """A part's outcome: the part itself, and which process checked it."""

    def check(part):
        return list(part), os.getpid() == parent

    return check


def _encode(outcome) -> bytes:
    return repr(outcome).encode()


def _decode(sent: bytes):
    import ast

    return ast.literal_eval(sent.decode())


@_FORKS
def test_parts_are_contiguous_in_order_and_the_later_ones_run_in_children(request):
    if _run_alone(request):
        return
    items = list(range(5000))
    outcomes = parallel.in_parts(items, [1] * len(items), _pid_check(os.getpid()), _encode, _decode)
    assert [item for part, _ in outcomes for item in part] == items
    assert [in_parent for _, in_parent in outcomes] == [True] + [False] * (len(outcomes) - 1)
    assert len(outcomes) == min(parallel.usable_cores(), 8)


@_FORKS
def test_a_large_session_right_after_tool_calls_is_still_split(request):
    """Tool calls leave kept idle threads (evcli.core.pools) for a while: they end before the fork, so a gate
    right after an ask still runs in parts."""
    if _run_alone(request):
        return
    from evcli.core.pools import threads

    for future in [threads().submit(sum, [1, 2]) for _ in range(4)]:
        assert future.result(timeout=5) == 3
    assert threading.active_count() > 1
    items = list(range(5000))
    outcomes = parallel.in_parts(items, [1] * len(items), _pid_check(os.getpid()), _encode, _decode)
    assert [in_parent for _, in_parent in outcomes] == [True] + [False] * (len(outcomes) - 1)
    assert len(outcomes) == min(parallel.usable_cores(), 8)


def test_a_small_session_is_checked_in_one_part():
    outcomes = parallel.in_parts(list(range(10)), [1] * 10, _pid_check(os.getpid()), _encode, _decode)
    assert outcomes == [(list(range(10)), True)]


@_FORKS
def test_a_failing_child_changes_nothing_its_part_is_checked_again(request):
    if _run_alone(request):
        return
    parent = os.getpid()

    def check(part):
        if os.getpid() != parent:
            raise RuntimeError("child fails")
        return list(part)

    items = list(range(4000))
    assert [x for part in parallel.in_parts(items, [1] * 4000, check, _encode, _decode) for x in part] == items


@_FORKS
def test_an_error_is_raised_as_the_sequential_run_raises_it_and_no_child_is_left(request):
    if _run_alone(request):
        return

    def check(part):
        if 3000 in part:
            raise ValueError("claim 3000 is malformed")
        return list(part)

    with pytest.raises(ValueError, match="claim 3000"):
        parallel.in_parts(list(range(4000)), [1] * 4000, check, _encode, _decode)
    with pytest.raises(ChildProcessError):
        os.waitpid(-1, os.WNOHANG)  # every child was reaped


def _in_a_fresh_interpreter(request) -> bool:
    """Whether this test ran, and passed, in a fresh interpreter instead: what the collector holds depends on the
    whole process (the suite's earlier tests import litellm, whose import freezes what it built)."""
    if os.environ.get("EVCLI_TEST_FRESH_GC") == request.node.nodeid:
        return False
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", request.node.nodeid],
        cwd=request.config.rootpath,
        env=os.environ | {"EVCLI_TEST_FRESH_GC": request.node.nodeid},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:]
    assert " passed" in done.stdout  # it ran there, not skipped
    return True


def test_what_gating_a_large_session_keeps_joins_the_oldest_generation(large_session, request):
    """No young collection traverses the result right after gate() returns: it would free none of it."""
    if _in_a_fresh_interpreter(request):
        return
    output, invocations, _ = large_session
    gc.collect()
    result = gate(output, invocations, load_rules())
    oldest = {id(tracked) for tracked in gc.get_objects(generation=2)}
    assert id(result) in oldest
    assert all(id(binding) in oldest for binding in result.checked_bindings)


def test_a_process_that_froze_objects_keeps_them_frozen_and_gets_the_same_result(large_session, request):
    if _in_a_fresh_interpreter(request):
        return
    output, invocations, _ = large_session
    expected = gate(output, invocations, load_rules()).model_dump_json()
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        assert gate(output, invocations, load_rules()).model_dump_json() == expected
        # still frozen (an unfreeze would empty the permanent generation; a few frozen objects may be freed)
        assert gc.get_freeze_count() > 0.99 * frozen
    finally:
        gc.unfreeze()
