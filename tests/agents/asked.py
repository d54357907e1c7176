"""A question asked as a user asks it (`evcli ask --json`, the whole chain on an environment directory) and what
its answer cites: each claim with the recorded invocations its evidence binds, read from the trace store.

Tests of the offline engine assert this (the verdict, what the claims state, and the service, keywords, level
and range of the searches the claims cite), never the list of calls that led there: how the engine searches
may change, what it answers and where the answer's evidence came from may not."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evcli.contracts import ToolInvocation
from evcli.store.db import TraceStore
from tests.cli._util import evcli


@dataclass(frozen=True)
class Answer:
    """What `evcli ask --json` printed, with the session's invocations by id."""

    document: dict[str, Any]
    invocations: dict[int, ToolInvocation]

    @property
    def verdict(self) -> str:
        return self.document["verdict"]

    @property
    def claims(self) -> list[dict[str, Any]]:
        return self.document["claims"]

    @property
    def missing_info(self) -> list[str]:
        return self.document["missing_info"]

    def texts(self) -> list[str]:
        return [claim["claim_text"] for claim in self.claims]

    def claim(self, *fragments: str) -> dict[str, Any]:
        """The first claim whose text holds every fragment."""
        found = [claim for claim in self.claims if all(fragment in claim["claim_text"] for fragment in fragments)]
        assert found, (fragments, self.texts())
        return found[0]

    def cited(self, claim: dict[str, Any]) -> list[ToolInvocation]:
        """The invocations the claim's evidence binds, in binding order."""
        return [self.invocations[evidence["source_invocation_id"]] for evidence in claim["evidence"]]

    def search(self, claim: dict[str, Any]) -> ToolInvocation:
        """The one invocation the claim cites."""
        [invocation] = {i.invocation_id: i for i in self.cited(claim)}.values()
        return invocation


def ask(question: str, env: str | Path, db: Path) -> Answer:
    """`evcli ask QUESTION --env ENV --db DB --json`, which must exit 0, and the session it stored."""
    run = evcli("ask", question, "--env", env, "--db", db, "--json")
    assert run.exit_code == 0, run
    document = run.json()
    with TraceStore(db) as store:
        invocations = store.load(document["session_id"]).invocations
    return Answer(document, {invocation.invocation_id: invocation for invocation in invocations})


def service_of(invocation: ToolInvocation) -> str | None:
    """The service the invocation searched (None: every log, or every service's alerts)."""
    return invocation.input_params.get("service")


def keywords_of(invocation: ToolInvocation) -> set[str]:
    """The keywords every line the search returned holds, as the search recorded them."""
    details = invocation.retrieval_details
    return set(details.keywords) if details else set()


def level_of(invocation: ToolInvocation) -> str | None:
    return invocation.input_params.get("level")


def range_of(invocation: ToolInvocation) -> str | None:
    """The absolute range the invocation searched, as it recorded it (`START..END`, with zones)."""
    details = invocation.retrieval_details
    return details.range if details else None


def origin_of(invocation: ToolInvocation) -> str | None:
    """Where the searched range came from: "question/call", "whole snapshot" or "live default 1h"."""
    details = invocation.retrieval_details
    return details.range_origin if details else None


def write_env(root: Path, files: dict[str, str]) -> Path:
    """An environment directory holding `files` (relative path: text)."""
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def logback(day: str, at: str, severity: str, logger: str, message: str) -> str:
    """One line as logback writes it (`2026-05-01 09:20:00,000 WARN [main] logger - message`)."""
    return f"{day} {at},000 {severity} [main] {logger} - {message}\n"
