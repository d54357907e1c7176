"""`evcli eval gatekeeper`: fault injection over the valid samples, with targets."""

from __future__ import annotations

import shutil

import pytest

from evcli.evals.mutations import MUTATIONS
from tests.cli._util import RULES, assert_clean_error, evcli, kind_of, rules_with, sample_files

EXCERPT_CLASSES = {
    "excerpt_number_changed",
    "excerpt_negation_inserted",
    "excerpt_invented_text",
    "excerpt_word_changed",
    "claim_service_swapped",  # claim.facts_in_excerpts alone catches it
}
SAMPLE_BASE_IDS = sorted(f"sample-{p.stem}" for p in sample_files() if kind_of(p) == "base")
# issue 10: the scope classes mutate sessions made on the host environment with a question scope
BASE_IDS = sorted([*SAMPLE_BASE_IDS, "host-scope-logins", "host-scope-negative"])


@pytest.fixture(scope="module")
def default_report():
    run = evcli("eval", "gatekeeper", "--json")
    assert run.exit_code == 0, run
    return run.json()


def test_default_suite_meets_its_targets(default_report):
    report = default_report
    assert report["targets_met"] is True
    assert report["rule_set_version"] == "gatekeeper-rules-v1"
    assert sorted(report["base_sessions"]) == BASE_IDS and len(SAMPLE_BASE_IDS) == 3
    assert report["skipped_bases"] == []
    assert report["classes_without_cases"] == []
    mutations, benign = report["mutations"], report["benign"]
    assert mutations["cases"] > 0 and mutations["caught"] == mutations["cases"] and mutations["rate"] == 1.0
    assert benign["cases"] > 0 and benign["rejected"] == 0 and benign["rate"] == 0.0


def test_default_suite_exercises_every_class(default_report):
    classes = {row["class"]: row for row in default_report["classes"]}
    assert set(classes) == {m.name for m in MUTATIONS}
    for mutation in MUTATIONS:
        row = classes[mutation.name]
        assert row["cases"] > 0, mutation.name
        assert row["ok"] == row["cases"] and row["rate"] == 1.0 and row["misses"] == [], row
        assert row["observed_severity"] == {mutation.expected_severity: row["cases"]}, row
        if mutation.benign:
            assert row["rules_fired"] == {}, row
        else:
            assert row["rules_fired"].get(mutation.expected_rule, 0) >= row["cases"], row
    assert sum(row["cases"] for row in classes.values() if not row["benign"]) == default_report["mutations"]["cases"]
    assert sum(row["cases"] for row in classes.values() if row["benign"]) == default_report["benign"]["cases"]


def test_default_suite_human_output():
    run = evcli("eval", "gatekeeper")

    assert run.exit_code == 0, run
    out = run.stdout
    assert "gatekeeper fault injection · 5 base sessions · gatekeeper-rules-v1" in out
    for mutation in MUTATIONS:
        assert mutation.name in out
    summary = [line for line in out.splitlines() if line.startswith("mutations caught: ")]
    assert len(summary) == 1
    assert "(100.0%)" in summary[0] and "benign rejected: 0/" in summary[0] and summary[0].endswith("targets met")
    assert "miss " not in out


def test_explicit_sessions_dir_and_rules_give_the_same_report(tmp_path, default_report):
    for path in sample_files():
        if kind_of(path) == "base":
            shutil.copy(path, tmp_path / path.name)

    run = evcli("eval", "gatekeeper", "--json", "--sessions", tmp_path, "--rules", RULES)

    assert run.exit_code == 0, run
    assert run.json() == default_report


def test_disabling_the_excerpt_rule_misses_the_target(tmp_path):
    # claim.facts_in_excerpts and claim.facts_match (the subject) catch most of the same mutations
    # (defence in depth): switch all three off.
    rules = rules_with(tmp_path, "binding.excerpt_supported", enabled=False)
    rules = rules_with(tmp_path, "claim.facts_in_excerpts", enabled=False, source=rules)
    rules = rules_with(tmp_path, "claim.facts_match", enabled=False, source=rules)

    run = evcli("eval", "gatekeeper", "--json", "--rules", rules)

    assert run.exit_code == 1, run
    report = run.json()
    assert report["targets_met"] is False
    assert report["mutations"]["caught"] < report["mutations"]["cases"] and report["mutations"]["rate"] < 1.0
    assert report["benign"]["rejected"] == 0
    for row in report["classes"]:
        assert row["cases"] > 0, row
        if row["class"] in EXCERPT_CLASSES:
            assert row["ok"] == 0 and row["misses"], row
            assert row["observed_severity"] == {"none": row["cases"]}, row
            assert all("-> none []" in miss for miss in row["misses"]), row
        elif row["expected_rule"] == "claim.facts_match":
            assert row["ok"] == 0, row  # its own rule is off
        else:
            assert row["ok"] == row["cases"] and row["misses"] == [], row
    missed = sum(
        row["cases"]
        for row in report["classes"]
        if row["class"] in EXCERPT_CLASSES or row["expected_rule"] == "claim.facts_match"
    )
    assert report["mutations"]["cases"] - report["mutations"]["caught"] == missed

    run = evcli("eval", "gatekeeper", "--rules", rules)

    assert run.exit_code == 1, run
    miss_lines = [line for line in run.stdout.splitlines() if line.startswith("miss ")]
    facts_classes = {row["class"] for row in report["classes"] if row["expected_rule"] == "claim.facts_match"}
    missed_classes = {line.split()[1].rstrip(":") for line in miss_lines}
    assert miss_lines and EXCERPT_CLASSES <= missed_classes <= EXCERPT_CLASSES | facts_classes
    assert run.stdout.rstrip().endswith("targets missed")


def test_empty_sessions_dir_is_a_usage_error(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()

    assert_clean_error(evcli("eval", "gatekeeper", "--sessions", empty), 2, "no session files (*.json) in")


def test_missing_sessions_dir_is_a_usage_error(tmp_path):
    assert_clean_error(evcli("eval", "gatekeeper", "--sessions", tmp_path / "nope"), 2, "no such directory")


def test_invalid_session_file_in_sessions_dir_is_a_usage_error(tmp_path):
    (tmp_path / "broken.json").write_text("{", encoding="utf-8")

    assert_clean_error(evcli("eval", "gatekeeper", "--sessions", tmp_path), 2, "broken.json", "is not valid JSON")


def test_only_fault_sessions_are_all_skipped(tmp_path):
    # With no base in the directory every file is tried as a base, and faults do not pass the gate.
    for path in sample_files():
        if kind_of(path) == "fault":
            shutil.copy(path, tmp_path / path.name)

    run = evcli("eval", "gatekeeper", "--sessions", tmp_path, "--json")

    assert run.exit_code == 1, run
    report = run.json()
    assert report["base_sessions"] == ["host-scope-logins", "host-scope-negative"]  # always added (scope classes)
    assert len(report["skipped_bases"]) == len(list(tmp_path.glob("*.json")))
    assert report["targets_met"] is False


def test_malformed_rules_file(tmp_path):
    path = tmp_path / "rules.toml"
    path.write_text("version = 1\n", encoding="utf-8")

    assert_clean_error(evcli("eval", "gatekeeper", "--rules", path), 2, "missing top-level `version` string")


def test_envs_adds_every_packaged_environment_and_reports_the_held_out_half_apart():
    """--envs: the offline chain's sessions on the packaged questions, every class with cases (more tune
    questions are run for a class the first ones give none), the held-out half reported as aggregates only."""
    from evcli.evals.mutations import ENV_MUTATIONS

    run = evcli("eval", "gatekeeper", "--envs", "--json")
    assert run.exit_code == 0, run
    report = run.json()
    assert report["targets_met"] is True and report["classes_without_cases"] == []
    assert {row["class"] for row in report["classes"]} >= {m.name for m in ENV_MUTATIONS}
    assert report["false_in_pass_answers"] == {"passed_gate": 0, "in_pass_answer": 0}
    held = report["holdout"]
    assert set(held) == {
        "base_sessions",
        "skipped_bases",
        "mutations",
        "benign",
        "false_in_pass_answers",
        "targets_met",
    }
    assert held["mutations"]["cases"] > 500 and held["benign"]["cases"] > 100  # numbers only: no case is shown
    assert held["targets_met"] is True
