"""Subject mutations (issue 22): an address given to the wrong host.

A line names a host and, elsewhere, a peer, a client or a DNS server ("web-01 sshd: Accepted … from
10.0.0.12", "host=es-cluster.internal server=10.96.0.10:53"); a careless writer makes the address the
host's ("web-01 (10.0.0.12)"). The honest counterpart pairs a name with the address its item gives it
(host=… addrs=…, an alert's service and instance). Names and addresses are read from the cited items
(evcli.gatekeeper.addresses), never from a list of known claims.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator
from typing import Any

from evcli.contracts import SessionDocument
from evcli.evals.mutations.base import Case, Output
from evcli.evals.mutations.facts import _observations, _with_text
from evcli.gatekeeper import addresses, owners

_ADDRESS = re.compile(r"(?<![\d.])\d{1,3}(?:\.\d{1,3}){3}(?![\d])")
_HOST = re.compile(r"(?<![\w./:-])[a-z][a-z0-9]*(?:[.-][a-z0-9]+)+(?![\w/:-]|\.\w)")


def _claims(document: SessionDocument, output: Output) -> Iterator[tuple[int, str, list[Any]]]:
    """Each observation claim (index, text) with its cited items."""
    for index, _raw, claim, cited in _observations(document, output):
        yield index, claim.claim_text, [item.item for item in cited]


def _names(item: Any) -> list[str]:
    """Host and service names an item holds: its service field first, then host-like words of its texts."""
    found = [item["service"]] if isinstance(item, dict) and isinstance(item.get("service"), str) else []
    for text in addresses.item_texts(item):
        found += [word for word in _HOST.findall(text) if not word.endswith((".log", ".go", ".java", ".py"))]
    return list(dict.fromkeys(name for name in found if name))


def subject_address_reassigned(document, output):
    """A peer's, client's or DNS server's address written as the host's own ("web-01 (10.0.0.12)")."""
    for index, text, items in _claims(document, output):
        for item in items:
            made = addresses.item_pairs(item, addresses.item_texts(item))
            for address in dict.fromkeys(_ADDRESS.findall(text)):
                for name in _names(item):
                    if (name.casefold(), address) in made or address in name:
                        continue
                    spoofed = text.replace(address, f"{name} ({address})", 1)
                    yield Case(f"claim {index + 1}: {address} as {name}'s", _with_text(output, index, spoofed))
                    return


def benign_address_paired(document, output):
    """A name and the address its own item gives it written together ("es-cluster.internal (10.20.14.21)")."""
    for index, text, items in _claims(document, output):
        for item in items:
            for name, address in sorted(addresses.item_pairs(item, addresses.item_texts(item))):
                if address in text and f"{name} ({address}" not in text.casefold():
                    honest = re.sub(rf"(?<![\d.]){re.escape(address)}", f"{name} ({address})", text, count=1)
                    yield Case(f"claim {index + 1}: {name} ({address})", _with_text(output, index, honest))
                    return


def _service(item: Any) -> str | None:
    if not isinstance(item, dict):
        return None
    labels = item["labels"] if isinstance(item.get("labels"), dict) else {}
    service = item.get("service") or labels.get("service")
    return service if isinstance(service, str) and service else None


def _owned(items: list[Any]) -> Iterator[tuple[owners.Thing, str, str, str]]:
    """(thing, word, owner, reporting service) for each cited item whose texts name a thing with an owner
    field other than the service the item is filed under (a certificate alert of checkout-api for the
    certificate of payments.internal:443)."""
    for item in items:
        service = _service(item)
        texts = " ".join(addresses.item_texts(item)).casefold()
        for thing in owners.things():
            word = next((w for w in thing.words if w in texts), None)
            found = owners.field_owners(item, thing)
            if service is None or word is None or not found:
                continue
            for owner in sorted(found):
                if owner != service.casefold():
                    yield thing, word, owner, service


def subject_certificate_owner(document, output):
    """A certificate given to the service whose probe or client reported it, not to the host it belongs to."""
    for index, text, items in _claims(document, output):
        for thing, word, _owner, service in _owned(items):
            spoofed = f"{text.rstrip('. ')} ({service}'s {word})."
            yield Case(f"claim {index + 1}: {thing.name} of {service}", _with_text(output, index, spoofed))
            return


def benign_certificate_owner(document, output):
    """The certificate given to the host its item says it belongs to ("the certificate of payments.internal")."""
    for index, text, items in _claims(document, output):
        for thing, word, owner, _service in _owned(items):
            honest = f"{text.rstrip('. ')} (the {word} of {owner})."
            yield Case(f"claim {index + 1}: {thing.name} of {owner}", _with_text(output, index, honest))
            return


def _addressed(document: SessionDocument, output: Output) -> Iterator[tuple[int, str, str, dict[str, Any]]]:
    """Observation claims with one binding whose excerpt holds an address the claim writes:
    (index, text, address, binding)."""
    for index, raw in enumerate(output.get("claims") or []):
        bindings = raw.get("evidence_bindings") or []
        if raw.get("claim_type") != "observation" or len(bindings) != 1:
            continue
        text, excerpt = raw.get("claim_text") or "", bindings[0].get("evidence_excerpt") or ""
        found = [address for address in _ADDRESS.findall(text) if address in _ADDRESS.findall(excerpt)]
        if found:
            yield index, text, found[0], bindings[0]


def _two_addressed(document, output):
    """A claim on one address and another item of the session on another address: (index, text, address,
    binding) and (binding, ref text, address) of the other item, or None."""
    for index, text, address, binding in _addressed(document, output):
        for invocation in document.invocations:
            details = invocation.retrieval_details
            for ref in (details.evidence_refs or []) if details else []:
                found = _ADDRESS.findall(ref.text or "")
                if not found or address in found or ref.raw_path == binding.get("raw_path"):
                    continue
                other = {
                    "tool_name": invocation.tool_name,
                    "source_invocation_id": invocation.invocation_id,
                    "source_type": binding.get("source_type", "tool_trace"),
                    "raw_path": ref.raw_path,
                    "evidence_excerpt": ref.text,
                }
                return (index, text, address, binding), (other, ref.text, found[0])
    return None


def _joined(output: Output, index: int, text: str, bindings: list[dict[str, Any]]) -> Output:
    mutated = _with_text(output, index, text)
    mutated["claims"][index]["evidence_bindings"] = copy.deepcopy(bindings)
    return mutated


def claim_stitched(document, output):
    """What one line says of one address moved onto another line's address, both lines cited ("Accepted
    publickey for deploy from 203.0.113.45" from a login of 10.0.0.12 and a failure of 203.0.113.45)."""
    pair = _two_addressed(document, output)
    if pair is None:
        return
    (index, _text, address, binding), (other, other_text, other_address) = pair
    stitched = other_text.replace(other_address, address)
    yield Case(
        f"claim {index + 1}: {other_address}'s line told of {address}",
        _joined(output, index, stitched, [binding, other]),
    )


def benign_two_items_joined(document, output):
    """A claim and another line on another address written as one, each clause with its own line."""
    pair = _two_addressed(document, output)
    if pair is None:
        return
    (index, text, _address, binding), (other, other_text, _other_address) = pair
    joined = f"{text.rstrip('. ')}; {other_text}"
    yield Case(f"claim {index + 1} joined with {other['raw_path']}", _joined(output, index, joined, [binding, other]))
