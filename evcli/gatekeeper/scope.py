"""Scope rules: does what the session searched cover what the question asked (DESIGN §3)?

One function per `scope.*` rule. Each takes the question scope, the session's searches (and
for some rules the claims) and returns the misses: a `Miss` holds the English one-line message
plus short language-neutral texts of what was asked and what was searched, which the answer's
"asked …; searched …" lines render in the question's language. An empty list: the rule holds.

Invariants:
- Only evidence searches count: successful `query_logs` / `query_metrics` / `query_traces` invocations
  whose evidence status is not `failed` (`lookup_knowledge`, failed and refused calls search nothing).
- "Covered" is read from what each invocation recorded (input params and retrieval details),
  never from what a model says it did.
- Joint coverage: when the question names exactly one service (known or unknown), a phrase,
  token, range or level is only covered by a search of that service. A question naming several
  services does not say which phrase belongs to which, so any search may cover it there.
- The level rule applies only when the question is about which lines match (a level, phrase or
  token asked, or a count): a broad "what is wrong with X?" may search errors first.
- A negative is a `negative_observation` bound to `$.no_evidence`, or an observation stating a zero
  count of a query_traces `$.stats`: both claim no more than their searches searched (a trace search's
  errors_only and operation too).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from evcli.contracts import NO_EVIDENCE_PATH, Claim, Query, ToolInvocation
from evcli.core.text import negated, phrase_pattern
from evcli.core.time import TimeExpressionError, TimeRange, parse_range_text
from evcli.gatekeeper import paths
from evcli.gatekeeper.excerpt import normalize

EVIDENCE_TOOLS = ("query_logs", "query_metrics", "query_traces")  # the searches of a service's own evidence
LEVELS = ("TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL")  # evcli.backends.base.LEVELS, kept import-light
NOTHING = "nothing"


@dataclass(frozen=True)
class Miss:
    message: str  # English one-liner
    asked: str  # language-neutral: `service payments-v3`, `phrase "Accepted publickey"`, a range text
    searched: str  # likewise: what the session's searches covered instead


@dataclass(frozen=True)
class Search:
    """What one evidence invocation searched, as it recorded it."""

    invocation_id: int
    tool: str
    services: frozenset[str]  # normalised names: the call's service and the one it recorded
    keywords: tuple[str, ...]  # normalised
    range: TimeRange | None
    range_text: str
    level: str | None
    level_strict: bool
    state: str | None  # query_metrics: the alert state asked of the backend (None: active)
    errors_only: bool = False  # query_traces: only spans whose status is an error
    operation: str | None = None  # query_traces: only spans of this operation

    @property
    def label(self) -> str:
        return f"#{self.invocation_id} {self.tool}"


def searches(invocations: list[ToolInvocation]) -> list[Search]:
    """The session's evidence searches, in call order."""
    found = []
    for invocation in invocations:
        details = invocation.retrieval_details
        if invocation.tool_name not in EVIDENCE_TOOLS or not invocation.success:
            continue
        if details is None or details.evidence_status == "failed":
            continue
        params = invocation.input_params
        extra = details.model_extra or {}
        services = {str(params.get("service") or ""), details.service or ""}
        keywords = list(details.keywords) or _query_keywords(str(params.get("query") or ""))
        keywords += [str(params[key]) for key in ("alertname", "metric") if params.get(key)]
        level = params.get("level") or extra.get("level")
        found.append(
            Search(
                invocation_id=invocation.invocation_id,
                tool=invocation.tool_name,
                services=frozenset(normalize(name) for name in services if name),
                keywords=tuple(dict.fromkeys(normalize(word) for word in keywords if word)),
                range=_range(details.range),
                range_text=details.range or "",
                level=str(level).upper() if level else None,
                level_strict=bool(params.get("level_strict") or extra.get("level_strict")),
                state=str(params["state"]) if params.get("state") else None,
                errors_only=bool(params.get("errors_only")),
                operation=str(params["operation"]) if params.get("operation") else None,
            )
        )
    return found


def _query_keywords(query: str) -> list[str]:
    from evcli.tools.params import keywords

    try:
        return list(keywords(query))
    except ValueError:
        return query.split()


def _range(text: str | None) -> TimeRange | None:
    if not text:
        return None
    try:
        return parse_range_text(text)
    except TimeExpressionError:
        return None


# --- what a search covers ----------------------------------------------------------------------


def _asked_services(scope: Query) -> list[str]:
    return list(dict.fromkeys([*scope.services, *scope.unknown_services]))


def _in_asked_service(scope: Query, search: Search) -> bool:
    """Joint coverage: with exactly one service named, only its searches count (a name the environment
    does not know as a service: also the searches for it as a keyword, in the logs that write it)."""
    asked = _asked_services(scope)
    if len(asked) != 1:
        return True
    name = asked[0]
    return normalize(name) in search.services or (name in scope.unknown_services and _covers_term(search, name))


def _covers_term(search: Search, term: str) -> bool:
    """The term occurs in the search's keywords (as a phrase, or each of its words as a keyword),
    or it is the service searched."""
    wanted = normalize(term)
    joined = " ".join(search.keywords)
    return wanted in joined or set(wanted.split()) <= set(search.keywords) or wanted in search.services


def _relevant(scope: Query, all_searches: list[Search]) -> list[Search]:
    """The searches about what was asked: in the asked service, and covering an asked phrase or
    token when the question named one (none qualify: every search, so a rule still compares)."""
    terms = [*scope.phrases, *scope.tokens]
    chosen = [
        search
        for search in all_searches
        if _in_asked_service(scope, search) and (not terms or any(_covers_term(search, t) for t in terms))
    ]
    return chosen or all_searches


def _services_text(all_searches: list[Search]) -> str:
    names = sorted({name for search in all_searches for name in search.services})
    return ("services " + ", ".join(names)) if names else NOTHING


def _ranges_text(candidates: list[Search]) -> str:
    texts = list(dict.fromkeys(search.range_text for search in candidates if search.range_text))
    return "; ".join(texts) if texts else NOTHING


# --- the rules ---------------------------------------------------------------------------------


def services_covered(scope: Query, all_searches: list[Search]) -> list[Miss]:
    """Each asked service (known or not) is the service of some search; a host, or a name the environment
    does not know as a service, is searched as a service or as a keyword."""
    misses = []
    for name in _asked_services(scope):
        keyword = name in scope.unknown_services  # no service here: searched as a word of the logs, as a host is
        if not any(
            normalize(name) in search.services or (keyword and _covers_term(search, name)) for search in all_searches
        ):
            misses.append(
                Miss(f"asked service {name} was not searched", f"service {name}", _services_text(all_searches))
            )
    for host in scope.hosts:
        if not any(normalize(host) in search.services or _covers_term(search, host) for search in all_searches):
            misses.append(Miss(f"asked host {host} was not searched", f"host {host}", _services_text(all_searches)))
    return misses


def terms_covered(scope: Query, all_searches: list[Search]) -> list[Miss]:
    """Each quoted phrase and distinctive token occurs in the keywords of a search (of the asked
    service when the question named exactly one)."""
    misses = []
    for kind, terms in (("phrase", scope.phrases), ("token", scope.tokens)):
        for term in terms:
            if any(_in_asked_service(scope, s) and _covers_term(s, term) for s in all_searches):
                continue
            keywords = sorted({word for search in all_searches for word in search.keywords})
            searched = ("keywords " + " ".join(f'"{word}"' for word in keywords)) if keywords else "no keywords"
            misses.append(Miss(f'asked {kind} "{term}" was not searched for', f'{kind} "{term}"', searched))
    return misses


def range_covered(scope: Query, all_searches: list[Search]) -> list[Miss]:
    """When a range was asked, some search about the asked thing searched a range containing it."""
    if scope.range is None:
        return []
    asked = _range(scope.range.range)
    if asked is None:
        return []
    candidates = _relevant(scope, all_searches)
    if any(search.range is not None and _contains(search.range, asked) for search in candidates):
        return []
    return [Miss(f"asked range {scope.range.range} was not searched", scope.range.range, _ranges_text(candidates))]


def _contains(searched: TimeRange, asked: TimeRange) -> bool:
    """An asked range with an open end ("since 14:00") is covered when its bounded end is."""
    if asked.is_bounded:
        return searched.contains(asked)
    return all(searched.contains(moment) for moment in (asked.start, asked.end) if moment is not None)


def level_not_narrower(scope: Query, all_searches: list[Search]) -> list[Miss]:
    """A log search about the asked thing must not filter by a level narrower than asked: with no
    level asked, no level filter at all; with WARN asked, WARN or lower (a non-strict filter
    keeps lines without a level, but still drops the lower levels)."""
    if not (scope.levels or scope.phrases or scope.tokens or scope.wants_count):
        return []
    logs = [search for search in _relevant(scope, all_searches) if search.tool == "query_logs"]
    if not logs:
        return []
    lowest = min((LEVELS.index(level) for level in scope.levels if level in LEVELS), default=None)
    if any(_keeps(search, lowest) for search in logs):
        return []
    asked = f"level {LEVELS[lowest]}" if lowest is not None else "level any"
    searched = "; ".join(sorted({_level_text(search) for search in logs}))
    return [Miss(f"every search filtered a level narrower than asked ({asked})", asked, searched)]


def _keeps(search: Search, lowest: int | None) -> bool:
    if search.level not in LEVELS:
        return True  # no level filter
    if lowest is None:
        return LEVELS.index(search.level) == 0 and not search.level_strict
    return LEVELS.index(search.level) <= lowest


def _level_text(search: Search) -> str:
    if search.level is None:
        return "level any"
    return f"level {search.level}" + (" strict" if search.level_strict else "")


def count_claimed(scope: Query, claims: list[Claim]) -> list[Miss]:
    """A count question has a claim bound to `$.stats` or a `$.patterns[i]`, or to the `$.no_evidence` of a
    service the environment does not know ("how many errors did kafka log?": there is no kafka to count in;
    the excerpt is checked against its ref by the binding rules)."""
    if not scope.wants_count:
        return []
    for claim in claims:
        for binding in claim.evidence_bindings:
            path = paths.item_path(binding.raw_path or "")
            if path == "$.stats" or path.startswith("$.patterns["):
                return []
            if _unknown_service(binding):
                return []
    return [Miss("the question asks for a count and no claim cites $.stats or $.patterns[i]", "count", "no count")]


def _unknown_service(binding) -> bool:
    return binding.raw_path == NO_EVIDENCE_PATH and "unknown service" in (binding.evidence_excerpt or "")


def breakdown_claimed(scope: Query, claims: list[Claim], invocations: list[ToolInvocation]) -> list[Miss]:
    """A which-address, which-path or which-host question (`scope.by`) has a claim bound to the `$.stats`
    of a log search that counted its lines by that field (`count_by`), or to such a search's
    `$.no_evidence` (nothing to count), or to an unknown service's (there is no such service)."""
    if scope.by is None:
        return []
    counted = {
        i.invocation_id
        for i in invocations
        if i.tool_name == "query_logs" and i.input_params.get("count_by") == scope.by
    }
    for claim in claims:
        for binding in claim.evidence_bindings:
            path = paths.item_path(binding.raw_path or "")
            if binding.source_invocation_id in counted and path in ("$.stats", NO_EVIDENCE_PATH):
                return []
            if _unknown_service(binding):
                return []
    return [
        Miss(
            f"the question asks which {scope.by} and no claim cites the $.stats of a search counting by {scope.by}",
            f"by {scope.by}",
            "no breakdown",
        )
    ]


# what answers a why-question: a cause stated as a claim of its own kind
_CAUSE_CLAIMS = frozenset({"hypothesis", "root_cause"})


def why_answered(scope: Query, claims: list[Claim], output: dict) -> list[Miss]:
    """A why-question's answer carries a cause (a hypothesis, or a hypothesis or root_cause claim), or says in
    `missing_info` why it has none."""
    if "why" not in scope.kinds:
        return []
    if output.get("hypotheses") or output.get("missing_info") or any(c.claim_type in _CAUSE_CLAIMS for c in claims):
        return []
    return [Miss("the question asks why and the answer has no cause and says nothing of why", "why", "no cause")]


# States a query_metrics call can return, per `state` parameter (None: active = firing or pending).
_RETURNS = {
    None: {"firing", "pending"},
    "active": {"firing", "pending"},
    "firing": {"firing"},
    "pending": {"pending"},
    "resolved": {"resolved"},
    "suppressed": {"silenced"},
    "any": {"firing", "pending", "resolved", "silenced"},
}
# What the lookups together must be able to return for each asked state: "still firing?" is only
# answered by a lookup that would also show the alert resolved.
_NEEDED = {
    "firing": {"firing"},
    "pending": {"pending"},
    "still_firing": {"firing", "resolved"},
    "resolved": {"resolved"},
    "silenced": {"silenced"},
}


def alert_state_covered(scope: Query, all_searches: list[Search]) -> list[Miss]:
    """An asked alert state was looked up with queries that can return that state."""
    if scope.alert_state is None:
        return []
    wanted_alerts = {normalize(name) for name in scope.alertnames}
    lookups = [
        search
        for search in all_searches
        if search.tool == "query_metrics"
        and (not wanted_alerts or wanted_alerts & set(search.keywords) or not search.keywords)
    ]
    returned = set().union(*(_RETURNS.get(search.state, set()) for search in lookups))
    needed = _NEEDED.get(scope.alert_state, set())
    if needed <= returned:
        return []
    names = ", ".join(scope.alertnames) or "alerts"
    searched = ("alert states " + ", ".join(sorted(returned))) if returned else "no alert lookup"
    return [
        Miss(
            f"asked whether {names} is {scope.alert_state.replace('_', ' ')}; the lookups cannot return that state",
            f"alert state {scope.alert_state}",
            searched,
        )
    ]


# --- negative observations ---------------------------------------------------------------------

_LOG_SOURCE = re.compile(r"\b(?:logged|logs?|log lines?|lines?)\b|日志", re.IGNORECASE)
_LEVEL_WORDS = (("DEBUG", r"debug"), ("INFO", r"info"), ("WARN", r"warn(?:ings?|s)?|警告"), ("ERROR", r"errors?|错误"))
_LEVEL_ORDER = ("TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL")


_LAST = re.compile(
    r"\b(?:last|past|previous)\s+(\d+)\s*(minutes?|mins?|m|hours?|hrs?|h|days?|d)\b"
    r"|(?:最近|过去)\s*(\d+)\s*(分钟|小时|天)",
    re.IGNORECASE,
)
_DAYS = re.compile(r"\b(?:today|yesterday|all day|this week)\b|今天|昨天|全天|整天|本周", re.IGNORECASE)
# a time of day, not the zone offset of an ISO timestamp (`09:14:00+01:00`, `…:00.000-05:00`)
_CLOCK = re.compile(
    r"(?<![\d:])(?<!:\d\d:\d\d[+-])(?<!\.\d{3}[+-])(?<!\.\d{6}[+-])"
    r"([01]?\d|2[0-3]):([0-5]\d)(?::[0-5]\d)?(?![\d:])"
)


def negative_within_searched(
    scope: Query, claims: list[Claim], invocations: list[ToolInvocation], widening_words: tuple[str, ...] = ()
) -> list[Miss]:
    """A negative_observation claims no wider scope than its `$.no_evidence` states: no universal
    words, no service or host other than the one searched (as a service or a keyword), no time outside the range searched."""
    by_id = {invocation.invocation_id: invocation for invocation in invocations}
    all_searches = searches(invocations)
    names = {normalize(n) for n in [*_asked_services(scope), *scope.hosts]} | {
        name for search in all_searches for name in search.services
    }
    misses = []
    for claim in claims:
        bound = _negative_searches(claim, by_id, invocations)
        if not bound:
            continue
        cited = searches(bound)
        problem = _widening(claim.claim_text or "", cited, names, phrase_pattern(widening_words))
        if problem:
            stated = "; ".join(f"{_service_of(s)} {s.range_text}".strip() for s in cited) or NOTHING
            misses.append(Miss(f"negative observation {claim.claim_id} claims {problem}", problem, stated))
    return misses


# a trace count the claim states as none: the number 0 (not inside 10, 0.5 or 1,000)
_ZERO = re.compile(r"(?<![\d.,])0(?![\d]|[.,]\d)")
ZERO_COUNT_TOOLS = ("query_traces",)


def _negative_searches(claim: Claim, by_id: dict[int, ToolInvocation], invocations: list[ToolInvocation]) -> list:
    """The searches a negative claim rests on: a negative_observation's `$.no_evidence`, or the trace searches
    whose `$.stats` an observation cites stating a zero count ("gateway had 0 errors")."""
    if claim.claim_type == "negative_observation":
        return [
            invocation
            for binding in claim.evidence_bindings
            if binding.raw_path == NO_EVIDENCE_PATH
            for invocation in [by_id.get(binding.source_invocation_id) or _only_empty(binding, invocations)]  # type: ignore[arg-type]
            if invocation is not None
        ]
    text = claim.claim_text or ""
    if claim.claim_type != "observation" or not (_ZERO.search(text) or negated(normalize(text))):
        return []
    return [
        invocation
        for binding in claim.evidence_bindings
        if binding.tool_name in ZERO_COUNT_TOOLS and paths.item_path(binding.raw_path or "") == "$.stats"
        for invocation in [by_id.get(binding.source_invocation_id)]  # type: ignore[arg-type]
        if invocation is not None
    ]


# words that say a claim speaks of failures (a search of error spans only can show no more)
_ERROR_WORDS = re.compile(
    r"(?<![\w-])(?:errors?|erred|errored|erroring|fail(?:s|ed|ing|ures?)?)(?![\w-])|错误|失败|报错|出错", re.I
)


def _traces_narrower(text: str, cited: list[Search]) -> str | None:
    """What a claim on trace searches states beyond them: spans of every status when each searched errors only,
    of every operation when each searched one operation."""
    traced = [search for search in cited if search.tool == "query_traces"]
    if not traced:
        return None
    if all(search.errors_only for search in traced) and not _ERROR_WORDS.search(text):
        return "every status (searched errors_only)"
    operations = [search.operation for search in traced]
    if all(operations) and not any(normalize(str(operation)) in normalize(text) for operation in operations):
        return f"every operation (searched operation {', '.join(sorted(set(map(str, operations))))})"
    return None


def _level_below_searched(text: str, cited: list[Search]) -> str | None:
    """A level the claim speaks of that is below every level filter its log searches applied
    ("no warnings" on a search of ERROR lines)."""
    floors = [search.level.upper() for search in cited if search.tool == "query_logs" and search.level]
    if not floors or len(floors) < len([s for s in cited if s.tool == "query_logs"]):
        return None
    lowest = min(_LEVEL_ORDER.index(f) if f in _LEVEL_ORDER else 0 for f in floors)
    for level, words in _LEVEL_WORDS:
        match = re.search(rf"(?<![\w-])(?:{words})(?![\w-])", text, re.IGNORECASE)
        if match and _LEVEL_ORDER.index(level) < lowest:
            return f'"{match.group(0)}" (searched {_LEVEL_ORDER[lowest]} and above)'
    return None


def _only_empty(binding, invocations: list[ToolInvocation]) -> ToolInvocation | None:
    """For a binding without an id, the invocation the Gatekeeper back-fills it from: the one of its
    tool that found nothing, or of several such, the one whose `$.no_evidence` text holds its excerpt."""
    empty = [
        invocation
        for invocation in invocations
        if invocation.tool_name == binding.tool_name
        and invocation.retrieval_details is not None
        and invocation.retrieval_details.evidence_status == "no_evidence"
    ]
    if len(empty) > 1:
        excerpt = normalize(binding.evidence_excerpt or "")
        empty = [
            invocation
            for invocation in empty
            for ref in invocation.retrieval_details.evidence_refs or []  # type: ignore[union-attr]
            if ref.raw_path == NO_EVIDENCE_PATH and excerpt and excerpt in normalize(ref.text)
        ]
    return empty[0] if len(empty) == 1 else None


def _service_of(search: Search) -> str:
    return ("service " + ",".join(sorted(search.services))) if search.services else ""


def _widening(text: str, cited: list[Search], names: set[str], universal_words: re.Pattern[str]) -> str | None:
    """What in the claim text is wider than what its cited searches searched, or None."""
    universal = universal_words.search(text)
    if universal:
        return f'"{universal.group(0)}"'
    if cited and all(search.tool != "query_logs" for search in cited):
        source = _LOG_SOURCE.search(text)
        if source:
            return f'"{source.group(0)}" (a {cited[0].tool} search read no logs)'
    level = _level_below_searched(text, cited) or _traces_narrower(text, cited)
    if level:
        return level
    normalized = normalize(text)
    # a name is searched as a service, or as a word the lines had to hold (a host: "dn-07")
    searched = {name for search in cited for name in (*search.services, *search.keywords)}
    for name in sorted(names - searched):
        if re.search(rf"(?<![\w-]){re.escape(name)}(?![\w]|-\w)", normalized):
            return f"service {name}"
    ranges = [search.range for search in cited if search.range is not None and search.range.is_bounded]
    if not ranges:
        return None
    for match in _LAST.finditer(text):
        amount, unit = (match.group(1), match.group(2)) if match.group(1) else (match.group(3), match.group(4))
        span = timedelta(seconds=int(amount) * _unit_seconds(unit))
        if not any(_span(r) + timedelta(minutes=1) >= span for r in ranges):
            return f'"{match.group(0)}"'
    day = _DAYS.search(text)
    if day and not any(_span(r) >= timedelta(hours=24) for r in ranges):
        return f'"{day.group(0)}"'
    for match in _CLOCK.finditer(text):
        if not any(_clock_inside(r, int(match.group(1)), int(match.group(2))) for r in ranges):
            return f'"{match.group(0)}"'
    return None


def _unit_seconds(unit: str) -> int:
    first = unit.lower()[:1]
    return 60 if first in "m分" else 3600 if first in "h小" else 86400


def _span(found: TimeRange) -> timedelta:
    assert found.start is not None and found.end is not None
    return found.end - found.start


def _clock_inside(found: TimeRange, hour: int, minute: int) -> bool:
    """Whether hour:minute (to the minute) on a day the range touches lies in the range, read in
    the range's zone or in UTC (a claim may state either)."""
    assert found.start is not None and found.end is not None
    start, end = found.start.replace(second=0, microsecond=0), found.end + timedelta(minutes=1)
    for zone in (found.start.tzinfo, UTC):
        for day in {found.start.astimezone(zone).date(), found.end.astimezone(zone).date()}:
            if start <= datetime(day.year, day.month, day.day, hour, minute, tzinfo=zone) < end:
                return True
    return False
