"""Query planning: which tool calls a task wants, shared by the Planner (which
names them) and the Executor (which makes them).

Calls search for what the question names (DESIGN §6): phrases and tokens verbatim and together,
the content words the environment's own logs contain (its vocabulary), in the asked range
(since/until; none named: the backend's default, the whole snapshot or a live backend's last
hour), with a level filter only when a level was asked, and the named alert in any state when
a state was asked. A service or host the environment does not know gets its own call, whose
no-evidence result names the close names. A narrow task makes its precise queries and never
widens them after no evidence (seeds 2.4). A broad task finds the services (named, else where
the question's words occur, else those with firing alerts), reads their alerts and series,
the runbooks once, each service's WARN+ logs, then the asked phrases and words. The words a question is
read with here (link words, words a runbook lookup leaves out) are `word.*` groups of the question grammar
(evcli/scope/grammar/<language>.toml).
"""

from __future__ import annotations

import re
from typing import Any

from evcli.agents.offline.payload import Ask, Call
from evcli.backends.base import LEVELS
from evcli.messages import catalogue
from evcli.scope.glossary import alternatives
from evcli.scope.grammar import words as grammar_words
from evcli.tools.params import MAX_KEYWORDS, keywords

RETRY_WINDOWS = ("2h", "6h")  # what an evidence retry widens the question's own window to
LOG_LIMIT = 20
KNOWLEDGE_LIMIT = 12  # the matching runbook's checks may rank below other runbooks' blocks
NAMED_SERVICE_CAP = 3
DISCOVERED_SERVICE_CAP = 2
UNKNOWN_CAP = 2
JOINT_TERMS = 3  # adjacent content words a broad task searches together
ALTERNATIVE_SEARCHES = 2  # searches for the alternative English words of what a Chinese word asks
# asked states an active-only search would miss ("still firing?" must see the alert resolved)
ANY_STATE_ASKED = frozenset({"still_firing", "resolved", "silenced"})
QUERY_CHARS = 200  # query_logs' `query` length limit


def asked_window(intent: Ask) -> dict[str, str]:
    """The asked range as call arguments: since/until when the question names a range, its relative
    window for a session stored before scopes, none when it names no time (the backend's default)."""
    if intent.window:
        return {"window": intent.window}
    return {key: value for key, value in (("since", intent.since), ("until", intent.until)) if value}


def _level(intent: Ask) -> dict[str, str]:
    """A level filter only when the question asked for one: a phrase or token search keeps every line."""
    return {"level": intent.level} if intent.level else {}


def _quoted(term: str) -> str:
    if not re.search(r"[\s\"']", term):
        return term
    return f"'{term}'" if '"' in term else f'"{term}"'


def _log_query(*terms: str) -> str:
    """Keywords that must all occur (evcli.tools.params.keywords): a phrase stays one keyword."""
    query = ""
    for term in [term for term in terms if term.strip()][:MAX_KEYWORDS]:
        candidate = f"{query} {_quoted(term)}".strip()
        if len(candidate) > QUERY_CHARS:
            break
        query = candidate
    return query


def _content_terms(intent: Ask) -> list[str]:
    """The question's words that the environment's logs contain (phrases and tokens are searched apart)."""
    return [term for term in intent.terms if term not in intent.exact and intent.in_logs(term)]


def _where(intent: Ask, terms: list[str], cap: int) -> list[str]:
    """Services whose logs contain the terms, most matching lines first (the question names none)."""
    counts: dict[str, int] = {}
    for term in terms:
        for service, count in intent.found_in(term).items():
            counts[service] = counts.get(service, 0) + count
    return sorted(counts, key=lambda service: -counts[service])[:cap]


def unknown_calls(intent: Ask, question: str) -> list[Call]:
    """One call per service or host the environment does not know, asking it what the question asks (its
    logs with the phrases, tokens, words written and level asked when the question names any of them,
    else its alerts and series): the call's `$.no_evidence`
    names the close names, and states that what was asked was asked of the name the question gave."""
    # "mysql slow queries": words written in the question are asked of its logs; "out of disk" of its series.
    # No vocabulary tells which words a log of an unknown name holds: every word written is asked of it
    other_words = [term for term in intent.terms if term not in intent.unknown_services and _written(question, term)]
    if not (intent.exact or intent.levels or other_words or intent.names_logs):
        return [
            Call("query_metrics", {"service": name} | asked_window(intent))
            for name in intent.unknown_services[:UNKNOWN_CAP]
        ]
    asked = [*intent.exact, *_not_implied(list(intent.exact), other_words)]
    arguments: dict[str, Any] = {"query": _log_query(*asked)} if asked else {}
    arguments |= _level(intent) | asked_window(intent)
    return [Call("query_logs", {"service": name} | arguments) for name in intent.unknown_services[:UNKNOWN_CAP]]


def _not_implied(exact: list[str], words: list[str]) -> list[str]:
    """The words a search for the phrases and tokens and the other words does not already imply: none a phrase
    holds ("connection" of "connection refused"), none holding another ("timeouts" where its stem "timeout" is
    asked, which finds it too)."""
    folded = [term.lower() for term in (*exact, *words)]
    return [
        word
        for word in dict.fromkeys(words)
        if not any(word.lower() in term for term in folded[: len(exact)])
        and not any(other != word.lower() and other in word.lower() for other in folded)
    ]


def _alert_call(intent: Ask, service: str | None) -> Call:
    """The named alert in any state when a state or a range was asked ("still firing?" must see it resolved,
    "is it firing?" must see it inhibited or silenced: its state is the answer; "was zookeeper down this
    morning?" asks what it was then, not whether it fires now)."""
    arguments: dict[str, Any] = {"service": service} if service else {}
    arguments |= {"alertname": intent.alertnames[0]} | asked_window(intent)
    if intent.alert_state is not None or intent.since or intent.until:
        arguments["state"] = "any"
    return Call("query_metrics", arguments)


def _holding_all(intent: Ask, terms: list[str], cap: int) -> list[str]:
    """Services whose logs contain every one of the terms, most matching lines first."""
    if intent.vocabulary is None or not terms:
        return []
    common = set.intersection(*(set(intent.found_in(term)) for term in terms))
    return sorted(common, key=lambda service: -sum(intent.found_in(term)[service] for term in terms))[:cap]


def _link(between: list[str]) -> str:
    """What may stand between two words asked together: link words (`word.link`: "for", "from"; and the cue
    words of a when- or which-question: "start", "most"), and words no log holds."""
    words = "|".join(re.escape(word) for word in (*sorted(grammar_words("word.link")), *between))
    return rf"(?:\s+(?:{words}))*\s+"


def _written(question: str, term: str) -> bool:
    return re.search(re.escape(term), question, re.IGNORECASE) is not None


def _joined(question: str, seeds: list[str], terms: list[str], between: list[str] | None = None) -> list[str]:
    """The seeds and the words written next to them in the question ("PHP Notice", "session expired",
    "password for root"): what a count counts is the words asked together, not every word of the question.
    Words no log holds (`between`) stand between them as a link word does ("failed password attempts
    for root": failed, password and root)."""
    link = _link(between or [])
    group = list(seeds)
    grown = True
    while grown:
        grown = False
        for term in terms:
            if term in group:
                continue
            for seed in group:
                # a word searched by its stem is written whole ("block" in "blocking")
                pair = rf"{re.escape(seed)}\w*{link}{re.escape(term)}|{re.escape(term)}\w*{link}{re.escape(seed)}"
                if re.search(pair, question, re.IGNORECASE):
                    group.append(term)
                    grown = True
                    break
    return group


def _together(intent: Ask, question: str, seeds: list[str], services: list[str], join: bool = True) -> list[list[str]]:
    """The keywords of the searches for what was asked together: the seeds with the content words written
    next to them, and one English word of each word the glossary translated ("Redis 超时": Redis with
    timeout, and Redis with "timed out"), each alternative a search of its own (those the services' logs
    hold; at most ALTERNATIVE_SEARCHES)."""
    terms = _content_terms(intent)
    written = [term for term in terms if _written(question, term)]
    head = _joined(question, seeds, written, _unheld(intent)) if join else list(seeds)
    queries = [head]
    for group in alternatives([term for term in terms if term not in written and term not in head]):
        held = [term for term in group if _held(intent, term, services)]
        queries = [query + [term] for query in queries for term in held or group[:1]][:ALTERNATIVE_SEARCHES]
    return queries


def _unheld(intent: Ask) -> list[str]:
    """The question's words no log holds ("attempts"): they may stand between words asked together."""
    return [term for term in intent.terms if term not in intent.exact and not intent.in_logs(term)]


def _held(intent: Ask, term: str, services: list[str]) -> bool:
    found = intent.found_in(term)
    return any(service in found for service in services) if services else bool(found)


def _exact_absent(intent: Ask, services: list[str]) -> bool:
    """Whether no log of the services (of the environment, when none is named) holds any phrase or token
    asked (known only with a vocabulary)."""
    if intent.vocabulary is None:
        return False
    return not any(
        service in intent.found_in(term) if services else intent.found_in(term)
        for term in intent.exact
        for service in services or [""]
    )


# a word naming a machine or component, not a kind of thing: letters and digits together (tn230, dn-07, db2)
_NAME_LIKE = re.compile(r"(?=[\w-]*\d)(?=[\w-]*[A-Za-z])[A-Za-z][\w-]*")


def exact_calls(intent: Ask, question: str, services: list[str], limit: int | None = None) -> list[Call]:
    """Phrases and tokens searched verbatim and together, in each named service, else in the services
    whose logs contain them all, else in all logs."""
    if not intent.exact:
        return []
    # what was asked: the phrases and tokens with the words asked with them, together; a name-like word of a
    # count ("how many I/O errors did tn230 log": a node) is one more thing every counted line must hold,
    # where some log holds them all
    seeds = list(intent.exact)
    named = [term for term in _content_terms(intent) if _NAME_LIKE.fullmatch(term) and term not in seeds]
    if not services and intent.wants_count and named and _holding_all(intent, seeds + named, 1):
        seeds += named
    services = services or _holding_all(intent, seeds, DISCOVERED_SERVICE_CAP)
    # a plain word asked verbatim ("root") is searched with the words written next to it ("failed password
    # for root"); an address, path or code is specific alone ("who hit /wp-login.php")
    join = (
        intent.wants_count
        or intent.by is not None  # "which IP is ufw blocking most on app-02": what is counted per IP
        or any(re.fullmatch(r"[A-Za-z]+", term) for term in intent.exact)
    )
    verbatim: list[Call] = []
    for words in _together(intent, question, seeds, services, join):
        arguments: dict[str, Any] = {"query": _log_query(*words)} | _level(intent) | asked_window(intent)
        arguments |= {"limit": limit} if limit else {}
        verbatim += [Call("query_logs", {"service": service} | arguments) for service in services]
        verbatim += [] if services else [Call("query_logs", arguments)]  # no service holds them all: every log
    classed = _classed_calls(intent, services, limit)
    by_class = _status_class_calls(intent, services, limit)
    # a class asked alone ("did nginx return any 5xx?") is written in no log: the level it implies is searched
    # before the verbatim search (a narrow task's guard refuses any search after one that found nothing)
    return classed + verbatim + by_class if classed else by_class + verbatim


# an access log's line has the level its status implies: a status class asked is searched at that level too
_STATUS_LEVELS = {"4": "WARN", "5": "ERROR"}


def is_status_class(term: str) -> bool:
    """A status class asked ("5xx"), which no log writes as such."""
    return re.fullmatch(r"[1-5]xx", term, re.IGNORECASE) is not None


def _classed_calls(intent: Ask, services: list[str], limit: int | None) -> list[Call]:
    """ "did 203.0.113.77 get any 5xx?": the other tokens asked, at the level the class implies (an access
    log's 5xx line is ERROR), first: their lines holding a status of the class answer it ("5xx" itself is
    written in no log, and its verbatim search that follows finds nothing)."""
    classes = [term for term in intent.exact if is_status_class(term)]
    others = [term for term in intent.exact if not is_status_class(term)]
    level = _STATUS_LEVELS.get(classes[0][0]) if classes else None
    if not (level and others) or intent.level:
        return []
    services = services or _holding_all(intent, others, DISCOVERED_SERVICE_CAP)
    # strict: an access log's lines of other statuses have no level and would fill the newest lines returned
    arguments: dict[str, Any] = {"query": _log_query(*others), "level": level, "level_strict": True}
    arguments |= asked_window(intent) | ({"limit": limit} if limit else {})
    if not services:
        return [Call("query_logs", arguments)]
    return [Call("query_logs", {"service": service} | arguments) for service in services]


def _status_class_calls(intent: Ask, services: list[str], limit: int | None) -> list[Call]:
    """ "5xx" is written in no log: besides the verbatim search, each named service's lines at the level
    the class implies (5xx: ERROR), whose lines holding a status of the class answer it."""
    levels = [_STATUS_LEVELS.get(term[0]) for term in intent.exact if is_status_class(term)]
    arguments: dict[str, Any] = asked_window(intent) | ({"limit": limit} if limit else {})
    # strict: an access log's lines of other statuses have no level and would fill the newest lines returned
    return [
        Call("query_logs", {"service": service, "level": level, "level_strict": True} | arguments)
        for level in dict.fromkeys(levels)
        if level
        for service in services
    ]


def term_calls(intent: Ask, question: str, services: list[str], limit: int | None = None) -> list[Call]:
    """The strongest content word the logs contain, in the named services, else where the logs have it.
    A broad task searches the rarest word its services' logs contain with the words written next to it
    ("order queue backlog"), then that word alone (evidence to read); a narrow
    one the strongest word, found there or not (the precise thing to confirm); when no log of the
    environment has any of its words, its strongest word in the named service (the negative answers it)."""
    # a state word ("healthy") is no word to search for, even where some log writes it ("Unhealthy")
    terms = [term for term in _content_terms(intent) if term.lower() not in grammar_words("health")]
    if services and not terms:  # what a question asks of a service is searched there: the negative answers it
        # (but "is zookeeper healthy?" asks its state, which no log line calls "healthy": its errors answer)
        terms = [
            term for term in intent.terms if term not in intent.exact and term.lower() not in grammar_words("health")
        ][:1]
    if not terms:
        return []
    local = [term for term in terms if any(service in intent.found_in(term) for service in services)]
    local.sort(key=lambda term: sum(intent.found_in(term).get(service, 0) for service in services))  # rarest first
    term = terms[0] if intent.narrow or not local else local[0]
    together = [[term]]
    if intent.wants_count or intent.asks("onset"):  # a count (the first line) is of what was asked: a word written
        # in the question with those asked with it
        written = [word for word in [term, *local, *terms] if _written(question, word)]
        together = _together(intent, question, written[:1], services)
        term = together[0][0]
    where = [service for service in services if service in intent.found_in(term)] or services
    where = (
        where
        or _holding_all(intent, together[0], DISCOVERED_SERVICE_CAP)
        or _where(intent, [term], DISCOVERED_SERVICE_CAP)
    )
    queries = [_log_query(*words) for words in together]
    joint = _joined(question, [term], local, _unheld(intent))[:JOINT_TERMS]
    if not intent.narrow and not intent.wants_count and len(joint) > 1:  # words written together, then the rarest
        queries.insert(0, _log_query(*joint))
    calls = []
    for query in queries:
        arguments: dict[str, Any] = {"query": query} | _level(intent) | asked_window(intent)
        arguments |= {"limit": limit} if limit else {}
        calls += [Call("query_logs", {"service": service} | arguments) for service in where]
    return calls + _about_calls(intent, term, services, limit)


def _about_calls(intent: Ask, term: str, services: list[str], limit: int | None) -> list[Call]:
    """A broad task's word that no named service's log writes, where other logs do ("when was the checkout pod
    killed?": the Kubernetes events write Killing): those logs, searched for it with the service's name."""
    if intent.narrow or not services or any(service in intent.found_in(term) for service in services):
        return []
    others = [service for service in intent.found_in(term) if service not in services][:DISCOVERED_SERVICE_CAP]
    arguments: dict[str, Any] = _level(intent) | asked_window(intent) | ({"limit": limit} if limit else {})
    return [
        Call("query_logs", {"service": other, "query": _log_query(term, service)} | arguments)
        for other in others
        for service in services[:1]
    ]


def counted_by(calls: list[Call], by: str | None, level: str | None = None) -> list[Call]:
    """A which-address or which-host question ("which IP had the most failed passwords?", "which host logged
    the most I/O errors?") has its log searches count the matching lines per address or per instance
    (`count_by`): the keyword searches, else every log search."""
    if by is None:
        return calls
    searches = [call for call in calls if call.name == "query_logs"]
    keyed = [call for call in searches if call.arguments.get("query")]
    if keyed:
        return [Call(call.name, call.arguments | {"count_by": by}) if call in keyed else call for call in calls]
    # nothing asked but the addresses ("which IPs hit nginx the most?"): each searched log, every line counted,
    # or every line at the level asked ("which host logged the most errors?": strict, a host's lines without
    # a level are no errors)
    asked = {"level": level, "level_strict": True} if level else {}
    counted = [
        Call(
            "query_logs",
            {key: value for key, value in call.arguments.items() if key not in ("level", "limit", "level_strict")}
            | asked,
        )
        for call in searches
    ]
    counted = [Call(call.name, call.arguments | {"count_by": by}) for call in counted]
    return calls + list({call.key: call for call in counted}.values())


def narrow_calls(intent: Ask, question: str) -> list[Call]:
    return counted_by(_narrow_calls(intent, question), intent.by, intent.level)


def _narrow_calls(intent: Ask, question: str) -> list[Call]:
    """The precise queries a narrow task allows (seeds 2.4): each thing asked about once, never widened.

    Unknown services first (their no-evidence result names the close names; when the question names no
    known service that is all), then the alert asked, else the phrases and tokens (and when no log of the
    environment has any of them, a content word too), else a content word, else the asked level of the
    service's (or every) log. Without a log backend, a question asking nothing of logs gets the metrics call."""
    calls = unknown_calls(intent, question)
    service = intent.services[0] if intent.services else None
    if intent.alertnames:
        return calls + [_alert_call(intent, service)]
    if calls and service is None:  # the service named is not known: not searched for in another one
        return calls
    if not intent.serves_logs and not (intent.levels or intent.names_logs):
        # no log backend: a log search could only fail, so one runs only when logs are asked for by name (its
        # failure says so); "is payment-service CPU high?" (CPU a token) is asked of the metrics
        return calls + [Call("query_metrics", ({"service": service} if service else {}) | asked_window(intent))]
    exact = exact_calls(intent, question, [service] if service else [])
    if exact and not _exact_absent(intent, [service] if service else []):
        return calls + exact
    # asked verbatim though no log has it ("HikariCP"): a word of the question the logs have is searched
    # first (the narrow guard refuses any search after one that found nothing), then the verbatim one
    terms = term_calls(intent, question, [service] if service else [])
    if exact:
        strongest = _content_terms(intent)[:1]
        held = [term for term in strongest if (service in intent.found_in(term) if service else intent.found_in(term))]
        return calls + (terms[:1] if held else []) + exact
    if terms:
        return calls + terms[:1]
    if service is None:  # every log, unless what was named is a service the environment does not know
        if calls == [] and (intent.levels or intent.since or intent.until or intent.names_logs):
            return [Call("query_logs", {"level": intent.level or "ERROR"} | asked_window(intent))]
        return calls
    if intent.levels or intent.names_logs:
        return calls + [
            Call("query_logs", {"service": service, "level": intent.level or "ERROR"} | asked_window(intent))
        ]
    if not intent.serves_metrics:  # no alerts or series to confirm it by: the service's errors
        return calls + [
            Call("query_logs", {"service": service, "level": intent.level or "ERROR"} | asked_window(intent))
        ]
    # within an asked range an alert that fired and resolved answers too ("was zk down this morning?")
    state = {"state": "any"} if asked_window(intent) else {}
    calls += [Call("query_metrics", {"service": service} | asked_window(intent) | state)]
    if intent.asks("health") and intent.serves_logs:  # "is checkout healthy?": its errors say too
        calls += [Call("query_logs", {"service": service, "level": intent.level or "ERROR"} | asked_window(intent))]
    return calls


def discovery_calls(intent: Ask) -> list[Call]:
    """Broad task naming no service: which services have alerts (those of the named alerts, if any); none
    where no alert or series is held (the answer says so)."""
    if not intent.serves_metrics:
        return []
    window = asked_window(intent)
    state = {"state": "any"} if intent.alert_state in ANY_STATE_ASKED else {}
    if intent.alertnames:
        return [Call("query_metrics", {"alertname": name} | window | state) for name in intent.alertnames[:2]]
    return [Call("query_metrics", window | state)]  # "which alerts are silenced?": every state, to read theirs


def searched_services(intent: Ask, firing: list[str]) -> list[str]:
    """A broad task's services: those named, else those whose logs hold the question's words, then
    those with firing alerts."""
    if intent.services:
        return list(intent.services[:NAMED_SERVICE_CAP])
    found = _where(intent, [*intent.exact, *_content_terms(intent)], DISCOVERED_SERVICE_CAP)
    return list(dict.fromkeys([*found, *firing]))[:DISCOVERED_SERVICE_CAP]


def service_calls(intent: Ask, services: list[str]) -> list[Call]:
    if not intent.serves_metrics:
        return []
    window = asked_window(intent)
    return [Call("query_metrics", {"service": service} | window) for service in services]


def evidence_calls(intent: Ask, question: str, services: list[str], alertname: str | None) -> list[Call]:
    """Runbook lookup first (it is never repeated), then each service's WARN+ logs, then the phrases and
    tokens asked (in the services named, else in all logs) and the strongest content word."""
    return counted_by(_evidence_calls(intent, question, services, alertname), intent.by, intent.level)


def _evidence_calls(intent: Ask, question: str, services: list[str], alertname: str | None) -> list[Call]:
    calls = []
    if intent.serves_knowledge and (services or alertname or intent.terms):
        arguments: dict[str, Any] = {"query": _knowledge_query(intent, question, alertname)}
        if alertname:
            arguments["alertname"] = alertname
        if services:
            arguments["service"] = services[0]
        calls.append(Call("lookup_knowledge", arguments | {"limit": KNOWLEDGE_LIMIT}))
    if not intent.serves_logs and not (intent.levels or intent.names_logs):
        return calls  # no log backend (Alertmanager alone): a log search could only fail; asked for, it says so
    calls += [overview_call(intent, service) for service in services]
    calls += unknown_calls(intent, question)
    calls += exact_calls(intent, question, list(intent.services[:NAMED_SERVICE_CAP]), LOG_LIMIT)
    if not intent.exact or _exact_absent(intent, list(intent.services[:NAMED_SERVICE_CAP])):
        calls += term_calls(intent, question, services, LOG_LIMIT)
    return calls


def backoff_calls(intent: Ask, searched: list[tuple[Call, dict[str, Any]]]) -> list[Call]:
    """A broad task's word searches that found nothing, again without their most common word: the
    question's words paraphrase the log's ("fail to contact the RM" is logged "ERROR IN CONTACTING RM"),
    so the words the logs hold most often (the least specific) go first, until one word is left.
    Phrases and tokens asked verbatim are never dropped."""
    calls = []
    for call, output in searched:
        stats = output.get("stats")
        if call.name != "query_logs" or not isinstance(stats, dict) or stats.get("total") != 0:
            continue
        counted = _unleveled_count(call)
        if counted is not None:
            calls.append(counted)
            continue
        try:
            words = list(keywords(str(call.arguments.get("query") or "")))
        except ValueError:
            continue
        droppable = [word for word in words if word not in intent.exact]
        if len(words) < 2 or not droppable:
            continue
        common = max(droppable, key=lambda word: sum(intent.found_in(word).values()))
        kept = [word for word in words if word != common]
        calls.append(Call("query_logs", call.arguments | {"query": _log_query(*kept)}))
    return calls


def every_log_breakdown(intent: Ask) -> list[Call]:
    """A which-host (which-IP, which-endpoint) question naming no service and finding none by its words: every
    log's lines (at the level asked) counted by it."""
    if _content_terms(intent) or intent.exact:
        return []
    level = {"level": intent.level, "level_strict": True} if intent.level else {}
    return [Call("query_logs", level | asked_window(intent) | {"limit": LOG_LIMIT, "count_by": intent.by})]


def _unleveled_count(call: Call) -> Call | None:
    """A per-host count of the lines at a level that found none ("which host logged the most errors?" of a
    log that writes no levels): the lines that name the level in their own words ("I/O error"), counted."""
    arguments = call.arguments
    level = arguments.get("level")
    if not (arguments.get("count_by") and arguments.get("level_strict") and level and not arguments.get("query")):
        return None
    word = {"FATAL": "fatal", "ERROR": "error", "WARN": "warn"}.get(str(level))
    if word is None:
        return None
    kept = {key: value for key, value in arguments.items() if key not in ("level", "level_strict")}
    return Call("query_logs", kept | {"query": word})


def level_calls(intent: Ask, services: list[str]) -> list[Call]:
    """Each service's lines at the asked level, when the overview reads a lower one ("the first error":
    the overview's first line may be a warning)."""
    if not intent.level or _overview_level(intent) == intent.level:
        return []
    return [
        Call("query_logs", {"service": service, "level": intent.level} | asked_window(intent) | {"limit": LOG_LIMIT})
        for service in services
    ]


def common_calls(intent: Ask, services: list[str]) -> list[Call]:
    """A most-common question's reading of each service's lines at the asked level (every line when
    none was asked), whose `$.patterns` count the templates; the overview serves it when it reads
    that level."""
    if intent.level and _overview_level(intent) == intent.level:
        return []
    level = {"level": intent.level} if intent.level else {}
    return [
        Call("query_logs", {"service": service} | level | asked_window(intent) | {"limit": LOG_LIMIT})
        for service in services
    ]


def overview_call(intent: Ask, service: str) -> Call:
    """A broad task's reading of one service's logs: its warnings and errors in the asked range."""
    arguments = {"service": service, "level": _overview_level(intent)} | asked_window(intent) | {"limit": LOG_LIMIT}
    return Call("query_logs", arguments)


UNSEEN_PATTERN_CAP = 2


def overview_gap_calls(intent: Ask, service: str, output: dict[str, Any]) -> list[Call]:
    """What a service's overview search left out of the lines it returned (it returns the newest LOG_LIMIT):
    a range asked with no level where it found no warning or error is read at every level (the range's
    ordinary lines answer "anything on zookeeper in the last 10 minutes?"); a level asked whose lines
    the stats count but none was returned is searched by the patterns no returned line shows (each one's
    longest fixed text, at the asked level: "which warnings?" gets the warnings, not the newest errors)."""
    stats: dict[str, Any] = output["stats"] if isinstance(output.get("stats"), dict) else {}
    window = asked_window(intent)
    if not intent.levels:
        if window and stats.get("total") == 0:
            return [Call("query_logs", {"service": service} | window | {"limit": LOG_LIMIT})]
        return []
    logs = [item for item in output.get("logs") or [] if isinstance(item, dict)]
    by_level: dict[str, Any] = stats["by_level"] if isinstance(stats.get("by_level"), dict) else {}
    if not any(by_level.get(level) for level in intent.levels) or any(
        str(item.get("level") or "").upper() in intent.levels for item in logs
    ):
        return []
    messages = [str(item.get("message") or "") for item in logs]
    calls = []
    for pattern in output.get("patterns") or []:
        pieces = [piece.strip(" ,;:") for piece in str(pattern.get("template") or "").split("<*>")]
        pieces = [piece for piece in pieces if len(piece) >= 8]
        if pieces and not any(all(piece in message for piece in pieces) for message in messages):
            query = _log_query(max(pieces, key=len))
            calls.append(Call("query_logs", {"service": service, "query": query} | _level(intent) | window))
        if len(calls) == UNSEEN_PATTERN_CAP:
            break
    return calls


def _overview_level(intent: Ask) -> str:
    """A broad task reads warnings with the errors: WARN, or a lower level when one was asked."""
    asked = intent.level
    return asked if asked and LEVELS.index(asked) < LEVELS.index("WARN") else "WARN"


def follow_up_calls(intent: Ask, services: list[str]) -> list[Call]:
    """Evidence retry of a broad task: the same services' errors, over a longer window when the question
    named a relative one (a session stored before scopes), in the asked range when it named one (none
    named: the default range stands, there is nothing to widen, and the metrics call repeats one already
    made, so the executor drops it)."""
    window: dict[str, str] = asked_window(intent)  # an asked range stands: a retry never leaves it
    if intent.window:
        window = {"window": RETRY_WINDOWS[1] if intent.window == RETRY_WINDOWS[0] else RETRY_WINDOWS[0]}
    calls = []
    for service in services:
        if intent.serves_metrics:  # a snapshot of logs alone has no series to read again
            calls.append(Call("query_metrics", {"service": service} | window))
        calls.append(Call("query_logs", {"service": service, "level": "ERROR"} | window | {"limit": LOG_LIMIT}))
    return calls


_QUESTION_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_-]{3,}|[\u4e00-\u9fff]{2,}")


def _knowledge_query(intent: Ask, question: str, alertname: str | None) -> str:
    """Alert name, intent terms, then the question's own content words; at most 300 characters."""
    words = [alertname] if alertname else []
    left_out = grammar_words("word.not_looked_up")
    asked = [word for word in _QUESTION_WORD.findall(question) if word.lower() not in left_out]
    # a word searched by its stem in the logs ("fail" for "failing") is looked up as asked: a stem matches
    # runbooks about anything that fails
    words += list(intent.alertnames) + [term for term in intent.terms if term not in intent.stems]
    words += asked
    words.append(catalogue(intent.language)("knowledge.checks_word"))  # lifts the checking steps of a runbook
    unique = list(dict.fromkeys(word for word in words if word))
    query = ""
    for word in unique:
        if len(query) + len(word) + 1 > 300:
            break
        query = f"{query} {word}".strip()
    return query


def firing_services(alerts: list[dict[str, Any]], cap: int) -> list[str]:
    ordered = [alert for alert in alerts if alert.get("state") == "firing"]
    ordered += [alert for alert in alerts if alert.get("state") == "pending"]
    return list(dict.fromkeys(str(alert["service"]) for alert in ordered if alert.get("service")))[:cap]


def first_firing_alert(alerts: list[dict[str, Any]], service: str | None) -> str | None:
    for alert in alerts:
        if alert.get("state") == "firing" and (service is None or alert.get("service") == service):
            return alert.get("alertname")
    return None


def diagnoses(intent: Ask) -> bool:
    """A broad why- or what-changed question on an environment whose series and logs can be compared."""
    served = intent.capabilities is None or "changes" in intent.capabilities
    return served and not intent.narrow and intent.asks("why", "changes")


def changes_call(intent: Ask) -> Call:
    """find_changes over the asked range (none: from where the series change), the named service marked.
    Around one moment ("what changed at 13:48?") the window runs from just before it to the data's end: a
    change is asked to begin then, and is judged on everything that follows (a leak needs more than
    minutes to show; a restart's callers fail after it)."""
    until = None if intent.instant else intent.until
    arguments: dict[str, Any] = {key: value for key, value in (("since", intent.since), ("until", until)) if value}
    if intent.window and not arguments:
        arguments["window"] = intent.window
    if intent.baseline == "day":  # "different from yesterday": the same hours a day earlier
        arguments["baseline"] = "day"
    elif intent.baseline:  # "with the hour before"
        arguments["baseline_length"] = intent.baseline
    if intent.services:
        arguments["service"] = intent.services[0]
    return Call("find_changes", arguments)
