"""The offline engine's part of the answer-kind table (evcli/scope/answers.toml): the search step and the
claim builder each row names, found here by that name.

A search step adds to the general search (the services' alerts, series, logs and runbooks) what its kind
needs once that search is done (a count's lines at the asked level, the most common messages, a
when-question's first line), or runs first because what it finds decides what is searched (`changes`:
its suspects are the services searched; `traces`: the call graph); a breakdown asked of no service counts
every log. A claim builder states the answer from the refs: the answer kind's claims come first, then the
other kinds' in table order.

Invariants: every `plan` and `claims` name of the table is a key here (a test holds them together); a step
only adds calls (a call already wanted is asked once: calls compare by their validated parameters); the
kinds are the Query's (`Ask.kinds`), never read again from the question's words.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from evcli.agents.offline.claims import Claim, Ref
from evcli.agents.offline.payload import Ask, Call
from evcli.agents.offline.queries import (
    LOG_LIMIT,
    changes_call,
    common_calls,
    diagnoses,
    every_log_breakdown,
    level_calls,
)
from evcli.agents.offline.stats_claims import (
    breakdown_claims,
    common_claims,
    count_claims,
    first_line_claims,
    timing_claims,
)
from evcli.agents.offline.traces import trace_calls, trace_claims
from evcli.contracts import ToolInvocation
from evcli.messages import Catalogue
from evcli.scope.answers import row


@dataclass(frozen=True)
class Searched:
    """What a search step reads: the question's reading, the services searched, the calls wanted so far and
    the results known."""

    intent: Ask
    services: list[str]
    calls: list[Call]
    results: dict[str, ToolInvocation]


LEAD, DISCOVERED, FOLLOWING = "lead", "discovered", "following"  # when a step runs


@dataclass(frozen=True)
class Step:
    phase: str
    calls: Callable[[Searched], list[Call]]


def _first_line_calls(searched: Searched) -> list[Call]:
    """A when-question's first matching line: the search for what was asked (a keyword search, else the
    search at the asked level, else the service's overview) again, in the second its stats name as the
    first (it returned the newest)."""
    intent, results = searched.intent, searched.results
    made = [call for call in searched.calls if call.name == "query_logs" and call.key in results]
    made.sort(key=lambda call: (not call.arguments.get("query"), call.arguments.get("level") != intent.level))
    for call in made:
        stats = results[call.key].output.get("stats")
        if not isinstance(stats, dict) or not stats.get("first"):
            continue
        if stats.get("total", 0) <= (call.arguments.get("limit") or 50):
            return []  # every matching line was returned: the first one is among them
        try:
            start = datetime.fromisoformat(str(stats["first"])).replace(microsecond=0)
        except ValueError:
            return []
        end = start + timedelta(seconds=1)
        arguments = {key: value for key, value in call.arguments.items() if key not in ("window", "since", "until")}
        return [
            Call("query_logs", arguments | {"since": start.isoformat(), "until": end.isoformat(), "limit": LOG_LIMIT})
        ]
    return []


def _onset_calls(searched: Searched) -> list[Call]:
    lines = level_calls(searched.intent, searched.services)
    return lines + _first_line_calls(replace(searched, calls=searched.calls + lines))


PLANS: dict[str, Step] = {
    "changes": Step(LEAD, lambda s: [changes_call(s.intent)] if diagnoses(s.intent) else []),
    "traces": Step(LEAD, lambda s: trace_calls(s.intent, s.results)),
    "breakdown": Step(
        DISCOVERED, lambda s: every_log_breakdown(s.intent) if not s.services and s.intent.serves_logs else []
    ),
    "level_lines": Step(FOLLOWING, lambda s: level_calls(s.intent, s.services)),
    "common": Step(FOLLOWING, lambda s: common_calls(s.intent, s.services)),
    "onset": Step(FOLLOWING, _onset_calls),
}

ClaimBuilder = Callable[[Ask, list[Ref], Catalogue], list[Claim]]
CLAIMS: dict[str, ClaimBuilder] = {
    "count": count_claims,
    "breakdown": lambda intent, refs, words: breakdown_claims(refs, words, intent.by) if intent.by else [],
    "common": common_claims,
    "onset": lambda intent, refs, words: (
        timing_claims(refs, words, intent.level) + first_line_claims(intent, refs, words)
    ),
    "traces": trace_claims,
}


def planned(phase: str, searched: Searched) -> list[Call]:
    """The calls of the asked kinds' steps that run in `phase`, in table order (a step named by two kinds
    runs once)."""
    steps = dict.fromkeys(name for kind in searched.intent.kinds for name in row(kind).plan)
    added: list[Call] = []
    for name in steps:
        if PLANS[name].phase == phase:  # each step sees the calls the steps before it added
            added += PLANS[name].calls(replace(searched, calls=searched.calls + added))
    return added


def answer_claims(intent: Ask, refs: list[Ref], words: Catalogue) -> list[Claim]:
    """The claims of the asked kinds' builders in table order, so the answer kind's come first (a builder
    named by two kinds runs once)."""
    builders = dict.fromkeys(name for kind in intent.kinds for name in row(kind).claims)
    return [claim for name in builders for claim in CLAIMS[name](intent, refs, words)]
