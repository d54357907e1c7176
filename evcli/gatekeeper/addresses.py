"""Addresses a claim gives a name: "web-01 (10.0.0.12)", "10.96.0.10 (CoreDNS)", "db-proxy at
10.0.0.5:5432" say that the address is that host's or service's. A line that names a host and, elsewhere,
a peer, an upstream or a DNS server ("web-01 sshd: Accepted … from 10.0.0.12", "host=es-cluster.internal
server=10.96.0.10:53") does not: the claim's pair must be one a cited item makes — the two written together
the same way, or a name field and an address field of one record (host=… addrs=…, service and instance).
Which keys name a host and which hold its address are facts.toml's [addresses] table.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Iterator
from functools import cache
from typing import Any, NamedTuple

from evcli.gatekeeper.wordtables import facts_file

_ADDRESS = r"\d{1,3}(?:\.\d{1,3}){3}(?::\d{1,5})?"
_ADDRESSES = rf"{_ADDRESS}(?:\s*,\s*{_ADDRESS})*"
# A host or service name: letters first, no address itself; a name is told from a word by _named.
_NAME = r"[A-Za-z][A-Za-z0-9_.-]*[A-Za-z0-9]"
_EDGE_BEFORE = r"(?<![A-Za-z0-9_./:-])"
_EDGE_AFTER = r"(?![A-Za-z0-9_]|\.\d)"
_HINT = re.compile(r"\d\.\d{1,3}\.\d")  # what every address holds, found in a fraction of the patterns' time


class Pair(NamedTuple):
    name: str  # casefolded
    address: str  # without its port
    text: str  # as written


class _Table(NamedTuple):
    name_keys: frozenset[str]
    address_keys: frozenset[str]
    together: tuple[re.Pattern[str], ...]  # name first or address first, as one entity
    record: re.Pattern[str]


@cache
def _table() -> _Table:
    data = facts_file()["addresses"]
    joins = "|".join(re.escape(j) for j in sorted(data["joins"], key=len, reverse=True))
    # each pattern starts with a lookahead for its first character: the other positions fail before the lookbehind
    name, addresses = rf"(?=[A-Za-z]){_EDGE_BEFORE}(?P<name>{_NAME})", rf"(?P<addresses>{_ADDRESSES}){_EDGE_AFTER}"
    together = (
        re.compile(rf"{name}\s*[(\[]\s*{addresses}\s*[)\]]"),  # web-01 (10.0.0.12)
        re.compile(rf"{name}/{addresses}"),  # web-01/10.0.0.12
        re.compile(rf"{name}\s*(?:{joins})\s*[:=]?\s*{addresses}", re.IGNORECASE),  # db-proxy at 10.0.0.5
        # 10.0.0.5 (db)
        re.compile(rf"(?=\d){_EDGE_BEFORE}(?P<addresses>{_ADDRESS})\s*[(\[]\s*(?P<name>{_NAME})\s*[)\]]"),
    )
    record = re.compile(r"(?<![\w.-])([A-Za-z_][\w.-]*)\s*[=:]\s*\"?([^\s\",;]+(?:,[^\s\",;]+)*)")
    keys = (frozenset(k.casefold() for k in data["name_keys"]), frozenset(k.casefold() for k in data["address_keys"]))
    return _Table(*keys, together, record)


def _bare(address: str) -> str:
    return address.split(":", 1)[0]


def _named(name: str, services: frozenset[str]) -> bool:
    """A host or service name, not a word: it has a digit, a hyphen, a dot or an underscore, or is a
    service of the environment ("web-01", "es-cluster.internal", "coredns" as a service)."""
    return any(c.isdigit() or c in "-._" for c in name) or name.casefold() in services


def stated_pairs(text: str, services: Iterable[str] = (), *, any_name: bool = False) -> list[Pair]:
    """The (name, address) pairs a text writes as one entity; unless `any_name`, only those whose name is
    a host or service name (an evidence text's "CoreDNS (10.96.0.10)" pairs them whatever the word)."""
    if _HINT.search(text) is None:
        return []  # no address written: most texts
    known = frozenset(s.casefold() for s in services)
    pairs = []
    for pattern in _table().together:
        for match in pattern.finditer(text):
            name = match.group("name")
            if not any_name and not _named(name, known):
                continue
            for address in re.findall(_ADDRESS, match.group("addresses")):
                pairs.append(Pair(name.casefold(), _bare(address), match.group(0)))
    return pairs


def record_pairs(text: str) -> Iterator[tuple[str, str]]:
    """(name, address) pairs of one line's key=value fields: a name key's value with an address key's."""
    table = _table()
    fields = [(key.casefold(), value) for key, value in table.record.findall(text)]
    names = [value.casefold() for key, value in fields if key in table.name_keys and not re.match(r"\d", value)]
    addresses = [
        _bare(address) for key, value in fields if key in table.address_keys for address in re.findall(_ADDRESS, value)
    ]
    for name in names:
        for address in addresses:
            yield _bare(name), address


def item_pairs(item: Any, texts: Iterable[str]) -> set[tuple[str, str]]:
    """Every (name, address) pair one cited item makes: written together in its texts, as key=value
    fields of one of its lines, or as a name field and an address field of the item itself."""
    found: set[tuple[str, str]] = set()
    for text in texts:
        text = text if text.isascii() else unicodedata.normalize("NFKC", text)  # （ ） as ( )
        found.update((pair.name, pair.address) for pair in stated_pairs(text, any_name=True))
        for line in text.splitlines():
            found.update(record_pairs(line))
    if isinstance(item, dict):
        table = _table()
        names = [
            str(v).casefold()
            for k, v in item.items()
            if isinstance(v, str) and k.casefold() in table.name_keys and not re.match(r"\d", v)
        ]
        addresses = [
            _bare(address)
            for k, v in item.items()
            if isinstance(v, str) and k.casefold() in table.address_keys
            for address in re.findall(_ADDRESS, v)
        ]
        labels = item.get("labels")
        if isinstance(labels, dict):
            inner = item_pairs(labels, ())
            found |= inner
        found.update((name, address) for name in names for address in addresses)
    return found


def unpaired(text: str, items: Iterable[tuple[Any, list[str]]], services: Iterable[str] = ()) -> list[Pair]:
    """The pairs the claim writes that no cited item (its raw item and texts) makes; `items` is read only
    when the claim writes a pair."""
    stated = stated_pairs(text, services)
    if not stated:
        return []
    made: set[tuple[str, str]] = set()
    for item, texts in items:
        made |= item_pairs(item, texts)
    return [pair for pair in stated if (pair.name, pair.address) not in made]


def item_texts(item: Any) -> list[str]:
    """The texts of a cited item: itself when it is a ref's text, else its string fields (one level of
    nesting: a series' labels)."""
    if isinstance(item, str):
        return [item]
    if not isinstance(item, dict):
        return []
    texts = [value for value in item.values() if isinstance(value, str)]
    for value in item.values():
        if isinstance(value, dict):
            texts += [inner for inner in value.values() if isinstance(inner, str)]
    return texts


def problems(claim_text: str, items: list[Any], services: Iterable[str] = ()) -> list[str]:
    """One line per address the claim gives a name that no cited item gives it."""
    return [
        f"claim writes {pair.address} as {pair.name}'s address ({pair.text!r}); no cited item pairs them"
        for pair in unpaired(claim_text, ((item, item_texts(item)) for item in items), services)
    ]
