"""Claims built from evidence refs, one template per kind of evidence item.

Facts (service, state, level, time, numbers) are read from the structured item
the invocation recorded (`output["alerts"][i]`, `output["series"][i]`,
`output["logs"][i]`), never parsed back out of the rendered ref; every binding
still quotes a verbatim span of exactly one ref, so the Gatekeeper and the
Verifier can check it. Ref text is data to quote: nothing in it changes what
the engine does. The answers a search's `$.stats` and `$.patterns` state (counts,
per-address counts, most common messages, first and last line) are built in
evcli.agents.offline.stats_claims.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from evcli.agents.offline.payload import Ask
from evcli.contracts import EvidenceRef, ToolInvocation
from evcli.httpstatus import statuses
from evcli.messages import Catalogue
from evcli.scope.match import humps
from evcli.tools.query_logs import log_time
from evcli.tools.refs import with_unit

NARROW_CLAIM_CAP = 2
SERIES_PER_SERVICE = 2
LOG_SYMPTOM_CAP = 3
LEVEL_RANK = {"FATAL": 3, "ERROR": 2, "WARN": 1}

Claim = dict[str, Any]


@dataclass(frozen=True)
class Ref:
    invocation: ToolInvocation
    index: int  # position in its evidence array; -1 for $.no_evidence
    ref: EvidenceRef

    @property
    def array(self) -> str:
        return self.ref.raw_path.split("[", 1)[0].removeprefix("$.")

    @property
    def item(self) -> dict[str, Any]:
        """The structured output item the ref renders ({} for $.no_evidence)."""
        items = self.invocation.output.get(self.array) or []
        return items[self.index] if 0 <= self.index < len(items) and isinstance(items[self.index], dict) else {}

    @property
    def item_stats(self) -> dict[str, Any]:
        """The `$.stats` item of a log search ({} for any other ref)."""
        stats = self.invocation.output.get("stats") if self.ref.raw_path == "$.stats" else None
        return stats if isinstance(stats, dict) else {}

    @property
    def identity(self) -> tuple[int, str]:
        return self.invocation.invocation_id, self.ref.raw_path


_PATH_INDEX = re.compile(r"^\$\.(\w+)\[(\d+)\]$")


def refs_of(invocation: ToolInvocation) -> list[Ref]:
    details = invocation.retrieval_details
    refs = []
    for ref in (details.evidence_refs or []) if details else []:
        match = _PATH_INDEX.match(ref.raw_path)
        refs.append(Ref(invocation, int(match.group(2)) if match else -1, ref))
    return refs


def binding_of(ref: Ref, excerpt: str | None = None) -> dict[str, Any]:
    return {
        "source_type": "tool_trace",
        "source_id": "",
        "tool_name": ref.invocation.tool_name,
        "source_invocation_id": ref.invocation.invocation_id,
        "raw_path": ref.ref.raw_path,
        "evidence_excerpt": excerpt if excerpt is not None else ref.ref.text,
    }


def claim_of(claim_type: str, text: str, ref: Ref, excerpt: str | None = None) -> Claim:
    return {
        "claim_id": "",
        "claim_type": claim_type,
        "claim_text": text,
        "support_level": "direct",
        "evidence_bindings": [binding_of(ref, excerpt)],
    }


def narrow_claims(intent: Ask, refs: list[Ref], missing: list[str], words: Catalogue) -> list[Claim]:
    alerts = alert_claims(refs, words, intent.alert_state)
    if alerts:
        return alerts
    if any(ref.array == "series" for ref in refs):
        if intent.alertnames:
            missing.append(words("narrow.no_alert_item", name=intent.alertnames[0]))
        return series_claims(intent, refs, words, cap=1)
    return log_claims(intent, refs, words, "observation", cap=NARROW_CLAIM_CAP, symptoms_only=False)


# --- alerts ------------------------------------------------------------------------------


def _present(value: Any) -> bool:
    return value not in (None, "")


def _alert_excerpt(text: str) -> str:
    """The alert ref up to its start time: the summary and start time restate nothing the claim uses."""
    for marker in (", active_at=", ", summary="):
        if marker in text:
            return text[: text.index(marker)]
    return text


# the states an alert item records for each asked state (contracts.AlertState)
_ASKED_STATES = {
    "firing": ("firing",),
    "still_firing": ("firing",),
    "pending": ("pending",),
    "resolved": ("resolved",),
    "silenced": ("suppressed", "silenced", "inhibited"),
}


def alert_claims(refs: list[Ref], words: Catalogue, asked_state: str | None = None) -> list[Claim]:
    """One claim per alert; the alerts in the state the question asked first ("which are silenced?")."""
    wanted = _ASKED_STATES.get(asked_state or "", ())
    ordered = sorted(refs, key=lambda ref: ref.array == "alerts" and str(ref.item.get("state")) not in wanted)
    claims, seen = [], set()
    for ref in ordered if wanted else refs:
        if ref.array != "alerts" or ref.ref.text in seen:
            continue
        seen.add(ref.ref.text)
        alert = ref.item
        name, state, service = (
            str(alert.get("alertname") or "alert"),
            alert.get("state"),
            alert.get("service"),
        )
        values = []
        if alert.get("value") is not None:
            values.append(f"current={with_unit(alert['value'], alert.get('unit'))}")
        if _present(alert.get("duration")):
            values.append(f"duration={alert['duration']}")
        subject = words("alert.subject", service=service) if _present(service) else words("alert.subject.none")
        if _present(state):
            text = words("alert.with_state", subject=subject, state=state, name=name)
        else:
            text = words("alert.without_state", subject=subject, name=name)
        text += (words("alert.values", values=words.join(values)) if values else "") + words("sentence_end")
        claims.append(claim_of("observation", text, ref, _alert_excerpt(ref.ref.text)))
    return claims


# --- metric series ---------------------------------------------------------------------------

_GENERIC_METRIC_WORDS = frozenset(
    [
        "high",
        "low",
        "usage",
        "rate",
        "total",
        "used",
        "max",
        "min",
        "count",
        "per",
        "the",
        "of",
    ]
)
_METRIC_SYNONYMS = {
    "memory": ("memory", "heap"),
    "heap": ("heap", "memory"),
    "response": ("latency",),
    "slow": ("latency",),
    "latency": ("latency",),
    "space": ("disk",),
    "disk": ("disk",),
    "cpu": ("cpu",),
    "pool": ("pool",),
    "gc": ("gc",),
    "oomkilled": ("memory", "heap"),
    "oom": ("memory", "heap"),
    "errors": ("error",),
}


def metric_words(name: str) -> set[str]:
    words = {word.lower() for part in re.split(r"[\s_./-]+", name) for word in humps(part) or [part]}
    return words - _GENERIC_METRIC_WORDS


def _related(words: set[str]) -> set[str]:
    return {synonym for word in words for synonym in _METRIC_SYNONYMS.get(word, (word,))}


def series_claims(intent: Ask, refs: list[Ref], words: Catalogue, cap: int = SERIES_PER_SERVICE) -> list[Claim]:
    """Series worth stating: the metric of an alert of the same call, or one the question's terms name
    (a metric the question names outright ranks with the alert's own)."""
    named = {word for term in intent.terms for word in metric_words(term)}
    term_words = _related(named)
    claims = []
    for invocation_id in dict.fromkeys(ref.invocation.invocation_id for ref in refs):
        own = [ref for ref in refs if ref.invocation.invocation_id == invocation_id]
        alert_names = [str(ref.item.get("alertname") or "alert") for ref in own if ref.array == "alerts"]
        alert_words = {word for name in [*alert_names, *intent.alertnames[:1]] for word in metric_words(name)}
        related = _related(alert_words)
        scored = []
        for ref in own:
            series = ref.item
            if ref.array != "series" or not _present(series.get("service")) or not _present(series.get("metric")):
                continue
            metric = metric_words(str(series["metric"]))
            score = 2 * bool(metric & alert_words) + 2 * bool(metric & named)
            score += bool(metric & related) + bool(metric & term_words)
            if score:
                scored.append((-score, ref.index, ref))
        for *_, ref in sorted(scored, key=lambda item: item[:2])[:cap]:
            claims.append(claim_of("observation", _series_text(ref.item, words), ref))
    return claims


def _series_text(series: dict[str, Any], words: Catalogue) -> str:
    values = [
        f"{key}={with_unit(series[key], series.get('unit'))}"
        for key in ("min", "max", "last")
        if series.get(key) is not None
    ]
    window, searched = series.get("window"), series.get("range")  # a range since issue 9, a window before
    if _present(searched):
        where = words("series.range", range=searched)
    else:
        where = words("series.where", window=window) if _present(window) else ""
    return words(
        "series.claim",
        service=series["service"],
        metric=series["metric"],
        where=where,
        values=words.join(values),
    )


# --- log lines ---------------------------------------------------------------------------

# Words of trouble in a line's own text (a 5xx status is one too: `says_trouble`)
SIGNAL = re.compile(
    r"exception|error|fail|timed? ?out|timeout|refused|unavailable|\boom|out of memory|killed|full gc|saturat"
    r"|reject|exhaust|slow|latency|exceed|above threshold|no space|evict|panic|crash|restart|deadlock|denied"
    r"|could not|cannot|unable",
    re.IGNORECASE,
)
_STACK_FRAME = re.compile(r"^\s*(?:at\s+[\w.$<>/]+\(|\.\.\.\s*\d+\s+more|caused by:)", re.IGNORECASE)
# A line that carries its own clock time starts a record; one without it (a traceback's `File ...`
# line, an exception class line) continues the record above it and says less than its head.
_CLOCK = re.compile(r"\d{1,2}:\d{2}")


def says_trouble(message: str) -> bool:
    """Whether a line's own text says trouble: a word of SIGNAL, or a 5xx written as an HTTP status
    (`returned 503`, `status=502`; not `Foo.java:503`, `port 5003` or a version `AppleWebKit/537.36`)."""
    return SIGNAL.search(message) is not None or any(status[0] == "5" for status in statuses(message))


def _log_parts(ref: Ref) -> tuple[str, str, str, str] | None:
    """(service, timestamp, level, message) of a log item, as its ref shows them, or None.

    A line without a level is evidence too: its level is "" and no claim names one."""
    item = ref.item
    timestamp = log_time(item)
    parts = (
        str(item.get("service") or ""),
        timestamp,
        str(item.get("level") or ""),
        str(item.get("message") or ""),
    )
    service, _, level, message = parts
    if not (service and timestamp and message) or not all(part in ref.ref.text for part in parts):
        return None
    return parts


def _log_text(ref: Ref, words: Catalogue, service: str, timestamp: str, level: str, message: str) -> str:
    """The claim of one log line: its level only when the line has one, labelled when it was derived."""
    if not level:
        key = "log.claim.unleveled"
    elif ref.item.get("level_derived"):
        key = "log.claim.derived"
    else:
        key = "log.claim"
    return words(key, service=service, timestamp=timestamp, level=level, message=message)


_STATUS_CLASS = re.compile(r"([1-5])xx", re.IGNORECASE)


def holds(message: str, term: str) -> bool:
    """Whether a line holds an asked phrase or token (case-folded); a status class ("5xx") is any
    status of that class the line writes as an HTTP status (evcli.httpstatus: `" 502 `, `status=502`,
    `returned 502`; not `Foo.java:502`, `line 502` or a version such as `537.36`)."""
    status = _STATUS_CLASS.fullmatch(term)
    if status:
        return any(written[0] == status.group(1) for written in statuses(message))
    return term.lower() in message.lower()


def continues(ref: Ref) -> bool:
    """Whether the line continues a record (the raw line, when recorded, shows no clock time)."""
    line = ref.item.get("line")
    return isinstance(line, str) and not _CLOCK.search(line)


# An exception's name as tracebacks write it: `kazoo.exceptions.SessionExpiredError`, `java.net.SocketTimeoutException`
_EXCEPTION_NAME = re.compile(r"[A-Za-z_][\w.$]*(?:Error|Exception|Fault|Timeout)\b")


def _restates(message: str, worded: bool, same_record: bool, quoted: str) -> bool:
    """Whether a continuation line (a traceback's frame or exception line) adds nothing to the lines quoted
    already: every exception it names is in them ("raise SessionExpiredError()" under "order placement
    failed: kazoo.exceptions.SessionExpiredError"), or it names none and its record is quoted, or it says
    no trouble in its own words (a frame: `File "client.py", line 642, in _call`) and its service's
    trouble is quoted. A `Caused by: java.net.SocketTimeoutException` under "request failed" names a
    new exception: it stays."""
    names = _EXCEPTION_NAME.findall(message)
    if names:
        return all(name.lower() in quoted for name in names)
    return same_record or (not worded and bool(quoted))


def _pattern_key(message: str) -> str:
    """Lines differing only in numbers or in their logger prefix say the same thing."""
    tail = message.rsplit(" - ", 1)[-1]
    return re.sub(r"\d+", "#", tail).lower()[:40]


def log_claims(
    intent: Ask,
    refs: list[Ref],
    words: Catalogue,
    claim_type: str,
    cap: int = LOG_SYMPTOM_CAP,
    symptoms_only: bool = True,
) -> list[Claim]:
    """Distinct log lines: those at a level the question asked first, then errors first, then lines
    naming a term of the question, newest first.

    A line is quoted, never obeyed. As a symptom it must show an error signal in its own
    words (an exception, a timeout, a kill, ...), an ERROR or FATAL level the program gave it, or a
    level derived from its status code (an access log's 4xx/5xx), so a WARN line of prose is not promoted. A line without a level is a candidate
    like any other, ranked below the lines with an error level."""
    terms = [term.lower() for term in intent.terms]
    candidates = []
    for ref in refs:
        if ref.array != "logs":
            continue
        parts = _log_parts(ref)
        if parts is None:
            continue
        service, timestamp, level, message = parts
        worded = says_trouble(message) or bool(level and ref.item.get("level_derived"))
        # the program's own ERROR/FATAL is a signal too ("File does not exist"), after the lines saying one
        # (a traceback's frame has its record's level, not one of its own)
        signal = worded or (
            level.upper() in ("ERROR", "FATAL") and not ref.item.get("level_derived") and not continues(ref)
        )
        if _STACK_FRAME.match(message) or (symptoms_only and not signal):
            continue
        lowered = message.lower()
        # what was asked verbatim first, written as asked (case too) before a case-folded match, in the whole
        # line (an access log's client address is no part of its message)
        line = str(ref.item.get("line") or message)
        exact_hits = sum(holds(line, term) for term in intent.exact)
        exact_hits += sum(term in line for term in intent.exact)
        term_hits = sum(term in lowered for term in terms)
        asked_level = level.upper() in intent.levels
        # a continuation line saying no trouble in its own words has its record's level, not a rank of its own
        ranked = LEVEL_RANK.get(level.upper(), 0) if worded or not continues(ref) else 0
        rank = (not asked_level, -ranked, not worded, -exact_hits, continues(ref), -term_hits)
        candidates.append((rank, timestamp, ref, parts, worded))
    candidates.sort(key=lambda item: (item[1], item[2].identity), reverse=True)  # newest first...
    candidates.sort(key=lambda item: item[0])  # ...within errors first, then lines naming a term
    claims: list[Claim] = []
    seen_patterns, seen_texts = set(), set()
    records: set[tuple[str, str]] = set()  # (service, time) of the records a claim quotes already
    quoted: dict[str, str] = {}  # per service, the lines quoted already
    for _, _, ref, (service, timestamp, level, message), worded in candidates:
        pattern = _pattern_key(message)
        if pattern in seen_patterns or ref.ref.text in seen_texts:
            continue
        if continues(ref) and _restates(message, worded, (service, timestamp) in records, quoted.get(service, "")):
            continue
        records.add((service, timestamp))
        quoted[service] = quoted.get(service, "") + "\n" + message.lower()
        seen_patterns.add(pattern)
        seen_texts.add(ref.ref.text)
        claims.append(claim_of(claim_type, _log_text(ref, words, service, timestamp, level, message), ref))
        if len(claims) == cap:
            break
    return claims


# --- no evidence ---------------------------------------------------------------------------


def no_evidence_scope(text: str) -> tuple[str | None, str | None]:
    """(query, window) as a $.no_evidence ref states them (evcli.tools.refs.no_evidence_text).

    The record has no output item: its text is the structured statement, and the
    claim must restate its query verbatim for the Gatekeeper."""
    query = re.search(r"(?:^|; )query=([^;]*)", text)
    window = re.search(r"(?:^|; )window=([^;]*)", text)
    return query.group(1) if query else None, window.group(1) if window else None


def no_evidence_range(text: str) -> str | None:
    """The absolute range a $.no_evidence ref states it searched (`<start>..<end> (whole snapshot)`), if any."""
    searched = re.search(r"(?:^|; )range=([^;]*)", text)
    return searched.group(1) if searched else None


def negative_claim(ref: Ref, words: Catalogue) -> Claim:
    tool = ref.invocation.tool_name
    unknown = ref.ref.text.partition("message=unknown service ")[2]
    if (
        unknown
        and ref.invocation.retrieval_details
        and getattr(ref.invocation.retrieval_details, "unknown_service", False)
    ):
        return claim_of(
            "negative_observation",
            words("negative.unknown_service", tool=tool, message=f"unknown service {unknown}"),
            ref,
        )
    query, window = no_evidence_scope(ref.ref.text)
    searched = None if window else no_evidence_range(ref.ref.text)  # no window named: state the range searched
    details = ref.invocation.retrieval_details
    service = details.service if details else None
    keywords = " ".join(dict.fromkeys(details.keywords)) if details else ""
    service = service if service and service in ref.ref.text else None
    keywords = keywords if keywords and keywords in ref.ref.text else ""
    noun = words(f"negative.noun.{tool}") if f"negative.noun.{tool}" in words.messages else words("negative.noun")
    if service and keywords:
        subject = words(
            "negative.subject.service_keywords",
            service=service,
            keywords=keywords,
            noun=noun,
        )
    elif service:
        subject = words("negative.subject.service", service=service, noun=noun)
    elif keywords:
        subject = words("negative.subject.keywords", keywords=keywords, noun=noun)
    else:
        subject = words("negative.subject.any", noun=noun)
    text = words(
        "negative.claim",
        tool=tool,
        subject=subject,
        target=words("negative.target", query=query) if query else "",
        span=words("negative.span", window=window) if window else _range_span(searched, words),
        scope=words("negative.scope.window", window=window) if window else _range_scope(searched, words),
    )
    return claim_of("negative_observation", text, ref)


def _range_span(searched: str | None, words: Catalogue) -> str:
    return words("negative.span.range", range=searched) if searched else ""


def _range_scope(searched: str | None, words: Catalogue) -> str:
    return words("negative.scope.range", range=searched) if searched else words("negative.scope")


def no_evidence_note(ref: Ref, words: Catalogue) -> str:
    query, window = no_evidence_scope(ref.ref.text)
    searched = None if window else no_evidence_range(ref.ref.text)
    scope = ", ".join(
        part
        for part in (
            f"query={query}" if query else "",
            f"window={window}" if window else "",
            f"range={searched}" if searched else "",
        )
        if part
    )
    return words("no_evidence.note", tool=ref.invocation.tool_name, scope=scope)
