"""Answers stated by a log search's `$.stats` and `$.patterns` rather than by its lines: how many (the count
of what was asked), which address/host/path the most (`count_by`), the most common messages (templates by
count) and when it started or stopped (the first and last line), each quoted with the filters searched."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from evcli.agents.offline.claims import SIGNAL, Claim, Ref, binding_of, claim_of, log_claims
from evcli.agents.offline.payload import Ask
from evcli.backends.base import LEVELS
from evcli.contracts import ToolInvocation
from evcli.messages import Catalogue
from evcli.tools.query_logs import log_time

# --- counts -----------------------------------------------------------------------------------

COUNT_CLAIM_CAP = 2


def _asked_stats(refs: list[Ref], names: frozenset[str] | None = None) -> list[Ref]:
    """`$.stats` of the searches for what was asked: the keyword searches when words were searched (none
    when all of them found nothing: the overview's lines are not what was asked), else the level
    searches. What is counted (`names`: the names the question asked) is not a back-off search left
    with fewer than BACKOFF_COUNTED_WORDS other words of one that found nothing."""
    stats = [ref for ref in refs if ref.ref.raw_path == "$.stats" and ref.item_stats]
    searched = {ref.invocation.invocation_id: ref.invocation for ref in refs if _words_of(ref.invocation)}
    if not searched:
        return stats
    return [
        ref
        for ref in stats
        if _words_of(ref.invocation)
        and not (
            names is not None
            and len(_words_of(ref.invocation) - names) < BACKOFF_COUNTED_WORDS
            and any(_narrows(other, ref.invocation) for other in searched.values() if other is not ref.invocation)
        )
    ]


# a back-off search (fewer of the words of one that found nothing) counts what was asked when it kept at
# least this many of the question's words besides names: "contact RM" for "fail to contact the RM", not "su"
# for "abnormal exits of su", nor "app-02 payments-worker" for "payments-worker stopped on app-02"
BACKOFF_COUNTED_WORDS = 2


def _words_of(invocation: ToolInvocation) -> frozenset[str]:
    details = invocation.retrieval_details
    if invocation.tool_name != "query_logs" or details is None:
        return frozenset()
    return frozenset(word.lower() for word in details.keywords or [])


def _narrows(wider: ToolInvocation, narrower: ToolInvocation) -> bool:
    """Whether `wider` searched every word of `narrower` and more, in the same service, range and level."""
    if not _words_of(narrower) < _words_of(wider):
        return False
    same = ("service", "since", "until", "window", "level")
    return all(wider.input_params.get(key) == narrower.input_params.get(key) for key in same)


def count_claims(intent: Ask, refs: list[Ref], words: Catalogue) -> list[Claim]:
    """A count question is answered from `$.stats` of the searches for what it asked, the excerpt quoting
    the total and range and the filters that were searched."""
    if not intent.wants_count:
        return []
    claims = []
    asked = (*intent.services, *intent.unknown_services, *intent.mentioned, *intent.hosts)
    names = frozenset(name.lower() for name in asked)
    stats = _asked_stats(refs, names)
    # a level asked ("how many errors"): the searches at that level, when there are any
    stats = [ref for ref in stats if ref.invocation.input_params.get("level") == intent.level] or stats
    for ref in stats[:COUNT_CLAIM_CAP]:
        head, _, _ = ref.ref.text.partition("; ")
        filters = ref.ref.text[ref.ref.text.rfind("; filters: ") + 2 :]
        details = ref.invocation.retrieval_details
        text = words(
            "count.claim",
            tool=ref.invocation.tool_name,
            counted=head.removeprefix("stats: "),
            filters=filters.removeprefix("filters: "),
        )
        claims.append(claim_of("observation", text, ref, f"{head} … {filters}" if details else head))
    return claims


def breakdown_claims(refs: list[Ref], words: Catalogue, by: str) -> list[Claim]:
    """ "Which IP …?" ("which host …?") is answered by the matching lines per address (instance) `$.stats`
    states for the searches that counted them (`count_by`), the excerpt quoting the total and range, the
    counts and the filters."""
    claims: list[Claim] = []
    said: set[str] = set()
    label = f"by {by}: "
    stats = [ref for ref in refs if ref.ref.raw_path == "$.stats" and ref.item_stats]
    counted = [ref for ref in stats if f"; {label}" in ref.ref.text]
    for ref in counted:
        head, _, _ = ref.ref.text.partition("; ")
        addresses = ref.ref.text[ref.ref.text.find(f"; {label}") + 2 : ref.ref.text.rfind("; filters: ")]
        if addresses == f"{label}-" or addresses in said or len(claims) == COUNT_CLAIM_CAP:
            continue  # no matching line names one, or the same counts came from another search
        said.add(addresses)
        filters = ref.ref.text[ref.ref.text.rfind("; filters: ") + 2 :]
        text = words(
            f"{by}.claim",
            addresses=addresses.removeprefix(label),
            counted=head.removeprefix("stats: "),
            filters=filters.removeprefix("filters: "),
        )
        claims.append(claim_of("observation", text, ref, f"{head} … {addresses} … {filters}"))
    return claims


COMMON_CLAIM_CAP = 3


def common_claims(intent: Ask, refs: list[Ref], words: Catalogue) -> list[Claim]:
    """ "What are the most common errors?" is answered by the message templates `$.patterns` counts for
    the searches at the asked level without keywords, most frequent first: templates whose example starts
    a record (a traceback's frames repeat as often as the error above them and say less), at the asked
    level or above; templates of lines without a level only when none has one and they say trouble."""
    level = intent.level
    searched = [
        ref
        for ref in refs
        if ref.array == "patterns"
        and ref.invocation.tool_name == "query_logs"
        and not ref.invocation.input_params.get("query")
        and ref.invocation.input_params.get("level") == level
    ]
    heads = [
        ref for ref in searched if ref.item.get("starts_record") is True and isinstance(ref.item.get("count"), int)
    ]
    leveled = [ref for ref in heads if ref.item.get("level") and _at_least(str(ref.item["level"]), level)]
    if not leveled:
        leveled = [ref for ref in heads if not ref.item.get("level") and SIGNAL.search(str(ref.item.get("template")))]
    leveled.sort(key=lambda ref: -ref.item["count"])
    claims: list[Claim] = []
    said: set[str] = set()
    for ref in leveled:
        item = ref.item
        template = str(item.get("template") or "")
        if not template or template in said:
            continue
        said.add(template)
        service = str(ref.invocation.input_params.get("service") or "")
        # the service is named by the search's filters, which its stats state
        named = f"filters: service={service}"
        stats = next((r for r in refs if r.invocation is ref.invocation and r.ref.raw_path == "$.stats"), None)
        if stats is None or named not in stats.ref.text:
            continue
        excerpt, _, _ = ref.ref.text.partition(" — example: ")
        key = "pattern.claim" if item.get("level") else "pattern.claim.unleveled"
        text = words(
            key,
            service=service,
            template=template,
            count=item["count"],
            level=item.get("level") or "",
            first=item.get("first"),
            last=item.get("last"),
        )
        claim = claim_of("observation", text, ref, excerpt)
        claim["evidence_bindings"].append(binding_of(stats, named))
        claims.append(claim)
        if len(claims) == COMMON_CLAIM_CAP:
            break
    return claims


def _at_least(level: str, asked: str | None) -> bool:
    """Whether a line's level is the asked one or above (any level, when none was asked)."""
    level = level.upper()
    return asked is None or (level in LEVELS and LEVELS.index(level) >= LEVELS.index(asked))


_FIRST_LAST = re.compile(r"first (?P<first>\S+), last (?P<last>\S+)")


def _first_epoch(stamp: Any) -> float:
    """A stats `first` stamp as epoch seconds (none: last)."""
    try:
        return datetime.fromisoformat(str(stamp)).timestamp()
    except ValueError:
        return float("inf")


def timing_claims(refs: list[Ref], words: Catalogue, level: str | None = None) -> list[Claim]:
    """ "When did it start?" is answered by the first and last matching line `$.stats` states for the
    searches of what was asked (the newest lines a search returns are not when it started), the
    excerpt quoting the total, range, first and last and the filters searched."""
    claims: list[Claim] = []
    said: set[str] = set()
    # a level asked ("the first error"): the searches at that level, when there are any
    stats = _asked_stats(refs)
    stats = [ref for ref in stats if ref.invocation.input_params.get("level") == level] or stats
    # the earliest first line first: "when did the deadlocks start?" is the database's 14:02:07, not the
    # client's 14:02:56 that logged the deadlock after it
    stats.sort(key=lambda ref: _first_epoch(ref.item_stats.get("first")))
    for ref in stats:
        head, _, rest = ref.ref.text.partition("; ")
        when, _, _ = rest.partition("; ")
        found = _FIRST_LAST.fullmatch(when)
        if found is None or found["first"] in said or len(claims) == COUNT_CLAIM_CAP:
            continue  # nothing matched (no first or last line), or another search found the same first line
        said.add(found["first"])
        filters = ref.ref.text[ref.ref.text.rfind("; filters: ") + 2 :]
        details = ref.invocation.retrieval_details
        text = words(
            "timing.claim",
            first=found["first"],
            last=found["last"],
            counted=head.removeprefix("stats: "),
            filters=filters.removeprefix("filters: "),
        )
        excerpt = f"{head}; {when}"
        claims.append(claim_of("observation", text, ref, f"{excerpt} … {filters}" if details else excerpt))
    return claims


def first_line_claims(intent: Ask, refs: list[Ref], words: Catalogue) -> list[Claim]:
    """The first matching lines a when-question's searches state (`$.stats` first), as returned by a
    search of that second: the line that started it, quoted."""
    firsts = set()
    for ref in _asked_stats(refs):
        found = _FIRST_LAST.search(ref.ref.text)
        if found:
            firsts.add(found["first"])
    first_lines = [ref for ref in refs if ref.array == "logs" and log_time(ref.item) in firsts]
    return log_claims(intent, first_lines, words, "observation", cap=2, symptoms_only=False)
