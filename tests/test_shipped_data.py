"""Runbook text becomes next actions and hypotheses: it must not carry phrases the post-guard rejects."""

from __future__ import annotations

from pathlib import Path

import pytest

import evcli
from evcli.gatekeeper.excerpt import normalize

PACKAGE = Path(evcli.__file__).parent
RUNBOOKS = sorted((PACKAGE / "demo" / "runbooks").rglob("*.md")) + sorted(
    path for env in ("edge", "host") for path in (PACKAGE / "envs" / env / "runbooks").rglob("*.md")
)


def test_the_environments_ship_runbooks():
    assert len(RUNBOOKS) >= 14


@pytest.mark.parametrize("path", RUNBOOKS, ids=[p.name for p in RUNBOOKS])
def test_runbooks_carry_no_overstatement_phrase(path, rules):
    text = normalize(path.read_text(encoding="utf-8"))
    assert [p for p in rules.overstatement_phrases if normalize(p) in text] == []
