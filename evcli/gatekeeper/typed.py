"""Typed facts: does each number, time, state, status, direction, rank, call and subject a claim states
match a field of the evidence item it cites?

A citation's existence proves little: "latency rose" bound to a series that fell, "0.739 ms" bound
to 0.739 s, a resolved alert called firing or order-service's log line cited for payment-service all
cite real items. So every evidence item is read as typed fields (`item_values`: the item's own
structured output, flattened; numbers and times inside its text fields with the words before them),
the claim as stated facts (`stated_facts`), and each stated fact must agree with one field of its
cited items, compared with unit conversion (739 ms = 0.739 s; GB is not MB), the precision it is
written at ("about 99%", 09:11:23 for 09:11:23.231, "1,200", "1.2k") and, where a role word ties it
to a field ("peak", "threshold", "ERROR", "exit code", "p99", "calls"), with that field; a field whose
name ends with a unit ("duration_ms") holds that unit; a count map's entry (by_service.checkout) only
where the claim names its key. The words live in facts.toml; this module is the one engine that reads
them (the subject and a call's direction: evcli.gatekeeper.subjects; a superlative, or a name among the
cited item's array: evcli.gatekeeper.siblings).
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Iterable, Iterator
from functools import cache
from typing import Any

from evcli.gatekeeper import addresses, owners, paths, siblings, subjects
from evcli.gatekeeper.clocks import clocks, range_ends, time_pattern
from evcli.gatekeeper.typed_model import Cited, ClaimCheck, Fact, Number, Stated, Value, within
from evcli.gatekeeper.wordtables import skip_spaces, tables

__all__ = [
    "check_claim",
    "close",
    "item_at",
    "item_values",
    "plain",
    "stated_facts",
    "without",
]

_RAW_PATH = re.compile(r"\$\.([A-Za-z_]+)(?:\[(\d+)\])?")


# Digits not after a word character or a dot (checked once the first digit is read: a pattern that starts with
# a digit lets the engine skip to the digits), then at least two more dot-separated digit runs.
_IP_OR_VERSION = re.compile(r"\d(?<![\w.]\d)\d*(?:\.\d+){2,}(?![\w.])")
# What every address or version holds, found from its dots (most texts hold none) in a fraction of the time.
_IP_OR_VERSION_HINT = re.compile(r"\.\d+\.\d")


# --- evidence values ------------------------------------------------------------------------------


# Numeric keys a structured item's `unit` applies to (counts, scores and points carry none).
_UNIT_KEYS = frozenset({"value", "current", "min", "max", "last", "first", "peak", "baseline", "spread", "threshold"})
_SKIPPED = frozenset({"samples", "digests", "source", "labels", "example", "line", "template"})
TEXT_FIELDS = ("message", "summary", "text", "example", "description")


def item_at(output: dict[str, Any], raw_path: str) -> Any:
    """The item `$.name[i]` or `$.name` names in a tool's output, or None."""
    match = _RAW_PATH.fullmatch(raw_path or "")
    if match is None:
        return None
    node = output.get(match.group(1))
    if match.group(2) is None:
        return node
    index = int(match.group(2))
    return node[index] if isinstance(node, list) and index < len(node) else None


_NO_ROLES: frozenset[str] = frozenset()
_DIGIT = re.compile(r"\d")
_NAME = re.compile(r"[A-Za-z0-9]+(?:[_.:/-][A-Za-z0-9]+)+")
_PIECE = re.compile(r"[A-Za-z0-9]+")
_CONTEXT_WORD = re.compile(r"[A-Za-z_\u4e00-\u9fff]+")


def _roles_of(key: str, kind: str) -> frozenset[str]:
    return tables().field_roles.get((kind, key.casefold()), _NO_ROLES)


def item_values(item: Any, path: str) -> list[Value]:
    """The item's typed values: its structured fields (any depth) and what its text fields state."""
    values: list[Value] = []
    if isinstance(item, dict):
        _walk(item, path, "", "", values)
        samples = item.get("samples")
        if isinstance(samples, list):
            for direction in series_directions([s[1] for s in samples if isinstance(s, list | tuple) and len(s) > 1]):
                values.append(Value(f"{path}.samples", "direction", direction, direction))
        for key in TEXT_FIELDS:
            if isinstance(item.get(key), str):
                values += text_values(item[key], f"{path}.{key}")
    elif isinstance(item, str):
        values += text_values(item, path)
    return values


def _walk(node: Any, path: str, unit: str, key: str, out: list[Value]) -> None:
    if isinstance(node, dict):
        _walk_members(node, path, unit, key, out)
    elif isinstance(node, list):
        for index, child in enumerate(node[:200]):
            _walk(child, f"{path}[{index}]", unit, key, out)
    elif isinstance(node, str):
        _string_value(node, path, key, out)
    elif isinstance(node, (int, float)) and not isinstance(node, bool):
        _number_value(node, path, unit, key, out)


def _walk_members(node: dict[str, Any], path: str, unit: str, key: str, out: list[Value]) -> None:
    """A dict's members, in order; a string or a number is read here, not by a call of _walk per leaf."""
    unit = node["unit"] if isinstance(node.get("unit"), str) else unit
    counted = tables().per_name.get(key)
    for name, child in node.items():
        if name in _NOT_WALKED:
            continue
        is_number = isinstance(child, (int, float)) and not isinstance(child, bool)
        if counted and is_number:
            out.append(
                Value(
                    paths.member(path, name), "number", float(child), f"{child}", roles=frozenset({counted}), name=name
                )
            )
        elif is_number:
            _number_value(child, paths.member(path, name), unit, name, out)
        elif isinstance(child, str):
            _string_value(child, paths.member(path, name), name, out)
        elif isinstance(child, (dict, list)):
            _walk(child, paths.member(path, name), unit, name, out)


_NOT_WALKED = _SKIPPED | frozenset(TEXT_FIELDS)


def _number_value(node: float, path: str, unit: str, key: str, out: list[Value]) -> None:
    unit = unit if key in _UNIT_KEYS else _field_unit(key)
    dim, factor = tables().units.get(unit, ("", 1.0))
    out.append(
        Value(path, "number", float(node), f"{node}{unit if dim else ''}", dim, factor, _roles_of(key, "number"))
    )


@cache
def _field_unit(key: str) -> str:
    """The unit a field's name ends with (duration_ms: ms), else ""."""
    return next((unit for ending, unit in tables().field_units if key.endswith(ending)), "")


def _string_value(text: str, path: str, key: str, out: list[Value]) -> None:
    lowered = key.casefold()
    if lowered == "state":
        out.append(Value(path, "state", text.casefold(), text))
    elif lowered in tables().status_of and text.casefold() in tables().status_of[lowered]:
        out.append(Value(path, "status", tables().status_of[lowered][text.casefold()], text))
    elif lowered == "direction":
        out.append(Value(path, "direction", {"rose": "up", "fell": "down"}.get(text, text), text))
    elif lowered in ("service", "job", "app"):
        out.append(Value(path, "subject", text.casefold(), text))
    elif _DIGIT.search(text) is None:
        return  # neither a name with digits nor a text with a number or a time: nothing below reads it
    elif _NAME.fullmatch(text) and not time_pattern().search(text):
        out.append(Value(path, "name", text, text))  # http_401_per_s: its digits are a name's, not a number
    else:
        out += text_values(text, path, key)


def text_values(text: str, path: str, key: str = "") -> list[Value]:
    """Times and numbers (with their units) written inside a text, each with the roles the words just
    before it give ("exit code 137", "restartCount=5", "current=91%") and those of the field `key` it is."""
    values: list[Value] = []
    if _DIGIT.search(text) is None:
        return values  # no number and no time (a state, a name, a path)
    masked = plain(text)
    times = list(clocks(masked))
    ends = range_ends(masked, [match for match, _ in times]) if len(times) > 1 else {}
    for index, (match, clock) in enumerate(times):
        roles = _context_roles(masked, match.start(), "time")
        roles = roles | {ends[index]} if index in ends else roles
        roles = roles | _roles_of(key, "time") if key else roles
        values.append(Value(path, "time", clock, match.group(0).strip(), roles=roles))
        masked = masked[: match.start()] + " " * (match.end() - match.start()) + masked[match.end() :]
    if _DIGIT.search(masked) is None:
        return values  # no digit left for a number (a timestamp field is one time)
    masked = _blank_ips_and_versions(masked)
    key_roles = _roles_of(key, "number") if key else _NO_ROLES
    for number in _numbers(masked):
        roles = _context_roles(masked, number.start, "number") | key_roles
        values.append(Value(path, "number", number.value, number.text, number.dim, number.factor, roles))
    return values


def _blank_ips_and_versions(text: str) -> str:
    """The text with its addresses and versions (10.0.0.12, 1.4.2) blanked: their digits are no number."""
    return _IP_OR_VERSION.sub(_blank, text) if _IP_OR_VERSION_HINT.search(text) else text


def _blank(match: re.Match[str]) -> str:
    return " " * len(match.group(0))


def _context_roles(text: str, start: int, kind: str) -> frozenset[str]:
    """Roles named by the two words before a value ("exit code 137", "max=3.8GB", "ERROR 23")."""
    before = [word.casefold() for word in _CONTEXT_WORD.findall(text, max(0, start - 24), start)[-2:]]
    if not before:
        return _NO_ROLES
    roles = tables().field_roles
    found = roles.get((kind, "_".join(before)), _NO_ROLES)
    for word in before:
        named = roles.get((kind, word))
        if named:
            found = found | named
    return found


def series_directions(points: list[Any]) -> set[str]:
    """ "up" when the series rose by at least a quarter of its range at some point, "down" likewise."""
    numbers = [float(p) for p in points if isinstance(p, (int, float))]
    if len(numbers) < 2:
        return set()
    span = max(numbers) - min(numbers)
    if span <= 0:
        return {"flat"}
    rise = fall = 0.0
    low = high = numbers[0]
    for number in numbers[1:]:  # max() and min() of two, written out (a call each costs more than the test)
        if number - low > rise:
            rise = number - low
        if high - number > fall:
            fall = high - number
        if number < low:
            low = number
        if number > high:
            high = number
    return {d for d, size in (("up", rise), ("down", fall)) if size >= 0.25 * span}


# --- stated facts ---------------------------------------------------------------------------------


def _numbers(text: str) -> Iterator[Number]:
    """The numbers of a text with their units, a duration in several units as one (168h20m)."""
    t = tables()
    compounds = []
    if _COMPOUND_HINT.search(text) is not None:
        compounds = [number for number in map(_compound, t.compound.finditer(text)) if number is not None]
    for compound in compounds:
        text = text[: compound.start] + " " * (compound.end - compound.start) + text[compound.end :]
    yield from compounds
    multipliers, units = t.multipliers, t.units
    for match in t.number.finditer(text):
        sign, whole, fraction, suffix = match.groups()
        mantissa = float(whole.replace(",", "") + ("." + fraction if fraction else ""))
        scale, dim, factor = 1.0, "", 1.0
        if suffix:
            if suffix in multipliers and not (suffix in units and suffix.isupper()):
                scale = multipliers[suffix]
            else:
                dim, factor = units[suffix]
        start, end = match.span()
        value = -mantissa * scale if sign else mantissa * scale
        yield Number(start, end, text[start:end], value, len(fraction or ""), scale, dim, factor, bool(sign))


# What every duration in several units contains: a number, letters, a number (the full pattern tries each
# unit name after every number).
_COMPOUND_HINT = re.compile(r"\d\s?[A-Za-zµ\u4e00-\u9fff]+(?:\s*,\s*|\s+and\s+|\s*)\d")


def _compound(match: re.Match[str]) -> Number | None:
    """168h20m as 10100 minutes (the smallest unit written, at its precision); None unless each unit is
    smaller than the one before (5 s, 10 s are two durations)."""
    t = tables()
    parts = [(float(number), t.units[unit][1]) for number, unit in t.duration_part.findall(match.group(0))]
    if len(parts) < 2 or any(later >= earlier for (_, earlier), (_, later) in zip(parts, parts[1:], strict=False)):
        return None
    smallest = parts[-1][1]
    value = sum(number * factor for number, factor in parts) / smallest
    return Number(match.start(), match.end(), match.group(0), value, 0, 1.0, "time", smallest, False)


def plain(text: str) -> str:
    """NFKC with ASCII digits and one minus sign; case kept (17m is minutes, 17M megabytes)."""
    if text.isascii():
        return text  # NFKC keeps it, and it holds no character replaced below
    text = unicodedata.normalize("NFKC", text)
    return text.replace("−", "-").replace("\u2009", " ").replace("\u00a0", " ")


def stated_facts(claim_text: str) -> list[Stated]:
    """What the claim states, left to right."""
    t = tables()
    text = plain(claim_text)
    lowered = text.casefold()
    facts: list[Stated] = []
    kinds = _phrase_kinds()
    for start, end, phrase in t.phrases.finditer(lowered):
        found = kinds.get(phrase)
        if found is not None:
            facts.append(Stated(found[0], phrase, start, end, found[1]))
    masked = text
    times = list(clocks(text))
    ends = range_ends(text, [match for match, _ in times]) if len(times) > 1 else {}
    for index, (match, clock) in enumerate(times):
        role = _role_before(lowered, match.start(), "time") or ends.get(index)
        facts.append(Stated("time", match.group(0).strip(), match.start(), match.end(), clock, role))
        masked = masked[: match.start()] + " " * (match.end() - match.start()) + masked[match.end() :]
    masked = _blank_ips_and_versions(masked)
    past: bool | None = None  # whether the claim is in the past tense: read at its first number
    approximate, bound_before, bound_after, bound_of = (
        t.approximate.ending,
        t.bounds_before.ending,
        t.bounds_after.starting,
        t.bound_of,
    )
    for number in _numbers(masked):
        before = _skip_back(lowered, number.start, 0)
        approximate_at = approximate(lowered, before)
        bound_at = bound_before(lowered, before)
        after = skip_spaces(lowered, number.end)
        bound_end = bound_after(lowered, after)
        bound = (
            bound_of[lowered[bound_at:before]]
            if bound_at is not None
            else bound_of[lowered[after:bound_end]]
            if bound_end is not None
            else None
        )
        # the span read runs over an approximate or bound word (差不多, 不到: their 不 negates nothing)
        start = number.start
        for at in (approximate_at, bound_at):
            if at is not None and at < start:
                start = at
        # a key's value ("p50=60ms p90=800ms", "p99=about 0.8 s") is the key's: the word after it is the next key
        if start and lowered[start - 1] in "=:":
            role = _role_before(lowered, number.start, "number") or _role_after(lowered, number.end)
        else:
            role = _role_after(lowered, number.end) or _role_before(lowered, number.start, "number")
        end = bound_end if bound_end is not None else number.end
        if past is None:
            past = t.past.search(lowered) is not None
        facts.append(
            Stated(
                "number", number.text, start, end, number.value, role, approximate_at is not None, past, number, bound
            )
        )
    return _spread_roles(lowered, sorted(facts, key=lambda fact: fact.start))


@cache
def _phrase_kinds() -> dict[str, tuple[str, str]]:
    """Each state, status, direction and rank phrase: (its kind, what it states), the first table in that
    order deciding a phrase two tables hold."""
    t = tables()
    kinds: dict[str, tuple[str, str]] = {}
    for kind, table in (("state", t.states), ("status", t.statuses), ("direction", t.directions), ("rank", t.ranks)):
        for phrase, stated in table.items():
            kinds.setdefault(phrase, (kind, stated))
    return kinds


_SPREAD_JOIN = re.compile(r"\s*(?:to|and|-|–|~|至|到|和|与)\s*")


def _spread_roles(lowered: str, facts: list[Stated]) -> list[Stated]:
    """Two numbers after a spread word ("ranging from 0.06 to 6.05", "between 2 and 5") are the minimum
    and the maximum, when no role word names them otherwise."""
    t = tables()
    numbers = [index for index, fact in enumerate(facts) if fact.kind == "number"]
    for first, second in zip(numbers, numbers[1:], strict=False):
        low, high = facts[first], facts[second]
        if low.role or high.role or not _SPREAD_JOIN.fullmatch(lowered, low.end, high.start):
            continue
        if t.ranges.ending(lowered, _skip_back(lowered, low.start, 0)) is None:
            continue
        facts[first], facts[second] = low._replace(role="min"), high._replace(role="max")
    return facts


def _role_before(lowered: str, start: int, kind: str) -> str | None:
    """The role word a value follows, with at most two connector words between ("peak of 4.1s",
    "threshold: 85%", "exit code 137", "峰值为 4.1 秒"); the farthest such word within 40 characters."""
    t = tables()
    floor = max(0, start - 40)
    end = _skip_back(lowered, start, floor)
    found = None
    role_ending, connector_ending = t.role_before[kind].ending, t.connectors.ending
    for connectors in range(3):
        role_start = role_ending(lowered, end)
        if role_start is not None and role_start >= floor:
            found = t.role_of[(kind, lowered[role_start:end])]
        if connectors == 2:
            break
        connector_start = connector_ending(lowered, end)
        if connector_start is None or connector_start < floor:
            break
        end = _skip_back(lowered, connector_start, floor)
    return found


def _skip_back(text: str, end: int, floor: int) -> int:
    """`end` moved back over spaces, colons and equals signs."""
    while end > floor and (text[end - 1].isspace() or text[end - 1] in ":="):
        end -= 1
    return end


def _role_after(lowered: str, end: int) -> str | None:
    """A role word right after a number ("23 ERROR lines", "5 restarts")."""
    start = end
    while start < len(lowered) and start < end + 24 and lowered[start] == " ":
        start += 1
    t = tables()
    word_end = t.role_after.starting(lowered, start)
    return t.role_of[("number", lowered[start:word_end])] if word_end is not None else None


# --- comparing ------------------------------------------------------------------------------------


def close(stated: Stated, evidence: Value, *, exact: bool = False) -> bool:
    """Whether the stated number is the evidence's value: units converted (739 ms = 0.739 s), at the
    precision it is written at (99% for 99.4; `exact`: not rounded), within 5% when stated as
    approximate, a bare fraction for a percentage (0.94 for 94%)."""
    number = stated.number
    assert number is not None
    if number.dim and evidence.dim and number.dim != evidence.dim:
        return False
    claimed = abs(number.value) if stated.sign_free else number.value
    actual = abs(evidence.value) if stated.sign_free else evidence.value
    conversions = [1.0]
    if number.dim and evidence.dim:
        conversions = [evidence.factor / number.factor]
        if number.dim == "bytes":
            conversions.append(_binary(evidence.factor) / _binary(number.factor))
    elif evidence.dim == "percent" and not number.dim and abs(claimed) <= 1:
        conversions.append(0.01)  # "current=0.94" for 94%
    tolerance = 0.0 if exact else 0.5 * 10**-number.decimals * number.scale
    # refs show 6 significant digits (evcli.tools.refs.number): 2072.176 ms is shown 2072.18, read 2,072,180 µs
    shown = 0.0 if exact or float(actual).is_integer() else 0.5 * 10 ** (math.floor(math.log10(abs(actual))) - 5)
    for conversion in conversions:
        converted, tolerance_now = actual * conversion, tolerance + shown * abs(conversion)
        if stated.bound is not None:  # "over 90%": the value is on that side of the bound
            if (converted >= claimed) if stated.bound == "above" else (converted <= claimed):
                return True
            continue
        if stated.approximate and abs(converted - claimed) <= 0.05 * max(abs(converted), abs(claimed)) + tolerance_now:
            return True
        if abs(converted - claimed) <= tolerance_now + 1e-9 * abs(claimed):
            return True
    return False


def _binary(factor: float) -> float:
    """The binary reading of a decimal byte factor (MB written for MiB)."""
    steps = {1e3: 1024.0, 1e6: 1024.0**2, 1e9: 1024.0**3, 1e12: 1024.0**4}
    return steps.get(factor, factor)


def check_claim(claim_text: str, cited: list[Cited], services: Iterable[str] = ()) -> ClaimCheck:
    """Compare every fact the claim states with its cited items' fields; a binding that names one
    field is a claim that states that field's value."""
    result = ClaimCheck()
    # The fields bindings name come first: a fact is matched to the field cited for it before any other.
    values = [(c.binding_index, v) for c in cited if c.field for v in c.values if c.in_field(v)]
    values += [(c.binding_index, v) for c in cited for v in c.values if not (c.field and c.in_field(v))]
    text = plain(claim_text)
    lowered = text.casefold()
    if any(v.name for _, v in values):  # a count map's entry stands for the name the claim gives it
        values = [(i, v) for i, v in values if not v.name or _names(lowered, v.name)]
    stated = _outside_names(lowered, stated_facts(claim_text), [v.value for _, v in values if v.kind == "name"])
    of_kind: dict[str, list[tuple[int, Value]]] = {}
    for indexed in values:
        of_kind.setdefault(indexed[1].kind, []).append(indexed)
    for fact in stated:
        checker = _CHECKERS.get(fact.kind)
        if checker is not None:
            before = len(result.facts)
            checker(fact, of_kind.get(fact.kind, []), cited, result)
            if len(result.facts) > before:  # compared here, matched or not: the excerpt check leaves it alone
                result.consumed.append((fact.start, fact.end))
    subjects.check_subject(lowered, values, services, result)
    items = [c.item for c in cited]
    result.problems += addresses.problems(text, items, services) + owners.problems(text, items, services)
    subjects.check_pairs(lowered, cited, services, result)
    siblings.check_names(lowered, cited, result)
    _check_from_to(lowered, stated, values, result)
    for item in cited:
        if item.field:
            _check_field_stated(item, stated, result)
    return result


def _outside_names(lowered: str, stated: list[Stated], names: list[str]) -> list[Stated]:
    """The stated facts, less the numbers that are part of a cited item's name the claim (`plain`, casefolded)
    spells with other separators ("http 401 per s" for http_401_per_s): a name's digits are no quantity."""
    if not names:
        return stated
    spans = [
        (match.start(), match.end())
        for name in dict.fromkeys(names)
        for match in re.finditer(r"[\s_.:/-]+".join(map(re.escape, _PIECE.findall(name.casefold()))), lowered)
    ]
    return [f for f in stated if f.kind != "number" or not any(a <= f.start and f.end <= b for a, b in spans)]


def _check_field_stated(item: Cited, stated: list[Stated], result: ClaimCheck) -> None:
    """A binding naming one field says the claim states that field's value: a fact matched to it, or a
    fact another field also holds ("peaked at 184000" citing `.value` when peak and value are both 184000)."""
    if any(f.ok and f.binding_index == item.binding_index and within(f.field, item.field) for f in result.facts):
        return
    inside = [v for v in item.values if item.in_field(v)]
    for fact in stated:
        for value in inside:
            if _same(fact, value):
                result.facts.append(Fact(fact.text, value.path, value.shown, True, item.binding_index))
                return
    shown = ", ".join(v.shown for v in inside)
    result.problems.append(f"claim cites {item.field} but does not state it" + (f" ({shown})" if shown else ""))


def _same(fact: Stated, value: Value) -> bool:
    if fact.kind != value.kind:
        return False
    if fact.kind == "number":
        return not _other_distinct(fact, value) and close(fact, value)
    if fact.kind == "time":
        return bool(fact.value.matches(value.value))
    return bool(fact.value == value.value)


def without(claim_text: str, spans: list[tuple[int, int]]) -> str:
    """The claim with the spans the typed check compared blanked out (in `plain` coordinates); a span inside
    a longer token (the 94954 of /api/profile/94954, the port of http://refund:8080/api) stays, so the token is
    still checked whole."""
    text = plain(claim_text)
    for start, end in spans:
        before, after = text[start - 1 : start], text[end : end + 1]  # "/s" after a number is its unit ("50.0/s")
        inside = any((c.isascii() and c.isalnum()) or c == "_" for c in before + after) or before == "/"
        if not inside and not (before == ":" and after == "/"):  # host:port/path
            text = text[:start] + " " * (end - start) + text[end:]
    return text


def _other_distinct(fact: Stated, value: Value) -> bool:
    """Whether the value is another distinct role's field than the fact's (p90's for a stated p99)."""
    return bool(fact.role) and fact.role not in value.roles and bool(value.roles & tables().distinct)


def _names(lowered: str, name: str) -> bool:
    return re.search(rf"(?<![\w/-]){re.escape(name.casefold())}(?![\w/-])", lowered) is not None


def _number(fact: Stated, numbers: list[tuple[int, Value]], cited: list[Cited], result: ClaimCheck) -> None:
    """`numbers`: the cited items' numbers (see _CHECKERS)."""
    if not numbers:
        return  # an item without numbers (a runbook's prose): the excerpt check covers it
    candidates = (
        sorted((iv for iv in numbers if fact.role in iv[1].roles), key=lambda iv: not iv[1].name) if fact.role else []
    )
    pool = candidates or ([(i, v) for i, v in numbers if not _other_distinct(fact, v)] if fact.role else numbers)
    # Rounding does not make a role's value out of another role's exact one ("min=0.5" when the min is
    # 0.45 and the max is 0.5): a value another role's field holds exactly is that field's.
    exact = any(close(fact, value, exact=True) for _, value in candidates)
    swapped = (
        bool(candidates)
        and not exact
        and any(v.roles and (i, v) not in candidates and close(fact, v, exact=True) for i, v in numbers)
    )
    for index, value in pool if not swapped else []:
        if close(fact, value):
            result.facts.append(Fact(fact.text, value.path, value.shown, True, index))
            return
    if candidates:
        index, value = candidates[0]
        role = (fact.role or "").replace("_", " ")
        result.disagree(fact.text, value, index, f"claim says {role} {fact.text}; {value.path} is {value.shown}")
        return
    dim = fact.number.dim if fact.number is not None else ""
    # the same digits in another unit, else the one field of the stated dimension ("1.2 ms" for a 1234.5 ms span)
    elsewhere = [(i, v) for i, v in numbers if close(_without_unit(fact), v)] if dim else []
    elsewhere = elsewhere or ([iv for iv in pool if iv[1].dim == dim] if dim else [])
    if len(elsewhere) == 1 or (elsewhere and close(_without_unit(fact), elsewhere[0][1])):
        index, value = elsewhere[0]
        result.disagree(fact.text, value, index, f"claim says {fact.text}; {value.path} is {value.shown}")
        return
    result.disagree(fact.text, None, None, f"claim says {fact.text}; no field of {_paths(cited)} is {fact.text}")


def _without_unit(fact: Stated) -> Stated:
    assert fact.number is not None
    return fact._replace(role=None, number=fact.number._replace(dim="", factor=1.0))


def _paths(cited: list[Cited]) -> str:
    return ", ".join(dict.fromkeys(c.raw_path for c in cited))


def _time(fact: Stated, times: list[tuple[int, Value]], cited: list[Cited], result: ClaimCheck) -> None:
    """`times`: the cited items' times (see _CHECKERS)."""
    if not times:
        return
    candidates = [(i, v) for i, v in times if fact.role in v.roles] if fact.role else []
    for index, value in candidates or times:
        if fact.value.matches(value.value):
            result.facts.append(Fact(fact.text, value.path, value.shown, True, index))
            return
    if candidates:  # the role's own field says another time
        index, value = candidates[0]
        result.disagree(fact.text, value, index, f"claim says {fact.role} {fact.text}; {value.path} is {value.shown}")
        return
    result.disagree(fact.text, None, None, f"claim says {fact.text}; no time of {_paths(cited)} is {fact.text}")


def _recorded(verb: str):
    """A checker for a fact the item records as one word (an alert's state, the way a series went):
    the claim's word must be one of its cited items' words of that kind."""

    def check(fact: Stated, recorded: list[tuple[int, Value]], cited: list[Cited], result: ClaimCheck) -> None:
        for index, value in recorded:
            if value.value == fact.value:
                result.facts.append(Fact(fact.text, value.path, value.shown, True, index))
                return
        if recorded:
            index, value = recorded[0]
            result.disagree(fact.text, value, index, f"claim says {fact.text}; {value.path} {verb} {value.shown}")

    return check


# The checker of each kind of stated fact, given the fact, the cited items' values of its kind (binding index,
# value; those inside the field a binding names first), the cited items and the record of the claim's check.
_CHECKERS = {
    "number": _number,
    "time": _time,
    "state": _recorded("is"),
    "status": _recorded("is"),
    "direction": _recorded("went"),
    "rank": siblings.check_rank,
}


_FROM = re.compile(r"(?:from|从)\s*$")
_TO = re.compile(r"^\s*(?:to|->|→|到|升至|降至)\s*$")


def _check_from_to(lowered: str, stated: list[Stated], values: list[tuple[int, Value]], result: ClaimCheck) -> None:
    """ "from X to Y" says which way a quantity went: it must be a way its cited items went."""
    directions = {v.value for _, v in values if v.kind == "direction"}
    numbers = [fact for fact in stated if fact.kind == "number"]
    if not directions or len(numbers) < 2:
        return
    for earlier, later in zip(numbers, numbers[1:], strict=False):
        if earlier.role or later.role or earlier.number is None or later.number is None:
            continue
        if earlier.number.dim != later.number.dim or not _TO.match(lowered[earlier.end : later.start]):
            continue
        if not _FROM.search(lowered[max(0, earlier.start - 8) : earlier.start]):
            continue
        went = "up" if later.value * later.number.factor > earlier.value * earlier.number.factor else "down"
        if went not in directions and later.value != earlier.value:
            result.problems.append(
                f"claim says from {earlier.text} to {later.text} ({went}); its item went {', '.join(sorted(directions))}"
            )
            return
