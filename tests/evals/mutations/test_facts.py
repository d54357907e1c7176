"""evcli/evals/mutations/facts.py: the honest paraphrases the environment classes make, on the shipped samples.

Which of them the gate passes today is the eval's business (`evcli eval gatekeeper --envs`); here each class
makes the rewrite it names, and those whose words the typed check already reads pass the gate.
"""

from __future__ import annotations

import copy

import pytest

from evcli.evals.gatekeeper import load_base_sessions, run_suite
from evcli.evals.mutations import ENV_MUTATIONS, paraphrases


def sample_bases():
    return [base for base in load_base_sessions() if base.run.annotations["sample"]["kind"] == "base"]


def rewritten(mutate, bases=None) -> dict[str, str]:
    """Each case's session and description ("sample-broad-order-service claim-1: ...") and the claim it wrote."""
    found = {}
    for base in bases or sample_bases():
        original = base.latest_stage("execute").output
        for case in mutate(base, copy.deepcopy(original)):
            changed = [
                c["claim_text"] for c, o in zip(case.output["claims"], original["claims"], strict=True) if c != o
            ]
            found[f"{base.run.session_id} {case.description}"] = changed[0]
    return found


@pytest.mark.parametrize(
    ("mutate", "description", "text"),
    [
        (paraphrases.benign_unit_spelled, "claim-2: 3.8GB -> 3.8 gigabytes", "heap reached max=3.8 gigabytes and"),
        (paraphrases.benign_bytes_rescaled, "claim-2: 3.8GB -> 3,800 MB", "heap reached max=3,800 MB and"),
        (
            paraphrases.benign_bytes_rescaled,
            "claim-2: 3.8GB -> 3,800 megabytes",
            "heap reached max=3,800 megabytes and",
        ),
        (paraphrases.benign_bytes_rescaled, "claim-2: 3.8GB -> 3.54 GiB", "heap reached max=3.54 GiB and"),
        (paraphrases.benign_field_worded, "claim-2: key=value in words", "heap reached a peak of 3.8GB and"),
        (paraphrases.benign_field_after_value, "claim-2: values before their keys", "heap reached 3.8GB max and"),
        (paraphrases.benign_state_worded, "claim-1: firing -> triggered", "HighMemoryUsage alert triggered at 91%"),
        (paraphrases.benign_bound_stated, "claim-1: 91% -> over 90%", "alert firing at over 90% for 18 minutes"),
        (paraphrases.benign_bound_stated, "claim-2: 3.8GB -> under 4GB", "heap reached max=under 4GB and"),
        (paraphrases.benign_percent_as_fraction, "claim-1: 91% -> 0.91", "alert firing at 0.91 for 18 minutes"),
    ],
)
def test_a_class_rewrites_a_sample_claim(mutate, description, text):
    cases = rewritten(mutate)
    assert f"sample-broad-order-service {description}" in cases, sorted(cases)
    assert text in cases[f"sample-broad-order-service {description}"]


def test_a_count_is_reordered_but_a_duration_is_not():
    # "for 18 minutes" is a duration: "for minutes: 18" is not what anyone writes
    assert rewritten(paraphrases.benign_count_reordered) == {}


def test_a_number_of_a_quoted_log_line_is_not_rounded():
    (base, *_rest) = sample_bases()
    quoted = copy.deepcopy(base)
    claims = quoted.latest_stage("execute").output["claims"]
    claims[1]["claim_text"] = "order-service logged at 22:42: heap at 3.8GB"
    assert not any("claim-2" in case for case in rewritten(paraphrases.benign_bound_stated, [quoted]))
    claims[1]["claim_text"] = "order-service heap reached 3.8GB"
    assert "sample-broad-order-service claim-2: 3.8GB -> under 4GB" in rewritten(
        paraphrases.benign_bound_stated, [quoted]
    )


# The classes whose words the typed check reads today; the others (a bound, a fraction for a percent, a time in
# another zone or in words, 168h20m in words) are reported rejected by the eval until the gate reads them.
READ_BY_THE_GATE = (
    "benign_unit_spelled",
    "benign_duration_rescaled",
    "benign_count_abbreviated",
    "benign_count_reordered",
    "benign_field_worded",
    "benign_field_after_value",
    "benign_state_worded",
    "benign_time_reformatted",
    "benign_bytes_rescaled",
    "benign_negative_as_ago",
)


def test_the_paraphrases_the_gate_reads_pass_it(rules):
    classes = tuple(m for m in ENV_MUTATIONS if m.name in READ_BY_THE_GATE)
    assert {m.name for m in classes} == set(READ_BY_THE_GATE)
    report = run_suite(sample_bases(), rules, classes)
    assert report["benign"]["cases"] >= 8
    assert report["benign"]["rejected"] == 0, [c["misses"] for c in report["classes"] if c["misses"]]
