"""Services, hosts and alert names a question names, known to the environment or not.

Known names match case-insensitively with their parts joined by space, `_` or `-`
("payment service" = payment-service = one service, not also the alias "payment"); aliases
map to their canonical service. A name the environment does not know is still reported when
it *looks* like a service ("payments-v3", "foo-service", "billing-api", "service X", "X service")
or a host ("web-01", "db-2.prod", "ip-10-0-0-12", an FQDN, "host X"): the engines answer
"no such service" with close names instead of silently searching everything. A known service
that is also a host name appears in both lists. Alert names: the environment's, also written
as words ("high cpu usage" → HighCPUUsage), and CamelCase words carrying an alert word
(KafkaConsumerLagHigh); Kubernetes container states (OOMKilled, CrashLoopBackOff) are log
terms, not alerts. The question's words are data, groups of the question grammar
(evcli/scope/grammar/<language>.toml): the words no service or host is named (`word.*`), the words written
next to a name ("service X", "X service", "host X", the last part of "billing-api", "on" before where it
happened, the article between: `entity.*`); `cue_before` and `cue_after` read the cue words beside a name for
every extractor. What stays here is language-neutral: the shapes of names (web-01, an FQDN, payments-v3), and
the alert words and container states, the words alert names and Kubernetes write in whatever language the
question is asked.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import cache
from typing import Any

from evcli.scope.beside import names_beside
from evcli.scope.grammar import hits, words
from evcli.scope.match import LEFT, RIGHT, SEPARATOR, Spans, distinct, humps, name_pattern

_ALERT_WORDS = frozenset(
    "high low usage rate latency down slow response exhausted full space unavailable failed failure "
    "failing restarts restarting killed pressure saturation saturated lag timeout timeouts throttling "
    "crash crashlooping looping backoff absent missing spike exceeded notready unhealthy almost errors".split()
)
CONTAINER_STATES = frozenset(
    "oomkilled crashloopbackoff imagepullbackoff errimagepull createcontainerconfigerror containercreating".split()
)
CAMEL = re.compile(rf"{LEFT}([A-Z][A-Za-z0-9]*[a-z0-9][A-Z][A-Za-z0-9]*|[A-Z]{{2,}}[a-z][A-Za-z0-9]*){RIGHT}")
_ARTICLE = "entity.article"  # may stand between a cue and its name: "on the datanode"
_WHERE_BEFORE = "entity.where_before"  # "auth failures on combo": a service named as where something happened
_SERVICE_BEFORE, _SERVICE_AFTER = "entity.service_before", "entity.service_after"  # "service X", "X service"
_SERVICE_SUFFIX = "entity.service_suffix"  # the last part of a name spelled like a service: billing-api
_HOST_BEFORE = "entity.host_before"  # "host db-2.prod"
_NAME = r"[a-z][a-z0-9]*(?:[-_][a-z0-9]+)*"
_WHOLE_LEFT, _WHOLE_RIGHT = r"(?<![\w-])", r"(?![\w-])"  # never a part of a longer hyphenated name
_HOST_SHAPES = (
    re.compile(r"(?<![\w.-])[a-z][a-z0-9]*(?:-[a-z0-9]+)*-\d+(?:\.[a-z][a-z0-9-]*)*(?![\w-])"),  # web-01, ip-10-0-0-12
    re.compile(r"(?<![\w.-])(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.){2,}[a-z]{2,}(?![\w.-])"),  # an FQDN: api.example.com
)


@cache
def _not_a_name() -> frozenset[str]:
    """Words no service or host is named (the grammar's stop words and `word.not_a_name`: "the web service")."""
    return words("word.stop") | words("word.not_a_name")


def normal_name(name: str) -> str:
    """A name compared across spellings: lower case, parts joined by "-" (order_service = order-service)."""
    return re.sub(r"[\s_-]+", "-", name.strip().lower())


def alias_pairs(aliases: dict[str, Any]) -> list[tuple[str, str]]:
    """(alias, service) pairs from {alias: service}, or from {service: [aliases]} as a backend lists them."""
    pairs = []
    for key, value in aliases.items():
        if isinstance(value, str):
            pairs.append((key, value))
        else:
            pairs += [(alias, key) for alias in value or ()]
    return pairs


def cue_before(question: str, start: int, *groups: str) -> str | None:
    """The group of the longest cue of `groups` written right before `start`, with whitespace and at most
    an article between ("on the datanode", "happened to" over "to"); None when there is none."""
    ends = {len(question[:start].rstrip())}
    ends |= {len(question[: hit.start].rstrip()) for hit in hits(question, _ARTICLE) if hit.end in ends}
    cues = [hit for hit in hits(question, *groups) if hit.end in ends]
    return max(cues, key=lambda hit: hit.end - hit.start).group if cues else None


def cue_after(question: str, end: int, group: str) -> bool:
    """Whether a cue of `group` is written right after `end`, with only whitespace between ("kafka logs")."""
    start = len(question) - len(question[end:].lstrip())
    return any(hit.start == start for hit in hits(question, group))


def find_services(question: str, services: list[str], aliases: dict[str, Any], spans: Spans) -> list[str]:
    """The services the question names, those named as where something happened first ("auth failures on
    combo": combo's service, then auth's), else in question order."""
    canonical = {service.lower(): service for service in services}
    candidates = [(name_pattern(service), service) for service in services]
    for alias, service in alias_pairs(aliases):
        candidates.append((name_pattern(alias), canonical.get(service.lower(), service)))
    found = sorted(spans.claim_longest(question, candidates), key=lambda match: match[0])
    found.sort(key=lambda match: cue_before(question, match[0], _WHERE_BEFORE) is None)
    return distinct(value for _, _, value in found)


def find_hosts(question: str, hosts: list[str], services: list[str], known: set[str], spans: Spans) -> list[str]:
    """Host-like names and the environment's `hosts`; a service or alias (`known`, see `normal_name`)
    named like a host is a host too and stays free for the services (read before services)."""
    found = [(match.start(), name) for name in (*hosts, *services) if name in hosts or _host_like(name)
             for match in re.finditer(name_pattern(name), question, re.IGNORECASE)]  # fmt: skip
    for start, end in _host_names(question):
        name = question[start:end]
        if name.lower() not in _not_a_name() and spans.free(start, end):
            found.append((start, name))
            if normal_name(name) not in known:
                spans.claim(start, end)
    return distinct(name for _, name in sorted(found))


def _host_names(question: str) -> Iterator[tuple[int, int]]:
    """The spans of names shaped like a host, then of names after a host cue ("host db-2.prod")."""
    for shape in _HOST_SHAPES:
        yield from (match.span() for match in shape.finditer(question))
    yield from (name for _, name in names_beside(question, _HOST_BEFORE))


def _host_like(name: str) -> bool:
    return any(shape.fullmatch(name) for shape in _HOST_SHAPES)


def find_unknown_services(question: str, known: set[str], spans: Spans, *, spelled: bool) -> list[str]:
    """Service-like names that are none of the `known` names and aliases (`normal_name`). Names
    `spelled` like one (payments-v3) are read before known services, so the alias "payments" does not
    match inside them; "service X" / "X service" after them, so "billing service" stays the alias."""
    found: list[tuple[int, str]] = []
    for (start, end), (name_start, name_end) in _spelled_services(question) if spelled else _named_services(question):
        name = question[name_start:name_end]
        if name.lower() in _not_a_name() or normal_name(name) in known or not spans.free(name_start, name_end):
            continue
        if spans.claim(start, end):
            found.append((name_start, name))
    return distinct(name for _, name in sorted(found))


_Named = tuple[tuple[int, int], tuple[int, int]]  # the span read and the span of the name in it


@cache
def _spelled_service() -> re.Pattern[str]:
    """A name whose last part is a service suffix (`entity.service_suffix`) or a version: billing-api, payments-v3."""
    suffixes = "|".join([*sorted(map(re.escape, words(_SERVICE_SUFFIX)), key=len, reverse=True), r"v\d+"])
    return re.compile(rf"{_WHOLE_LEFT}(?:{_NAME}[-_])?{_NAME}[-_](?:{suffixes}){_WHOLE_RIGHT}")


def _spelled_services(question: str) -> Iterator[_Named]:
    for match in _spelled_service().finditer(question):
        yield match.span(), match.span()


def _named_services(question: str) -> Iterator[_Named]:
    """Names after a word naming a service ("service payments"), then before one ("payments service")."""
    for group in (_SERVICE_BEFORE, _SERVICE_AFTER):
        yield from names_beside(question, group)


def alert_like(word: str) -> bool:
    return word.lower() not in CONTAINER_STATES and any(hump.lower() in _ALERT_WORDS for hump in humps(word))


def find_alertnames(question: str, alertnames: list[str], spans: Spans) -> list[str]:
    """The environment's alert names, also spelled as words ("high http 401 rate" → HighHTTP401Rate);
    read before tokens, so the 401 of an alert name is no status code."""
    candidates = [(LEFT + SEPARATOR.join(map(re.escape, humps(name))) + RIGHT, name) for name in alertnames]
    return distinct(value for _, _, value in spans.claim_longest(question, candidates))


def find_camel_alertnames(question: str, spans: Spans) -> list[str]:
    """CamelCase words carrying an alert word (KafkaConsumerLagHigh), read after services."""
    found = []
    for match in CAMEL.finditer(question):
        word = match.group(1)
        if not word.endswith(("Exception", "Error")) and alert_like(word) and spans.claim(*match.span(1)):
            found.append(word)
    return found
