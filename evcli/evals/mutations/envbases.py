"""Base sessions from every packaged environment: the offline chain's real sessions on the packaged
suites' questions, so typed-fact mutations edit claims about alerts, series, logs, stats, patterns and
changes that the demo's three sample sessions do not hold.

Questions are split by a hash of their case id: the tune half is the suite's bases, the held-out half
is reported apart (`holdout` in the report) and is never looked at while tuning.
"""

from __future__ import annotations

import hashlib
import tempfile
from functools import cache
from pathlib import Path

from evcli.contracts import SessionDocument

PER_ENV = 3  # questions per environment and split


def split_of(case_id: str) -> str:
    return "holdout" if hashlib.sha256(case_id.encode()).digest()[0] % 2 else "tune"


@cache
def env_bases(split: str) -> tuple[SessionDocument, ...]:
    """Sessions of the offline chain on up to PER_ENV questions per packaged environment in `split`."""
    from evcli.agents.roles import Models
    from evcli.evals.cases import load_cases
    from evcli.gatekeeper.rules import load_rules
    from evcli.pipeline import Pipeline
    from evcli.store.db import TraceStore

    chosen: dict[str, list] = {}
    for case in sorted(load_cases(), key=lambda c: hashlib.sha256(c.id.encode()).hexdigest()):
        if case.question is None or case.follows is not None or case.skip is not None or split_of(case.id) != split:
            continue
        per_env = chosen.setdefault(case.env or "demo", [])
        if len(per_env) < PER_ENV:
            per_env.append(case)
    documents = []
    with tempfile.TemporaryDirectory() as directory, TraceStore(Path(directory) / "bases.db") as store:
        rules, models = load_rules(), Models(default="offline")
        for env in sorted(chosen):
            for case in chosen[env]:
                pipeline = Pipeline(store=store, rules=rules, models=models, env_spec=case.env_spec())
                result = pipeline.ask(case.question)
                document = store.load(result.session_id)
                document.run.annotations["sample"] = {"kind": "env_base", "case": case.id}
                documents.append(document)
    return tuple(documents)
