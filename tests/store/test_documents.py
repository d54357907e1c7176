"""Session documents on disk: an exported file in the first config shape is upgraded on import."""

from __future__ import annotations

import json

from evcli.contracts import ROLES
from evcli.store.db import TraceStore
from evcli.store.documents import read_document, to_canonical
from tests.conftest import sample


def test_a_first_shape_document_imports_upgraded_and_reexports_stably(tmp_path, db_path):
    data = json.loads(sample("narrow-payment-highcpu").read_text(encoding="utf-8"))
    data["run"]["config"] = {"model": "offline", "env": "demo"}
    old = tmp_path / "old.json"
    old.write_text(json.dumps(data), encoding="utf-8")

    store = TraceStore(db_path)
    session_id, created = store.import_document(read_document(old))
    stored = store.load(session_id)
    assert created and stored.run.config.models == {role: "offline" for role in ROLES} and stored.run.config.env == {}
    row = store.conn.execute("SELECT config FROM diagnosis_run WHERE session_id = ?", [session_id]).fetchone()
    assert json.loads(row[0]) == {"env": {}, "models": {role: "offline" for role in ROLES}}

    exported = tmp_path / "exported.json"
    exported.write_text(to_canonical(stored), encoding="utf-8")
    assert store.import_document(read_document(exported)) == (session_id, False)  # the same document, unchanged
    assert store.import_document(read_document(old)) == (session_id, False)  # the old file reads as the same document
