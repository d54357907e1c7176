"""Every shipped sample session states its expected gate outcome; check each one."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from evcli.gatekeeper.service import gate_document
from evcli.store.documents import read_document
from tests.conftest import REPO, SAMPLES

FILES = sorted(SAMPLES.glob("*.json"))


def test_the_required_samples_are_shipped():
    names = {path.stem for path in FILES}
    assert {"narrow-payment-highcpu", "negative-inventory-hikaricp", "broad-order-service"} <= names
    assert sum(name.startswith("fault-") for name in names) >= 13


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_sample_gates_as_it_says(path, rules):
    document = read_document(path)
    expected = document.run.annotations["expected_gate"]
    result = gate_document(document, rules).result
    assert (result.status, result.severity, result.failed_rules) == (
        expected["status"],
        expected["severity"],
        expected["failed_rules"],
    )


def test_negative_sample_binds_no_evidence_only():
    document = read_document(SAMPLES / "negative-inventory-hikaricp.json")
    (claim,) = document.latest_stage("execute").output["claims"]
    assert claim["claim_type"] == "negative_observation"
    assert [b["raw_path"] for b in claim["evidence_bindings"]] == ["$.no_evidence"]


def test_samples_match_their_builder():
    """sample_sessions/ is generated; a hand edit or a rules change must be rebuilt."""
    completed = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "build_sample_sessions.py"), "--check"],
        check=False,
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert completed.returncode == 0, completed.stderr


def _replay_needs(document, stage):
    """The first stage upstream of `stage` that the sample does not hold, or None."""
    from evcli.stages import upstream

    for needed in upstream(stage):
        held = bool(document.gate_results) if needed.name == "gate" else document.latest_stage(needed.name) is not None
        if not held:
            return needed.name
    return None


def _stage_ids():
    from evcli.stages import REPLAYABLE

    return REPLAYABLE


@pytest.mark.parametrize("stage", _stage_ids())
@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_every_sample_replays_from_every_stage(path, stage, db_path):
    """A replay either runs to an answer stored as a new session, or says which upstream output is missing."""
    from tests.cli._util import assert_clean_error, evcli

    source = read_document(path)
    missing = _replay_needs(source, stage)
    run = evcli("replay", path, "--from", stage, "--json", "--db", db_path)
    if missing is not None:  # a fault sample was never gated, verified or composed
        assert_clean_error(run, 2, f"has no {missing} output to replay from")
        assert not db_path.exists() or not read_sessions(db_path)
        return
    ids = [invocation.invocation_id for invocation in source.invocations]
    if stage != "execute" and len(set(ids)) < len(ids):  # the store refuses what the gate reads in a file
        assert_clean_error(run, 2, "cannot be stored", "UNIQUE constraint failed")
        assert not read_sessions(db_path)
        return
    assert run.exit_code == 0, run
    result = run.json()
    assert result["verdict"] in ("PASS", "LOW_CONFID", "REJECT")
    (stored,) = read_sessions(db_path)
    assert stored.run.session_id == result["session_id"] != source.run.session_id
    assert stored.run.status == "completed" and stored.run.verdict == result["verdict"]
    assert stored.run.config.replay_of is not None
    assert (stored.run.config.replay_of.session_id, stored.run.config.replay_of.from_stage) == (
        source.run.session_id,
        stage,
    )
    assert stored.latest_stage("compose") is not None


def read_sessions(db_path):
    from evcli.store.db import TraceStore

    with TraceStore(db_path) as store:
        return [store.load(row["session_id"]) for row in store.list_sessions()]


@pytest.mark.parametrize("stage", ["execute", "verify"])
def test_a_sample_in_the_first_config_shape_still_replays(stage, tmp_path, db_path):
    """The first shipped samples stored `{"model": "offline", "env": "demo"}`; replaying them used to crash."""
    from tests.cli._util import evcli, load_json

    data = load_json(SAMPLES / "broad-order-service.json")
    data["run"]["config"] = {"model": "offline", "env": "demo"}
    old = tmp_path / "old.json"
    old.write_text(json.dumps(data), encoding="utf-8")
    run = evcli("replay", old, "--from", stage, "--json", "--db", db_path)
    assert run.exit_code == 0, run
    (stored,) = read_sessions(db_path)
    assert stored.run.config.env == {}
    assert stored.run.config.models == {
        "planner": "offline",
        "executor": "offline",
        "verifier": "offline",
        "composer": "offline",
    }
