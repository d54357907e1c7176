from __future__ import annotations

import copy
import json

from evcli.evals.gatekeeper import load_base_sessions, run_suite
from evcli.evals.mutations import MUTATIONS
from tests.conftest import SAMPLES


def test_shipped_suite_meets_its_targets(rules):
    bases = load_base_sessions()
    assert sorted(d.run.session_id for d in bases) == [
        "host-scope-logins",  # issue 10: sessions made on the host env with a question scope
        "host-scope-negative",
        "sample-broad-order-service",
        "sample-narrow-payment-highcpu",
        "sample-negative-inventory-hikaricp",
    ]
    report = run_suite(bases, rules)
    assert report["targets_met"], [c["misses"] for c in report["classes"] if c["misses"]]
    assert report["mutations"]["rate"] == 1.0 and report["mutations"]["cases"] >= 100
    assert report["benign"]["rejected"] == 0 and report["benign"]["cases"] >= 30
    by_class = {c["class"]: c for c in report["classes"]}
    assert set(by_class) == {m.name for m in MUTATIONS}
    for mutation in MUTATIONS:
        row = by_class[mutation.name]
        assert row["cases"] > 0 and row["ok"] == row["cases"], mutation.name
        if not mutation.benign:
            assert row["observed_severity"] == {mutation.expected_severity: row["cases"]}
            assert row["rules_fired"][mutation.expected_rule] == row["cases"]


def test_every_mutation_really_changes_the_output(rules):
    for base in load_base_sessions():
        original = base.latest_stage("execute").output
        scope_only = base.run.annotations["sample"]["kind"] == "scope_base"
        for mutation in MUTATIONS:
            if scope_only and not mutation.scope:
                continue
            for case in mutation.mutate(base, copy.deepcopy(original)):
                changed_invocations = case.invocations is not None and case.invocations != base.invocations
                changed_scope = case.scope is not None and case.scope != base.run.config.scope
                assert case.output != original or changed_invocations or changed_scope, (
                    mutation.name,
                    case.description,
                )


def test_a_weakened_rule_set_is_reported_as_missing_its_targets(rules):
    import dataclasses

    updated = dict(rules.rules)
    updated["binding.excerpt_supported"] = dataclasses.replace(rules.rules["binding.excerpt_supported"], enabled=False)
    report = run_suite(load_base_sessions(), dataclasses.replace(rules, rules=updated))
    assert not report["targets_met"]
    by_class = {c["class"]: c for c in report["classes"]}
    for name in ("excerpt_number_changed", "excerpt_negation_inserted", "excerpt_invented_text"):
        assert by_class[name]["ok"] == 0 and by_class[name]["misses"]


def test_bases_that_do_not_pass_are_skipped_not_mutated(rules, tmp_path):
    # Without annotations every session in the directory is a candidate base.
    for name in ("narrow-payment-highcpu.json", "fault-excerpt-number-changed.json"):
        document = json.loads((SAMPLES / name).read_text())
        document["run"]["annotations"] = {}
        (tmp_path / name).write_text(json.dumps(document))
    report = run_suite(load_base_sessions(tmp_path), rules)
    # the host sessions with a question scope are always bases (the scope classes mutate them)
    assert report["base_sessions"] == ["sample-narrow-payment-highcpu", "host-scope-logins", "host-scope-negative"]
    assert report["skipped_bases"] == ["sample-fault-excerpt-number-changed"]
