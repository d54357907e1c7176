"""Causes before symptoms: services ranked as suspects from their changes and who calls whom (pure).

A service's suspicion is its strongest change (weighted by class, signals.toml) plus a share of
its strongest change of another class. Then, in order:
  - onset: a service whose trouble began later than the earliest suspect's loses a share per
    step of lateness (effects travel up the call graph after their cause);
  - topology (env.toml `[topology]`, peers named in log lines, Kubernetes Services and the pod
    templates naming them: evcli.diagnosis.topology): a service with a changed callee
    whose trouble began before its own, or no later and at least EXPLAIN_SHARE as strong, is
    explained by it: its suspicion is cut, the more
    so when its changes are only of a travelling class (latency, errors, traffic); a service
    whose callers changed after it gains a share per such caller; a service whose callees are
    unknown and whose changes only travel is cut (UNLINKED_TRAVELLING) when another service changed
    on its own (a class that stays with it) strictly before it: without topology, what came first
    and on its own is the likelier cause;
  - the fault kind is the class of its first change (the strongest of those in the same step) of a
    class that stays with the service (cpu, memory, disk, restarts, network, responses) that is a
    third as strong as its strongest change or began no later than it (within the tolerance), else
    of its strongest change: a crash's restart comes before the CPU of its warm-up.
Ties are broken by onset, then name, so the ranking is the same on every run.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from evcli.diagnosis.changes import Change

SECOND_CLASS_SHARE = 0.25
LATE_STEPS = 6.0  # steps of lateness that halve a service's suspicion
EXPLAINED_TRAVELLING = 0.1  # kept of a service whose only changes travel and whose callee changed first
EXPLAINED_OWN = 0.5  # kept of a service with a change of its own whose callee changed first
CALLER_SHARE = 0.1  # gained per caller that changed after the service
CALLER_SHARE_MAX = 0.4
TOLERANCE_STEPS = 2  # an onset this many steps after another's still counts as "no later"
EXPLAIN_SHARE = 0.3  # a callee's change explains a caller's only if it is at least this share as strong
UNLINKED_TRAVELLING = 0.3  # kept of a service with unknown callees showing only what travels, after an own cause
LEADING_MIN = 3.0  # a change of the service's own that leads its symptoms names the fault from this score on


@dataclass
class Suspect:
    service: str
    score: float
    onset: float
    fault: str
    changes: list[Change]
    explained_by: list[str] = field(default_factory=list)
    affects: list[str] = field(default_factory=list)  # changed callers, transitively, in onset order
    callees_checked: list[str] = field(default_factory=list)


def rank(changes: list[Change], callees: Mapping[str, tuple[str, ...]], step: float) -> list[Suspect]:
    by_service: dict[str, list[Change]] = {}
    for change in changes:
        by_service.setdefault(change.service, []).append(change)
    tolerance = TOLERANCE_STEPS * step
    suspects = {service: _suspect(service, own, tolerance) for service, own in by_service.items()}
    if not suspects:
        return []
    earliest = min(s.onset for s in suspects.values())
    raw = {service: suspect.score for service, suspect in suspects.items()}
    callers = _callers(callees)
    for suspect in suspects.values():
        lateness = max(0.0, suspect.onset - earliest - tolerance) / max(step, 1.0)
        factor = 1.0 / (1.0 + lateness / LATE_STEPS)
        suspect.callees_checked = [name for name in callees.get(suspect.service, ()) if name != suspect.service]
        first = [
            name
            for name in suspect.callees_checked
            if name in suspects
            and (
                suspects[name].onset < suspect.onset - step / 2  # strictly first: whatever its size
                or (
                    suspects[name].onset <= suspect.onset + tolerance
                    and raw[name] >= EXPLAIN_SHARE * raw[suspect.service]
                )
            )
        ]
        own = any(change.klass.cause for change in suspect.changes if change.weighted >= suspect.score / 2)
        if first:
            suspect.explained_by = first
            factor *= EXPLAINED_OWN if own else EXPLAINED_TRAVELLING
        elif not suspect.callees_checked and not own and _earlier_own_cause(suspect, suspects, step):
            # nothing known of what it calls, it only shows what travels, and a service changed on its own before it
            factor *= UNLINKED_TRAVELLING
        later_callers = [
            name
            for name in callers.get(suspect.service, ())
            if name in suspects and suspects[name].onset + tolerance >= suspect.onset
        ]
        factor *= 1.0 + min(CALLER_SHARE_MAX, CALLER_SHARE * len(later_callers))
        suspect.score = round(suspect.score * factor, 3)
    for suspect in suspects.values():
        suspect.affects = _affected(suspect.service, callers, suspects, tolerance)
    return sorted(suspects.values(), key=lambda s: (-s.score, s.onset, s.service))


def _earlier_own_cause(suspect: Suspect, suspects: Mapping[str, Suspect], step: float) -> bool:
    return any(
        other.onset < suspect.onset - step / 2 and _own_cause(other)
        for other in suspects.values()
        if other.service != suspect.service
    )


def _suspect(service: str, own: list[Change], tolerance: float) -> Suspect:
    own = sorted(own, key=lambda c: (-c.weighted, c.onset, c.signal))
    top = own[0]
    other = next((c for c in own if c.signal_class != top.signal_class), None)
    score = top.weighted + (SECOND_CLASS_SHARE * other.weighted if other else 0.0)
    strong = [c for c in own if c.weighted >= top.weighted / 2]
    onset = min(c.onset for c in strong)
    return Suspect(service, round(score, 3), onset, _fault(own, tolerance), own)


def _fault(own: list[Change], tolerance: float) -> str:
    strongest, first = own[0].weighted, own[0].onset
    # a change of the service's own (resources, crashes) that is a third as strong as its strongest, or
    # that began no later than its strongest did: what its latency and errors follow from
    staying = [
        c
        for c in own
        if c.klass.cause
        and c.klass.fault
        and (c.weighted >= strongest / 3 or (c.onset <= first + tolerance and c.weighted >= LEADING_MIN))
    ]
    if staying:
        step = max(tolerance / TOLERANCE_STEPS, 1.0)
        chosen = min(staying, key=lambda c: (c.onset // step, -c.weighted))  # the first to change, then the strongest
        return chosen.klass.fault or "errors"
    return own[0].klass.fault or "errors"


def _callers(callees: Mapping[str, tuple[str, ...]]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for caller, names in callees.items():
        for name in names:
            if name != caller:
                found.setdefault(name, []).append(caller)
    return found


def _affected(service: str, callers: dict[str, list[str]], suspects: dict[str, Suspect], tolerance: float) -> list[str]:
    """The changed services that call `service`, directly or through other changed services, that
    changed no earlier than it did, in onset order."""
    seen: dict[str, float] = {}
    frontier = [service]
    while frontier:
        current = frontier.pop()
        for caller in callers.get(current, ()):
            if caller in seen or caller == service or caller not in suspects:
                continue
            if suspects[caller].onset + tolerance < suspects[service].onset:
                continue
            seen[caller] = suspects[caller].onset
            frontier.append(caller)
    return sorted(seen, key=lambda name: (seen[name], name))


def asked_first(suspects: list[Suspect], asked: str | None, callees: Mapping[str, tuple[str, ...]]) -> list[Suspect]:
    """A named service whose trouble has a cause of its own (a change of a class that stays with it:
    memory, CPU, disk, crashes) that no callee of its explains is where its trouble starts: it goes
    before the suspects nothing known links it to (they may be trouble of their own, not of its
    cause). A named service showing only what travels (latency, errors) keeps its rank: its cause may
    be anywhere."""
    mine = next((suspect for suspect in suspects if suspect.service == asked), None)
    if mine is None or mine.explained_by or not _own_cause(mine):
        return suspects
    linked = reachable(mine.service, callees)
    position = suspects.index(mine)
    kept = [suspect for suspect in suspects[:position] if suspect.service in linked]
    moved = [suspect for suspect in suspects[:position] if suspect.service not in linked]
    return [*kept, mine, *moved, *suspects[position + 1 :]]


def _own_cause(suspect: Suspect) -> bool:
    return any(names_fault(change, suspect.fault) for change in suspect.changes)


def names_fault(change: Change, fault: str) -> bool:
    """Whether the change is of a class that stays with its service and points at `fault`."""
    return bool(change.klass.cause and change.klass.fault == fault)


def reachable(service: str, callees: Mapping[str, tuple[str, ...]]) -> set[str]:
    """The services `service` depends on, directly or through others."""
    seen, frontier = {service}, [service]
    while frontier:
        for callee in callees.get(frontier.pop(), ()):
            if callee not in seen:
                seen.add(callee)
                frontier.append(callee)
    return seen
