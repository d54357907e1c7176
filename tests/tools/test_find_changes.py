"""find_changes on a hand-built snapshot: the cause ranked before its callers, exact items, bad input stated,
and a why-question answered, gated and re-derived from the snapshot."""

from __future__ import annotations

import json
import math
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

from tests.cli._util import evcli

START = datetime(2026, 5, 4, 15, 0, tzinfo=UTC)
ONSET = START + timedelta(minutes=100)  # 16:40 UTC = 18:40 Europe/Berlin
STEP = timedelta(seconds=30)
POINTS = 240  # two hours


def _write_metrics(directory: Path, service: str, columns: dict[str, list[float]]) -> None:
    names = list(columns)
    lines = ["timestamp," + ",".join(names)]
    for index in range(POINTS):
        moment = (START + index * STEP).isoformat().replace("+00:00", "Z")
        lines.append(moment + "," + ",".join(_cell(columns[name][index]) for name in names))
    (directory / "metrics" / f"{service}.csv").write_text("\n".join(lines) + "\n")


def _cell(value: float) -> str:
    return "NaN" if math.isnan(value) else f"{value:.4f}"


def _series(rng: random.Random, level: float, noise: float, effect: float = 0.0, delay: int = 0) -> list[float]:
    onset = int((ONSET - START) / STEP) + delay
    return [rng.gauss(level, noise) + (effect if index >= onset else 0.0) for index in range(POINTS)]


def build(directory: Path, *, topology: bool = True) -> Path:
    """gateway → checkout → payment (and gateway → catalog); payment's CPU saturates at ONSET, checkout's and
    the gateway's latency follow one and two steps later, diluted; catalog stays normal but has a blip."""
    rng = random.Random(7)
    (directory / "metrics").mkdir(parents=True)
    (directory / "logs").mkdir()
    env = ['name = "shop"', 'timezone = "Europe/Berlin"']
    if topology:
        env += ["[topology]", 'gateway = ["checkout", "catalog"]', 'checkout = ["payment"]']
    (directory / "env.toml").write_text("\n".join(env) + "\n")
    _write_metrics(
        directory,
        "payment",
        {
            "cpu_usage[%]": _series(rng, 7.0, 0.5, 80.0),
            "latency_p99[ms]": _series(rng, 40.0, 3.0, 260.0),
            "constant_flag": [1.0] * POINTS,
        },
    )
    _write_metrics(
        directory,
        "checkout",
        {"cpu_usage[%]": _series(rng, 20.0, 2.0), "latency_p99[ms]": _series(rng, 90.0, 6.0, 200.0, delay=1)},
    )
    _write_metrics(
        directory,
        "gateway",
        {"cpu_usage[%]": _series(rng, 30.0, 2.0), "latency_p99[ms]": _series(rng, 120.0, 8.0, 180.0, delay=2)},
    )
    catalog = {"cpu_usage[%]": _series(rng, 15.0, 1.0), "latency_p99[ms]": _series(rng, 60.0, 4.0)}
    catalog["latency_p99[ms]"][150] = 900.0  # an unrelated blip before the incident
    catalog["cpu_usage[%]"][30] = float("nan")
    _write_metrics(directory, "catalog", catalog)
    lines = []
    for minute in range(120):
        moment = START + timedelta(minutes=minute)
        stamp = moment.astimezone(ZoneInfo("Europe/Berlin")).strftime("%Y-%m-%d %H:%M:%S.000")
        lines.append(f"{stamp}  INFO 1 --- [nio-8080-exec-1] c.e.checkout.Api : POST /checkout status=200 took 80ms")
        lines.append(f"{stamp}  WARN 1 --- [nio-8080-exec-2] c.e.checkout.Config : deprecated property shop.legacy")
        if moment >= ONSET:
            lines.append(
                f"{stamp} ERROR 1 --- [nio-8080-exec-3] c.e.checkout.PayClient : call to http://payment:8080/pay timed out"
            )
    (directory / "logs" / "checkout.log").write_text("\n".join(lines) + "\n")
    return directory


def _changes(directory: Path, *args: str) -> dict:
    run = evcli("tool", "find_changes", "--env", directory, "--json", *args)
    assert run.exit_code == 0, run
    return run.json()


def test_the_cause_ranks_before_the_callers_that_show_its_effect(tmp_path):
    found = _changes(build(tmp_path / "env"))
    output = found["output"]
    first = output["suspects"][0]
    assert first["service"] == "payment" and first["fault"] == "cpu"
    assert first["onset"] == "2026-05-04T18:40:00+02:00"  # the environment's zone
    assert first["affects"] == ["checkout", "gateway"]
    ranked = [suspect["service"] for suspect in output["suspects"]]
    assert ranked.index("payment") < ranked.index("checkout") < ranked.index("gateway")
    assert "catalog" not in ranked  # a blip before the incident and noise are no change
    assert "topology from env.toml" in output["ranked_by"]
    assert output["searched_range"].startswith("2026-05-04T18:40:00+02:00..")
    # the baseline is as long a stretch right before the window as the window
    start, _, end = output["baseline_range"].partition("..")
    assert output["searched_range"] == "2026-05-04T18:40:00+02:00..2026-05-04T18:59:30+02:00"
    assert (start, end) == ("2026-05-04T18:20:30+02:00", "2026-05-04T18:40:00+02:00")


def test_each_change_states_exact_numbers_of_the_data(tmp_path):
    output = _changes(build(tmp_path / "env"))["output"]
    cpu = next(c for c in output["changes"] if c["service"] == "payment" and c["signal"] == "cpu_usage")
    assert cpu["class"] == "cpu" and cpu["direction"] == "up" and cpu["unit"] == "%"
    assert 6.5 < cpu["baseline"] < 7.5 and 85 < cpu["value"] < 89
    assert cpu["points"] == POINTS - int((ONSET - START) / STEP) and cpu["outside"] == cpu["points"]
    for change in output["changes"]:
        assert set(change) >= {
            "service",
            "signal",
            "class",
            "baseline",
            "spread",
            "value",
            "direction",
            "onset",
            "score",
        }
    scores = [change["score"] for change in output["changes"]]
    assert scores == sorted(scores, reverse=True)


def test_log_lines_name_the_callee_when_no_topology_is_declared(tmp_path):
    output = _changes(build(tmp_path / "env", topology=False))["output"]
    assert output["suspects"][0]["service"] == "payment"
    assert "peers named in log lines" in output["ranked_by"]
    new = [c for c in output["changes"] if c["kind"] == "new_template"]
    assert any("http://payment:8080/pay timed out" in c["example"] for c in new)


def test_a_named_window_and_bad_input_are_stated_not_turned_into_changes(tmp_path):
    directory = build(tmp_path / "env")
    output = _changes(directory, "--since", "2026-05-04 18:40")["output"]
    assert output["suspects"][0]["service"] == "payment"
    assert not any(c["signal"] == "constant_flag" for c in output["changes"])
    early = _changes(directory, "--since", "2026-05-04 17:00")["output"]  # the window starts with the data
    assert early["changes"] == [] and "baseline holds 0 points" in early["message"]
    assert "9 series not judged" in early["message"]
    late = _changes(directory, "--since", "2026-05-05 09:00")["output"]  # after the data
    assert late["changes"] == [] and "after the data's end" in late["message"]


def test_a_why_question_names_the_cause_first_as_a_hypothesis_cites_the_chain_and_re_derives(tmp_path):
    directory = build(tmp_path / "env")
    run = evcli(
        "ask", "Users report errors and slow pages since 18:40. What is the root cause?", "--env", directory, "--json"
    )
    assert run.exit_code == 0, run
    answer = run.json()
    root = [claim for claim in answer["claims"] if claim["claim_type"] == "root_cause"]
    assert root and "rank 1: payment, fault=cpu" in root[0]["claim_text"]
    assert any(e["raw_path"].startswith("$.suspects[") for e in root[0]["evidence"])
    chain = [
        claim
        for claim in answer["claims"]
        if claim["claim_type"] == "symptom" and claim["evidence"][0]["tool_name"] == "find_changes"
    ]
    assert [c["claim_text"].split(" ", 1)[0] for c in chain] == ["checkout", "gateway"]
    assert answer["gate"]["status"] == "pass"
    assert "hypothesis" in answer["answer"]["user_facing_answer"]
    regate = evcli("gate", answer["session_id"], "--against", directory, "--json")
    assert regate.exit_code == 0, regate
    zh = evcli("ask", "从 18:40 开始用户反馈报错，根因是什么？", "--env", directory, "--json")
    assert zh.exit_code == 0, zh
    assert any("rank 1: payment" in c["claim_text"] for c in zh.json()["claims"] if c["claim_type"] == "root_cause")


def test_a_forged_change_is_rejected_against_the_snapshot(tmp_path):
    directory = build(tmp_path / "env")
    run = evcli("ask", "What is the root cause?", "--env", directory, "--json")
    exported = tmp_path / "session.json"
    assert evcli("export", run.json()["session_id"], "--output", exported).exit_code == 0
    document = json.loads(exported.read_text())
    for invocation in document["invocations"]:
        if invocation["tool_name"] == "find_changes":
            item = invocation["output"]["changes"][0]
            item["value"] = item["value"] * 2
            for ref in invocation["retrieval_details"]["evidence_refs"]:
                if ref["raw_path"] == "$.changes[0]":
                    ref["text"] = ref["text"].replace(str(item["value"] / 2), str(item["value"]), 1)
    exported.write_text(json.dumps(document))
    regate = evcli("gate", exported, "--against", directory, "--json")
    assert regate.exit_code == 4, regate


def test_a_baseline_outside_the_data_and_a_one_point_series_are_stated(tmp_path):
    directory = build(tmp_path / "env")
    (directory / "metrics" / "lonely.csv").write_text("timestamp,cpu_usage[%]\n2026-05-04T16:50:00Z,99\n")
    output = _changes(directory, "--since", "2026-05-04 18:40", "--baseline-until", "2026-05-01 00:00")["output"]
    assert output["changes"] == [] and output["suspects"] == []
    assert "baseline holds 0 points" in output["message"]
    normal = _changes(directory, "--since", "2026-05-04 18:40")["output"]
    assert "lonely" not in [suspect["service"] for suspect in normal["suspects"]]
    assert "series not judged" in normal["message"]  # the one-point series (no baseline point) is counted, not judged


def test_a_counter_is_judged_as_its_rate_and_a_reset_is_no_change(tmp_path):
    directory = tmp_path / "env"
    (directory / "metrics").mkdir(parents=True)
    rows = ["timestamp,http_requests_total,http_request_errors_total"]
    total = errors = 0
    for index in range(POINTS):
        total = 0 if index == 150 else total + 100  # a restart resets the counter before the incident
        errors += 1 if index < 200 else 40  # 1 error a step, then 40 from ONSET on
        rows.append(f"{(START + index * STEP).isoformat()},{total},{errors}")
    (directory / "metrics" / "api.csv").write_text("\n".join(rows) + "\n")
    output = _changes(directory, "--since", "2026-05-04T16:40:00Z")["output"]
    (change,) = output["changes"]
    assert change["signal"] == "http_request_errors_total" and change.get("rate") is True
    assert change["unit"] == "/s" and change["value"] == 1.333  # 40 errors per 30 s step, to 4 digits
    assert change["baseline"] == 0.03333


def test_a_day_earlier_baseline_is_the_same_hours_the_day_before_as_far_as_the_data_reaches(tmp_path):
    directory = build(tmp_path / "env")
    output = _changes(directory, "--since", "2026-05-04 18:40", "--baseline", "day")["output"]
    # the data starts 17:00 the same day: nothing a day earlier, and that is stated, never a change
    assert output["changes"] == [] and "baseline holds 0 points" in output["message"]
    assert output["baseline_range"] == "2026-05-04T17:00:00+02:00..2026-05-04T17:00:00+02:00"
