"""Sessions stitched into one large session (evcli/evals/stitched.py): ids renumbered so every binding still
names its own copy's invocation, and no object shared between copies."""

from __future__ import annotations

from pathlib import Path

import pytest

from evcli.evals.stitched import stitched_session
from evcli.resources import data_path
from evcli.store.documents import read_document


def _samples():
    return [read_document(path) for path in sorted(Path(data_path("sample_sessions")).glob("*.json"))[:3]]


def test_copies_are_renumbered_and_every_binding_names_its_own_copy():
    output, invocations, bindings = stitched_session(_samples(), 200)
    assert bindings >= 200
    ids = [invocation.invocation_id for invocation in invocations]
    assert len(ids) == len(set(ids))  # no id twice across copies
    by_id = {invocation.invocation_id: invocation for invocation in invocations}
    cited = [b for claim in output["claims"] for b in claim["evidence_bindings"]]
    assert len(cited) == bindings
    assert all(b["source_invocation_id"] in by_id for b in cited if isinstance(b.get("source_invocation_id"), int))
    assert len({claim["claim_id"] for claim in output["claims"]}) == len(output["claims"])
    # the copies are distinct objects: changing one copy's output leaves the others alone
    first, *others = [i for i in invocations if i.tool_name == invocations[0].tool_name]
    assert others and all(other.output is not first.output for other in others)


def test_documents_without_claims_cannot_be_stitched():
    empty = _samples()[0].model_copy(update={"stage_outputs": []})
    with pytest.raises(ValueError, match="no document holds executor claims"):
        stitched_session([empty], 10)
