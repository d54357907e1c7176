"""raw_path grammar: an exact subset of JSONPath, resolved as jsonpath-ng resolves it."""

from __future__ import annotations

import random

import pytest
from jsonpath_ng import parse

from evcli.gatekeeper import paths


@pytest.mark.parametrize(
    ("raw_path", "item", "field"),
    [
        ("$.alerts[0]", "$.alerts[0]", ""),
        ("$.alerts[0].value", "$.alerts[0]", ".value"),
        ("$.stats", "$.stats", ""),
        ("$.stats.by_level.ERROR", "$.stats", ".by_level.ERROR"),
        ("$.stats.by_source['logs/app.log']", "$.stats", ".by_source['logs/app.log']"),
        ("$.series[12].samples[3][1]", "$.series[12]", ".samples[3][1]"),
        ("$.alerts[*]", "", ""),
        ("$..value", "", ""),
        ("$.alerts[0:2]", "", ""),
        ("$.alerts[01]", "", ""),
        ("$.stats.by_source['a'b']", "", ""),
        ("alerts[0]", "", ""),
    ],
)
def test_split_names_the_item_and_the_field_or_nothing(raw_path, item, field):
    assert paths.split(raw_path) == (item, field)


def test_canonical_writes_plain_members_with_dots_and_others_quoted():
    assert paths.canonical("['total']") == ".total"
    assert paths.canonical(".by_source['logs/app.log']") == ".by_source['logs/app.log']"
    assert paths.canonical("['by_level']['ERROR'][0]") == ".by_level.ERROR[0]"
    assert paths.member("$.stats.by_source", "logs/app.log") == "$.stats.by_source['logs/app.log']"


def _document(rng: random.Random, depth: int = 0):
    roll = rng.random()
    if depth < 3 and roll < 0.4:
        return {rng.choice(KEYS): _document(rng, depth + 1) for _ in range(rng.randrange(1, 4))}
    if depth < 3 and roll < 0.6:
        return [_document(rng, depth + 1) for _ in range(rng.randrange(0, 4))]
    return rng.choice([0, 1.5, "firing", None, True, "x"])


KEYS = ["value", "max", "by_level", "ERROR", "logs/app.log", "a.b", "p99_latency", "x-y", "2xx"]


def _field(rng: random.Random, node) -> str:
    """A path into `node` that mostly exists, sometimes not (a wrong key or an index past the end)."""
    written = ""
    for _ in range(rng.randrange(1, 5)):
        if isinstance(node, dict) and node and rng.random() < 0.85:
            key = rng.choice(list(node))
        elif isinstance(node, list) and node and rng.random() < 0.85:
            index = rng.randrange(len(node))
            written, node = f"{written}[{index}]", node[index]
            continue
        else:
            key = rng.choice(KEYS) if rng.random() < 0.5 else None
            if key is None:
                return f"{written}[{rng.randrange(5)}]"
        written = paths.member(written, key) if rng.random() < 0.7 else f"{written}['{key}']"
        node = node.get(key) if isinstance(node, dict) else None
    return written


def test_every_path_of_the_grammar_resolves_as_jsonpath_ng_resolves_it():
    rng = random.Random(20261206)
    checked = found_count = 0
    for _ in range(400):
        document = {"root": _document(rng)}
        field = ".root" + _field(rng, document["root"])
        assert paths.split("$.stats" + field) == ("$.stats", field)  # the grammar accepts it
        found, value = paths.resolve(document, field)
        reference = parse("$" + field).find(document)
        assert found == bool(reference), field
        if found:
            assert value == reference[0].value, field
            found_count += 1
        checked += 1
    assert checked == 400 and 50 < found_count < 350  # both outcomes exercised
