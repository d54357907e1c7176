"""Every shipped sample session states its expected gate outcome; check each one."""

from __future__ import annotations

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
        expected["status"], expected["severity"], expected["failed_rules"]
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
        capture_output=True, text=True, cwd=REPO,
    )
    assert completed.returncode == 0, completed.stderr
