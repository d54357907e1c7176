from __future__ import annotations

import re

import pytest

from evcli.core.errors import BadInput
from evcli.gatekeeper.rules import KNOWN_RULES, load_rules
from tests.conftest import REPO

SHIPPED = (REPO / "rules.toml").read_text()


def _write(tmp_path, text):
    path = tmp_path / "rules.toml"
    path.write_text(text)
    return path


def test_shipped_rules_cover_every_rule_the_code_implements(rules):
    assert set(rules.rules) == set(KNOWN_RULES)
    assert rules.version == "gatekeeper-rules-v1"
    assert re.fullmatch(r"sha256-v1:[0-9a-f]{64}", rules.file_hash)
    assert rules.param("binding.excerpt_supported", "min_similarity") == pytest.approx(0.92)
    assert all(rule.enabled for rule in rules.rules.values())


def test_hash_changes_with_the_file(tmp_path, rules):
    edited = load_rules(_write(tmp_path, SHIPPED.replace("min_similarity = 0.92", "min_similarity = 0.95")))
    assert edited.file_hash != rules.file_hash
    assert edited.param("binding.excerpt_supported", "min_similarity") == 0.95


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda t: t + "\n[[rules]\n", "not valid TOML"),
        (lambda t: t.replace('version = "gatekeeper-rules-v1"', ""), "missing top-level `version`"),
        (
            lambda t: t.replace('id = "binding.unique_item"', 'id = "binding.uniqe_item"'),
            "unknown id 'binding.uniqe_item'",
        ),
        (lambda t: t + '\n[[rules]]\nid = "binding.unique_item"\ndefault_severity = "reject"\n', "listed twice"),
        (
            lambda t: t.replace('default_severity = "low_confid"', 'default_severity = "fatal"', 1),
            "default_severity must be one of",
        ),
        (lambda t: t.replace("enabled = true", 'enabled = "yes"', 1), "`enabled` must be true or false"),
        (lambda t: t.replace("min_similarity = 0.92", "min_similarity = 1.5"), "must be in (0, 1]"),
        (lambda t: t.replace("min_similarity = 0.92", 'min_similarity = "high"'), "must be a number"),
        (lambda t: t.replace("min_similarity = 0.92", "threshold = 0.9"), "unknown params threshold"),
    ],
)
def test_malformed_rules_are_a_clear_bad_input(tmp_path, edit, message):
    with pytest.raises(BadInput) as caught:
        load_rules(_write(tmp_path, edit(SHIPPED)))
    assert message in caught.value.message
    assert "\n" not in caught.value.message.strip()


def test_a_rule_missing_from_the_file_is_an_error_not_a_silent_skip(tmp_path):
    start = SHIPPED.index('[[rules]]\nid = "binding.unique_item"')
    end = SHIPPED.index("[[rules]]", start + 1)
    with pytest.raises(BadInput, match="rules missing: binding.unique_item"):
        load_rules(_write(tmp_path, SHIPPED[:start] + SHIPPED[end:]))


def test_unreadable_rules_file(tmp_path):
    with pytest.raises(BadInput, match="cannot read rules file"):
        load_rules(tmp_path / "absent.toml")


def test_a_rules_file_that_is_a_fifo_or_too_large_is_refused_without_reading_it(tmp_path, fifo):
    """`--rules` names a FIFO: refused at once (reading it would block), as is a file over 1 MiB."""
    with pytest.raises(BadInput, match="cannot read rules file .*not a regular file"):
        load_rules(fifo)
    big = tmp_path / "big.toml"
    big.write_bytes(b"#" * ((1 << 20) + 1))
    with pytest.raises(BadInput, match="larger than 1 MiB"):
        load_rules(big)
