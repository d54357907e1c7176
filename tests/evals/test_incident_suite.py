"""`evcli eval incidents`: generated incidents asked through the whole chain, scored from the answer's cited suspects."""

from __future__ import annotations

from tests.cli._util import evcli


def test_a_small_run_scores_each_question_from_the_cited_suspects_and_fails_under_its_target():
    # seeds 4-6 are of the tune split: a test never reads the held-out incidents
    run = evcli(
        "eval", "incidents", "--first-seed", "4", "--count", "3", "--split", "tune", "--questions", "1", "--json"
    )
    assert run.exit_code == 0, run
    report = run.json()
    assert report["seeds"] == [4, 5, 6]
    assert len(report["results"]) == 3
    for result in report["results"]:
        assert result["error"] is None
        assert result["certain"] is False  # a root cause is only ever a hypothesis
        assert result["as1"] == (result["ranked"][:1] == [result["truth"]])
        assert result["as3"] == (result["truth"] in result["ranked"][:3])
    totals = report["totals"]
    assert totals["questions"] == 3 and totals["certain"] == 0
    assert totals["as1"] == round(sum(r["as1"] for r in report["results"]) / 3, 4)
    assert set(report["by_split"]) == {"tune", "holdout"}
    above = min(1.0, totals["as1"] + 0.01)
    missed = evcli(
        "eval",
        "incidents",
        "--first-seed",
        "4",
        "--count",
        "3",
        "--split",
        "tune",
        "--questions",
        "1",
        "--fail-under",
        above,
    )
    assert missed.exit_code == (1 if totals["as1"] < above else 0), missed
    assert "AS@1" in missed.stdout


def test_an_unknown_split_is_a_usage_error():
    run = evcli("eval", "incidents", "--split", "train")
    assert run.exit_code == 2 and "--split must be" in run.stderr
