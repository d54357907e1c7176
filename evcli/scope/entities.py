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
terms, not alerts. The words no service or host is named are data, `word.*` groups of the question grammar
(evcli/scope/grammar/<language>.toml); the alert words and container states stay here: they are the
words alert names and Kubernetes write, in whatever language the question is asked.
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any

from evcli.scope.grammar import words
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
_NAME = r"[a-z][a-z0-9]*(?:[-_][a-z0-9]+)*"
_SERVICE_SUFFIX = r"(?:service|svc|api|app|server|worker|gateway|gw|backend|frontend|daemon|proxy|v\d+)"
_WHOLE_LEFT, _WHOLE_RIGHT = r"(?<![\w-])", r"(?![\w-])"  # never a part of a longer hyphenated name
_UNKNOWN_SERVICE = (
    rf"{_WHOLE_LEFT}(?:{_NAME}[-_])?{_NAME}[-_]{_SERVICE_SUFFIX}{_WHOLE_RIGHT}",
    rf"{_WHOLE_LEFT}(?:service|svc)\s+(?P<name>[A-Za-z][\w-]*[A-Za-z0-9]){_WHOLE_RIGHT}",
    rf"{_WHOLE_LEFT}(?P<name>[a-z][\w-]*[a-z0-9])\s+(?:service|svc|microservice){_WHOLE_RIGHT}",
)
_HOST = (
    r"(?<![\w.-])[a-z][a-z0-9]*(?:-[a-z0-9]+)*-\d+(?:\.[a-z][a-z0-9-]*)*(?![\w-])",  # web-01, db-2.prod, ip-10-0-0-12
    r"(?<![\w.-])(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.){2,}[a-z]{2,}(?![\w.-])",  # an FQDN: api.example.com
    rf"{LEFT}(?:host|hostname|node|server|machine|box|instance)\s+(?P<name>[a-z][\w-]*[\d.-][\w.-]*[a-z0-9]){RIGHT}",
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


# "… on combo", "in the datanode", "from bastion": a service named as where something happened
_WHERE_BEFORE = re.compile(r"\b(?:on|in|at|from)\s+(?:the\s+)?$", re.IGNORECASE)


def find_services(question: str, services: list[str], aliases: dict[str, Any], spans: Spans) -> list[str]:
    """The services the question names, those named as where something happened first ("auth failures on
    combo": combo's service, then auth's), else in question order."""
    canonical = {service.lower(): service for service in services}
    candidates = [(name_pattern(service), service) for service in services]
    for alias, service in alias_pairs(aliases):
        candidates.append((name_pattern(alias), canonical.get(service.lower(), service)))
    found = sorted(spans.claim_longest(question, candidates), key=lambda match: match[0])
    found.sort(key=lambda match: _WHERE_BEFORE.search(question[: match[0]]) is None)
    return distinct(value for _, _, value in found)


def find_hosts(question: str, hosts: list[str], services: list[str], known: set[str], spans: Spans) -> list[str]:
    """Host-like names and the environment's `hosts`; a service or alias (`known`, see `normal_name`)
    named like a host is a host too and stays free for the services (read before services)."""
    found = [(match.start(), name) for name in (*hosts, *services) if name in hosts or _host_like(name)
             for match in re.finditer(name_pattern(name), question, re.IGNORECASE)]  # fmt: skip
    for pattern in _HOST:
        for match in re.finditer(pattern, question):
            group = "name" if "name" in match.groupdict() else 0
            if match.group(group).lower() not in _not_a_name() and spans.free(*match.span(group)):
                found.append((match.start(group), match.group(group)))
                if normal_name(match.group(group)) not in known:
                    spans.claim(*match.span(group))
    return distinct(name for _, name in sorted(found))


def _host_like(name: str) -> bool:
    return any(re.fullmatch(pattern, name) for pattern in _HOST[:2])


def find_unknown_services(question: str, known: set[str], spans: Spans, *, spelled: bool) -> list[str]:
    """Service-like names that are none of the `known` names and aliases (`normal_name`). Names
    `spelled` like one (payments-v3) are read before known services, so the alias "payments" does not
    match inside them; "service X" / "X service" after them, so "billing service" stays the alias."""
    found: list[tuple[int, str]] = []
    for pattern in _UNKNOWN_SERVICE[:1] if spelled else _UNKNOWN_SERVICE[1:]:
        for match in re.finditer(pattern, question):
            group = "name" if "name" in match.groupdict() else 0
            name = match.group(group)
            if name.lower() in _not_a_name() or normal_name(name) in known or not spans.free(*match.span(group)):
                continue
            if spans.claim(*match.span()):
                found.append((match.start(group), name))
    return distinct(name for _, name in sorted(found))


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
