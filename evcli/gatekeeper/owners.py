"""Things a claim gives an owner: "checkout-api's certificate", "the certificate of payments.internal",
"payments.internal 的证书". A certificate alert fires under the service whose probe or client saw it
(service=checkout-api) for the certificate of another (instance=payments.internal:443): the owner a claim
names must be what a cited item's owner fields hold, or what its text writes as the owner the same way.
Which words name a thing and which fields hold its owner is facts.toml's [owners] table (one row a thing).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import cache
from typing import Any, NamedTuple

from evcli.gatekeeper.addresses import item_texts
from evcli.gatekeeper.wordtables import facts_file

_NAME = r"[A-Za-z][A-Za-z0-9_.-]*[A-Za-z0-9](?::\d{1,5})?"


class Thing(NamedTuple):
    name: str
    words: tuple[str, ...]  # casefolded, longest first
    fields: frozenset[str]
    patterns: tuple[re.Pattern[str], ...]  # each with a `name` group: the owner written
    mention: re.Pattern[str]  # any of the words, anywhere (one search instead of one `in` per word)


@cache
def things() -> tuple[Thing, ...]:
    data = facts_file()["owners"]
    things = []
    for thing, spec in data.items():
        words = sorted({w for language in ("en", "zh") for w in spec.get(language, [])}, key=len, reverse=True)
        latin = "|".join(re.escape(w) for w in words if w.isascii())
        cjk = "|".join(re.escape(w) for w in words if not w.isascii()) or "(?!)"
        edge, name = r"(?<![\w./:-])", rf"(?P<name>{_NAME})"
        patterns = (
            re.compile(rf"{edge}{name}(?:'s|’s)\s+(?:{latin})(?![\w-])", re.IGNORECASE),  # checkout-api's certificate
            re.compile(rf"(?<![\w-])(?:{latin})\s+(?:of|for)\s+(?:the\s+)?{name}", re.IGNORECASE),  # certificate of X
            re.compile(rf"{edge}{name}\s*的?\s*(?:{cjk})", re.IGNORECASE),  # payments.internal 的证书
        )
        casefolded = tuple(w.casefold() for w in words)
        mention = re.compile("|".join(map(re.escape, casefolded)) or "(?!)")
        things.append(Thing(thing, casefolded, frozenset(f.casefold() for f in spec["fields"]), patterns, mention))
    return tuple(things)


def _bare(name: str) -> str:
    return name.casefold().split(":", 1)[0]


def _named(name: str, services: frozenset[str]) -> bool:
    return any(c.isdigit() or c in "-._" for c in name) or name.casefold() in services


def written_owners(text: str, thing: Thing, services: frozenset[str] = frozenset()) -> list[tuple[str, str]]:
    """(owner, as written) of each mention of the thing with an owner in the text."""
    found = []
    for pattern in thing.patterns:
        for match in pattern.finditer(text):
            if _named(match.group("name"), services):
                found.append((_bare(match.group("name")), match.group(0)))
    return found


def field_owners(item: Any, thing: Thing) -> set[str]:
    owners: set[str] = set()
    if isinstance(item, dict):
        for key, value in item.items():
            if isinstance(value, str) and key.casefold() in thing.fields:
                owners.add(_bare(value))
            elif isinstance(value, dict):
                owners |= field_owners(value, thing)
    elif isinstance(item, str):  # a ref's text: its key=value fields
        for key, value in re.findall(r"(?<![\w.-])([A-Za-z_]\w*)=([^\s,;]+)", item):
            if key.casefold() in thing.fields:
                owners.add(_bare(value))
    return owners


def _owns(name: str, owners: set[str]) -> bool:
    """The owner named is one the items hold: the same name, or its first label (payments for payments.internal)."""
    return any(name == owner or owner.split(".", 1)[0] == name for owner in owners)


def problems(claim_text: str, items: list[Any], services: Iterable[str] = ()) -> list[str]:
    """One line per thing whose owner the claim names and no cited item gives it."""
    known = frozenset(s.casefold() for s in services)
    found = []
    lowered = claim_text.casefold()
    for thing in things():
        if thing.mention.search(lowered) is None:
            continue  # the claim names no such thing: most claims
        stated = written_owners(claim_text, thing, known)
        if not stated:
            continue
        owners: set[str] = set()
        for item in items:
            owners |= field_owners(item, thing)
            for text in item_texts(item):
                owners.update(owner for owner, _ in written_owners(text, thing, known))
        if not owners:
            continue  # no cited item says whose it is: nothing to compare with
        for name, written in stated:
            if not _owns(name, owners):
                found.append(
                    f"claim gives the {thing.name} to {name} ({written!r}); its items give it to {', '.join(sorted(owners))}"
                )
    return found
