"""Base sessions from every packaged environment: the offline chain's real sessions on the packaged
suites' questions, so typed-fact mutations edit claims about alerts, series, logs, stats, patterns and
changes that the demo's three sample sessions do not hold.

Questions are split by a hash of their case id: the tune half is the suite's bases, the held-out half
is reported apart (`holdout` in the report) and is never looked at while tuning.
"""

from __future__ import annotations

import hashlib
import tempfile
from collections.abc import Iterator
from functools import cache
from pathlib import Path

from evcli.contracts import SessionDocument

PER_ENV = 3  # questions per environment and split


def split_of(case_id: str) -> str:
    return "holdout" if hashlib.sha256(case_id.encode()).digest()[0] % 2 else "tune"


def _questions(split: str) -> list:
    """The split's single questions (no follow-ups, none skipped), in the order of a hash of their id."""
    from evcli.evals.cases import load_cases

    return [
        case
        for case in sorted(load_cases(), key=lambda c: hashlib.sha256(c.id.encode()).hexdigest())
        if case.question is not None and case.follows is None and case.skip is None and split_of(case.id) == split
    ]


@cache
def env_bases(split: str) -> tuple[SessionDocument, ...]:
    """Sessions of the offline chain on up to PER_ENV questions per packaged environment in `split`."""
    chosen: dict[str, list] = {}
    for case in _questions(split):
        per_env = chosen.setdefault(case.env or "demo", [])
        if len(per_env) < PER_ENV:
            per_env.append(case)
    return tuple(_sessions([case for env in sorted(chosen) for case in chosen[env]]))


def more_bases(split: str) -> Iterator[SessionDocument]:
    """The sessions of the split's other questions, one at a time (for a class env_bases gives no case)."""
    chosen = {document.run.annotations["sample"]["case"] for document in env_bases(split)}
    for case in _questions(split):
        if case.id not in chosen:
            yield from _sessions([case])


def _sessions(cases: list) -> list[SessionDocument]:
    from evcli.agents.roles import Models
    from evcli.gatekeeper.rules import load_rules
    from evcli.pipeline import Pipeline
    from evcli.store.db import TraceStore

    documents = []
    with tempfile.TemporaryDirectory() as directory, TraceStore(Path(directory) / "bases.db") as store:
        rules, models = load_rules(), Models(default="offline")
        for case in cases:
            pipeline = Pipeline(store=store, rules=rules, models=models, env_spec=case.env_spec())
            result = pipeline.ask(case.question)
            document = store.load(result.session_id)
            document.run.annotations["sample"] = {"kind": "env_base", "case": case.id}
            documents.append(document)
    return documents
