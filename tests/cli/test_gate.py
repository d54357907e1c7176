"""`evcli gate SESSION|FILE`: exit codes, JSON and human output, gate history in the store."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from evcli.store.db import TraceStore
from tests.cli._util import (
    EXIT_BY_SEVERITY,
    RULES,
    assert_clean_error,
    counts,
    evcli,
    expected_gate,
    export_offline_session,
    gate_rows,
    import_sample,
    kind_of,
    load_json,
    raw_rows,
    rules_text,
    rules_with,
    sample_files,
    session_id_of,
    snapshot,
)
from tests.conftest import sample

ALL_SAMPLES = sample_files()
FAULTS = [p for p in ALL_SAMPLES if kind_of(p) == "fault"]
BASES = [p for p in ALL_SAMPLES if kind_of(p) == "base"]


def test_the_sample_set_has_bases_and_faults_of_every_severity():
    # Guards the parametrised tests below against an empty or one-sided sample set.
    assert len(BASES) >= 3 and len(FAULTS) >= 10
    assert {expected_gate(p)["severity"] for p in ALL_SAMPLES} == {"none", "low_confid", "reject"}


# --- gating a file -------------------------------------------------------------------------


@pytest.mark.parametrize("path", ALL_SAMPLES, ids=lambda p: p.stem)
def test_gate_file_json_matches_annotation(path, db_path):
    expected = expected_gate(path)
    run = evcli("gate", path, "--json")

    assert run.exit_code == EXIT_BY_SEVERITY[expected["severity"]], run
    report = run.json()
    assert report["session_id"] == session_id_of(path)
    assert report["source"] == "file"
    assert report["seq"] is None and report["changes"] is None
    assert report["result"]["severity"] == expected["severity"]
    assert report["result"]["status"] == expected["status"]
    assert report["result"]["failed_rules"] == expected["failed_rules"]
    # Every failed rule is backed by a finding of that rule.
    assert {f["rule"] for f in report["result"]["errors"]} == set(expected["failed_rules"])
    # A file is only checked: no store is created or written.
    assert not db_path.exists()
    assert not db_path.parent.exists() or os.listdir(db_path.parent) == []


@pytest.mark.parametrize("path", FAULTS, ids=lambda p: p.stem)
def test_gate_fault_file_human_output_names_rule_and_shows_evidence(path):
    expected = expected_gate(path)
    run = evcli("gate", path)

    assert run.exit_code == EXIT_BY_SEVERITY[expected["severity"]], run
    lines = run.stdout.splitlines()
    assert lines[0].startswith(f"session {session_id_of(path)} · round 1 · ")
    for rule in expected["failed_rules"]:  # a fault one rule catches, or two (defence in depth)
        assert any(line.startswith(f"✗ {rule} ({expected['severity']})") for line in lines), run
    assert any(line.startswith("    excerpt:  ") for line in lines), run
    assert any(line.startswith("    evidence: ") for line in lines), run
    assert any(
        line.startswith(f"gate fail severity {expected['severity']} · rules gatekeeper-rules-v1") for line in lines
    ), run
    assert lines[-2].endswith(f"from {RULES}"), run
    assert lines[-1].startswith("sources not re-checked: "), run
    # A file is not stored, so there is no history line.
    assert "stored as gate result" not in run.stdout
    assert run.stderr == ""


def test_gate_fault_file_shows_the_failing_binding_and_its_evidence():
    run = evcli("gate", sample("fault-excerpt-number-changed"))

    assert run.exit_code == 4, run
    lines = run.stdout.splitlines()
    assert "✗ claim-1#0 query_metrics #1 $.alerts[0] · none binding.excerpt_supported" in lines
    assert "    excerpt:  HighCPUUsage, service=payment-service ... state=firing, current=29%, duration=25m" in lines
    evidence = [line for line in lines if line.startswith("    evidence: ")]
    assert len(evidence) == 1 and "current=92%" in evidence[0]
    assert any("binding.excerpt_supported (reject) claim-1#0" in line and "29%" in line for line in lines)


def test_gate_base_file_human_output_passes():
    run = evcli("gate", sample("broad-order-service"))

    assert run.exit_code == 0, run
    execute = next(s for s in load_json(sample("broad-order-service"))["stage_outputs"] if s["stage"] == "execute")
    bindings = [(c["claim_id"], i) for c in execute["output"]["claims"] for i in range(len(c["evidence_bindings"]))]
    assert len(bindings) == 7
    lines = run.stdout.splitlines()
    assert lines[0] == "session sample-broad-order-service · round 1 · 7 bindings"
    passed = [line for line in lines if line.startswith("✓ ")]
    assert [line.split()[1] for line in passed] == [f"{c}#{i}" for c, i in bindings]
    assert not any(line.startswith("✗") for line in lines)
    assert any(line.startswith("gate pass severity none") for line in lines)
    assert run.stderr == ""


def test_gate_file_writes_nothing_even_when_the_session_is_stored(db_path, tmp_path):
    path = sample("narrow-payment-highcpu")
    import_sample(path, db_path)
    before = snapshot(db_path)

    for args in (("gate", path), ("gate", path, "--json"), ("gate", path, "--db", db_path)):
        run = evcli(*args)
        assert run.exit_code == 0, run
        assert "stored as gate result" not in run.stdout

    assert snapshot(db_path) == before
    assert len(gate_rows(db_path, "sample-narrow-payment-highcpu")) == 1


# --- gating a stored session --------------------------------------------------------------


def test_gate_stored_base_session_appends_history(tmp_path):
    db = tmp_path / "x.db"
    sid = import_sample(sample("narrow-payment-highcpu"), db)
    assert sid == "sample-narrow-payment-highcpu"
    first = raw_rows(db, "gate_result")
    assert len(first) == 1  # the history the sample was exported with
    runs_before = raw_rows(db, "diagnosis_run")

    run = evcli("gate", sid, "--db", db)

    assert run.exit_code == 0, run
    assert "stored as gate result #2" in run.stdout.splitlines()
    assert "unchanged against the previous result" in run.stdout
    assert any(line.startswith("gate pass severity none") for line in run.stdout.splitlines())
    rows = gate_rows(db, sid)
    assert [r["seq"] for r in rows] == [1, 2]
    assert rows[1]["severity"] == "none" and rows[1]["status"] == "pass" and rows[1]["round"] == 1
    assert json.loads(rows[1]["result"])["failed_rules"] == []
    second = raw_rows(db, "gate_result")
    assert second[0] == first[0]  # the earlier result, byte for byte

    run = evcli("gate", sid, "--db", db, "--json")

    assert run.exit_code == 0, run
    report = run.json()
    assert report["source"] == "store"
    assert report["seq"] == 3
    assert report["round"] == 1
    assert report["result"]["severity"] == "none"
    changes = report["changes"]
    assert changes["unchanged"] is True
    assert changes["severity"] == ["none", "none"]
    assert changes["failed_rules_added"] == [] and changes["failed_rules_removed"] == []
    assert changes["bindings_changed"] == []
    third = raw_rows(db, "gate_result")
    assert len(third) == 3 and third[:2] == second
    assert [r["seq"] for r in gate_rows(db, sid)] == [1, 2, 3]
    # Gating only appends gate results: the run record is untouched.
    assert raw_rows(db, "diagnosis_run") == runs_before


def test_gate_stored_session_in_default_store(db_path):
    sid = import_sample(sample("negative-inventory-hikaricp"), db_path)

    run = evcli("gate", sid, "--json")

    assert run.exit_code == 0, run
    assert run.json()["seq"] == 2
    assert [r["seq"] for r in gate_rows(db_path, sid)] == [1, 2]


def test_unique_item_downgraded_to_warning_lets_duplicate_binding_pass(tmp_path):
    db = tmp_path / "x.db"
    rule = "binding.unique_item"
    sid = import_sample(sample("fault-duplicate-item-binding"), db)
    assert gate_rows(db, sid) == []

    run = evcli("gate", sid, "--db", db)

    assert run.exit_code == 3, run
    assert any(line.startswith(f"✗ {rule} (low_confid) claim-1#1") for line in run.stdout.splitlines()), run
    assert "stored as gate result #1" in run.stdout and "first gate result of this session" in run.stdout
    first = raw_rows(db, "gate_result")
    (row,) = gate_rows(db, sid)
    assert (row["seq"], row["severity"], row["status"]) == (1, "low_confid", "fail")
    assert json.loads(row["result"])["failed_rules"] == [rule]

    warning_rules = rules_with(tmp_path, rule, severity="warning")
    run = evcli("gate", sid, "--db", db, "--rules", warning_rules, "--json")

    assert run.exit_code == 0, run
    report = run.json()
    assert report["seq"] == 2
    assert report["result"]["severity"] == "none" and report["result"]["failed_rules"] == []
    assert [(w["rule"], w["severity"]) for w in report["result"]["warnings"]] == [(rule, "warning")]
    changes = report["changes"]
    assert changes["unchanged"] is False
    assert changes["severity"] == ["low_confid", "none"]
    assert changes["status"] == ["fail", "pass"]
    assert rule in changes["failed_rules_removed"]
    assert changes["failed_rules_added"] == []
    assert changes["rules_changed"] is True
    assert [(b["claim_id"], b["binding_index"], b["before"], b["after"]) for b in changes["bindings_changed"]] == [
        ("claim-1", 1, "fail", "pass")
    ]
    rows = gate_rows(db, sid)
    assert [(r["seq"], r["severity"]) for r in rows] == [(1, "low_confid"), (2, "none")]
    assert rows[0]["rules_hash"] != rows[1]["rules_hash"]
    assert raw_rows(db, "gate_result")[0] == first[0]

    # Back to the shipped rules: the human output explains the change, stderr notes the rules differ.
    run = evcli("gate", sid, "--db", db)

    assert run.exit_code == 3, run
    lines = run.stdout.splitlines()
    assert "stored as gate result #3" in lines
    assert "changed against the previous result: severity none → low_confid" in lines
    assert f"  + now failing: {rule}" in lines
    assert "  claim-1#1 $.alerts[0]: pass → fail" in lines
    assert run.stderr.strip() == "note: the rules file differs from the one used last time"
    rows = gate_rows(db, sid)
    assert [r["severity"] for r in rows] == ["low_confid", "none", "low_confid"]
    assert rows[2]["rules_hash"] == rows[0]["rules_hash"] != rows[1]["rules_hash"]


def test_excerpt_rule_disabled_lets_changed_number_pass(tmp_path):
    db = tmp_path / "x.db"
    rule = "binding.excerpt_supported"
    sid = import_sample(sample("fault-excerpt-number-changed"), db)

    run = evcli("gate", sid, "--db", db, "--json")
    assert run.exit_code == 4, run
    assert run.json()["result"]["failed_rules"] == [rule]
    assert run.json()["changes"] is None

    # The claim restates 92% while the excerpt says 29%: claim.facts_in_excerpts would catch it too.
    rules_file = rules_with(tmp_path, rule, enabled=False)
    rules_file = rules_with(tmp_path, "claim.facts_in_excerpts", enabled=False, source=rules_file)
    run = evcli("gate", sid, "--db", db, "--rules", rules_file)

    assert run.exit_code == 0, run
    lines = run.stdout.splitlines()
    assert "changed against the previous result: severity reject → none" in lines
    assert f"  - no longer failing: {rule}" in lines
    assert "note: the rules file differs" in run.stderr
    rows = gate_rows(db, sid)
    assert [(r["seq"], r["severity"]) for r in rows] == [(1, "reject"), (2, "none")]
    assert rows[0]["rules_hash"] != rows[1]["rules_hash"]


def test_unchanged_result_under_a_different_rules_file_says_so(tmp_path):
    # Disabling a rule that does not fire on a valid session changes nothing but the rules hash.
    db = tmp_path / "x.db"
    sid = import_sample(sample("narrow-payment-highcpu"), db)
    changed = rules_with(tmp_path, "binding.unique_item", enabled=False)

    run = evcli("gate", sid, "--db", db, "--rules", changed, "--json")

    assert run.exit_code == 0, run
    changes = run.json()["changes"]
    assert changes["unchanged"] is True and changes["rules_changed"] is True
    run = evcli("gate", sid, "--db", db, "--rules", changed)
    assert "unchanged against the previous result" in run.stdout
    rows = gate_rows(db, sid)
    assert len(rows) == 3 and rows[1]["rules_hash"] == rows[2]["rules_hash"]


# --- bad rules files ----------------------------------------------------------------------------

_SHIPPED = RULES.read_text(encoding="utf-8")


def _without_rule(rule_id: str) -> str:
    blocks = _SHIPPED.split("[[rules]]")
    return "[[rules]]".join(b for b in blocks if f'id = "{rule_id}"\n' not in b)


def _edit(rule_id: str, old: str, new: str) -> str:
    """The shipped rules with `old` replaced by `new` inside one rule's block only."""
    blocks = _SHIPPED.split("[[rules]]")
    (index,) = [i for i, b in enumerate(blocks) if f'id = "{rule_id}"\n' in b]
    assert blocks[index].count(old) == 1, (rule_id, old)
    blocks[index] = blocks[index].replace(old, new)
    return "[[rules]]".join(blocks)


BAD_RULES = {
    "invalid-toml": ('version = "x"\n[[rules]\n', "is not valid TOML"),
    "unknown-rule-id": (
        _edit("binding.unique_item", 'id = "binding.unique_item"', 'id = "binding.unique_itemz"'),
        "unknown id 'binding.unique_itemz'",
    ),
    "missing-rule": (_without_rule("binding.unique_item"), "rules missing: binding.unique_item"),
    "bad-severity": (
        _edit("binding.unique_item", 'default_severity = "low_confid"', 'default_severity = "fatal"'),
        "rule binding.unique_item: default_severity must be one of warning, low_confid, reject, got 'fatal'",
    ),
    "duplicate-rule": (
        _SHIPPED + '\n[[rules]]\nid = "binding.unique_item"\nenabled = true\ndefault_severity = "reject"\n',
        "rule binding.unique_item is listed twice",
    ),
    "missing-version": (_SHIPPED.replace('version = "gatekeeper-rules-v1"', ""), "missing top-level `version` string"),
    "enabled-not-bool": (
        _edit("binding.unique_item", "enabled = true", 'enabled = "yes"'),
        "rule binding.unique_item: `enabled` must be true or false",
    ),
    "param-out-of-range": (
        _edit("binding.excerpt_supported", "min_similarity = 0.92", "min_similarity = 1.5"),
        "min_similarity must be in (0, 1]",
    ),
    "unknown-param": (
        _edit("binding.excerpt_supported", "min_similarity = 0.92", "min_similarity = 0.92\nfuzz = 1"),
        "unknown params fuzz",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_RULES), ids=str)
def test_malformed_rules_file_is_a_one_line_usage_error(case, tmp_path):
    text, fragment = BAD_RULES[case]
    assert text != _SHIPPED
    path = rules_text(tmp_path, text)

    run = evcli("gate", sample("narrow-payment-highcpu"), "--rules", path)

    assert_clean_error(run, 2, fragment, str(path))


def test_missing_rules_file_is_a_usage_error(tmp_path):
    run = evcli("gate", sample("narrow-payment-highcpu"), "--rules", tmp_path / "nope.toml")

    assert_clean_error(run, 2, "cannot read rules file", "nope.toml")


def test_malformed_rules_do_not_touch_a_stored_session(tmp_path):
    db = tmp_path / "x.db"
    sid = import_sample(sample("broad-order-service"), db)
    before = snapshot(db)

    run = evcli("gate", sid, "--db", db, "--rules", rules_text(tmp_path, BAD_RULES["missing-rule"][0]))

    assert_clean_error(run, 2, "rules missing: binding.unique_item")
    assert snapshot(db) == before


# --- bad sources and stores -----------------------------------------------------------------------


def test_unknown_session_id(tmp_path):
    db = tmp_path / "x.db"
    import_sample(sample("narrow-payment-highcpu"), db)
    before = snapshot(db)

    run = evcli("gate", "no-such-session-42", "--db", db)

    assert_clean_error(run, 2, "unknown session 'no-such-session-42'", "evcli sessions")
    assert snapshot(db) == before


def test_unknown_session_id_in_default_store(db_path):
    run = evcli("gate", "no-such-session-42")

    assert_clean_error(run, 2, "unknown session 'no-such-session-42'")
    assert set(counts(db_path).values()) == {0}


def test_missing_db_named_by_option(tmp_path):
    missing = tmp_path / "missing.db"

    run = evcli("gate", "sample-narrow-payment-highcpu", "--db", missing)

    assert_clean_error(run, 1, "no trace store", str(missing))
    assert not missing.exists()


def test_corrupt_db_is_a_runtime_error_and_left_unchanged(tmp_path):
    corrupt = tmp_path / "corrupt.db"
    data = os.urandom(8192)
    corrupt.write_bytes(data)

    run = evcli("gate", "sample-narrow-payment-highcpu", "--db", corrupt)

    assert_clean_error(run, 1, "cannot open trace store", str(corrupt))
    assert corrupt.read_bytes() == data
    assert sorted(p.name for p in tmp_path.iterdir()) == ["corrupt.db"]  # no -wal / -shm left behind


def test_non_json_file(tmp_path):
    path = tmp_path / "notes.json"
    path.write_text("this is not json\n", encoding="utf-8")

    assert_clean_error(evcli("gate", path), 2, "is not valid JSON", "line 1 column 1")


def test_json_that_is_not_a_session(tmp_path):
    path = tmp_path / "other.json"
    path.write_text(json.dumps({"hello": "world"}), encoding="utf-8")

    assert_clean_error(evcli("gate", path), 2, "is not an evcli session document", "run")


def test_missing_json_file(tmp_path):
    assert_clean_error(evcli("gate", tmp_path / "gone.json"), 2, "no such file", "gone.json")


def test_session_without_executor_stage(tmp_path):
    db = tmp_path / "x.db"
    run_record = TraceStore(db).create_session("q")
    sid = run_record.session_id

    run = evcli("gate", sid, "--db", db)

    line = assert_clean_error(run, 2, f"session {sid} has no executor output to gate")
    assert "reached the execute stage" in line
    assert gate_rows(db, sid) == []


def test_file_without_executor_stage(tmp_path):
    document = load_json(sample("narrow-payment-highcpu"))
    document["stage_outputs"] = [s for s in document["stage_outputs"] if s["stage"] != "execute"]
    path = tmp_path / "no-execute.json"
    path.write_text(json.dumps(document), encoding="utf-8")

    line = assert_clean_error(evcli("gate", path), 2, "has no executor output to gate")
    assert "sample-narrow-payment-highcpu" in line


def test_file_copied_without_json_suffix_is_still_a_file(tmp_path):
    path = tmp_path / "session.export"
    shutil.copy(sample("fault-wrong-answer-version"), path)

    run = evcli("gate", path, "--json")

    assert run.exit_code == 3, run
    assert run.json()["result"]["failed_rules"] == ["contract.answer_version"]


# --- product bugs ---------------------------------------------------------------------------------


def test_unknown_session_id_with_closing_bracket_tag(tmp_path):
    db = tmp_path / "x.db"
    TraceStore(db).close()

    run = evcli("gate", "abc[/]", "--db", db)

    assert_clean_error(
        run, 2, "'abc[/]' is not a valid session id"
    )  # named verbatim; brackets are outside the id pattern


def test_unknown_session_id_with_markup_like_text_is_named_verbatim(tmp_path):
    db = tmp_path / "x.db"
    TraceStore(db).close()

    run = evcli("gate", "abc[red]", "--db", db)

    assert_clean_error(
        run, 2, "'abc[red]' is not a valid session id"
    )  # named verbatim; brackets are outside the id pattern


def test_gate_human_output_shows_bracketed_claim_id(tmp_path):
    document = load_json(sample("narrow-payment-highcpu"))
    execute = next(s for s in document["stage_outputs"] if s["stage"] == "execute")
    execute["output"]["claims"][0]["claim_id"] = "[claim-1]"
    path = tmp_path / "bracketed.json"
    path.write_text(json.dumps(document), encoding="utf-8")

    run = evcli("gate", path)

    assert run.exit_code == 0, run
    assert any(line.startswith("✓ [claim-1]#0 query_metrics #1 $.alerts[0]") for line in run.stdout.splitlines()), run


# --- --against DIR: re-deriving the cited refs from a snapshot environment ------------------------


@pytest.fixture(scope="module")
def demo_export(tmp_path_factory):
    from evcli.backends.snapshot import demo_env_dir

    question = "Why is order-service failing? It keeps restarting and checkout requests time out."
    return export_offline_session(tmp_path_factory.mktemp("demo"), question, demo_env_dir()), demo_env_dir()


def test_gate_file_says_sources_were_not_rechecked():
    human = evcli("gate", sample("narrow-payment-highcpu"))
    report = evcli("gate", sample("narrow-payment-highcpu"), "--json").json()

    assert human.exit_code == 0, human
    assert human.stdout.splitlines()[-1].startswith(
        "sources not re-checked: citations were compared with the outputs recorded"
    )
    assert report["sources_rechecked"] is False and report["against"] is None


def test_gate_against_the_env_it_ran_on_passes(demo_export):
    path, env_dir = demo_export
    human = evcli("gate", path, "--against", env_dir)
    report = evcli("gate", path, "--against", env_dir, "--json").json()

    assert human.exit_code == 0, human
    assert human.stdout.splitlines()[-1] == f"sources re-checked: invocations re-run on {env_dir}"
    assert "not re-checked" not in human.stdout
    assert report["sources_rechecked"] is True and report["against"] == str(env_dir)
    assert report["result"]["severity"] == "none" and report["result"]["warnings"] == []


def test_gate_against_another_env_rejects_naming_the_invocation(demo_export, tmp_path):
    path, env_dir = demo_export
    changed = tmp_path / "env"
    shutil.copytree(env_dir, changed)
    log = changed / "logs" / "order-service.log"
    log.write_text(log.read_text(encoding="utf-8").replace("restartCount=1", "restartCount=2"), encoding="utf-8")

    run = evcli("gate", path, "--against", changed, "--json")

    assert run.exit_code == 4, run
    errors = run.json()["result"]["errors"]
    assert {e["rule"] for e in errors} == {"provenance.source_matches"}
    assert any("(query_logs" in e["message"] and "restartCount=2" in e["message"] for e in errors), errors


def test_gate_against_keeps_a_low_confid_finding(demo_export, tmp_path):
    path, env_dir = demo_export
    document = load_json(path)
    execute = next(s for s in document["stage_outputs"] if s["stage"] == "execute")
    bindings = execute["output"]["claims"][0]["evidence_bindings"]
    bindings.append(dict(bindings[0]))  # the same item bound twice: binding.unique_item, low_confid
    edited = tmp_path / "twice.json"
    edited.write_text(json.dumps(document, ensure_ascii=False), encoding="utf-8")

    run = evcli("gate", edited, "--against", env_dir, "--json")

    assert run.exit_code == 3, run
    assert run.json()["result"]["failed_rules"] == ["binding.unique_item"]


def test_gate_against_rejects_cited_live_backend_invocations_it_cannot_recheck(demo_export, tmp_path):
    """A document can name any backend: cited evidence `--against DIR` cannot re-derive is not shown to be
    real, so the gate fails instead of passing with a warning (a forged value behind a named Loki passed)."""
    path, env_dir = demo_export
    document = load_json(path)
    document["run"]["config"]["env"] = {"prometheus": "http://127.0.0.1:9", "loki": "http://127.0.0.1:9"}
    for invocation in document["invocations"]:  # what live backends record: no snapshot file digests
        if isinstance(invocation["output"], dict):
            invocation["output"].pop("digests", None)
    live = tmp_path / "live.json"
    live.write_text(json.dumps(document, ensure_ascii=False), encoding="utf-8")
    cited = {
        b["source_invocation_id"]: b["tool_name"]
        for c in next(s for s in document["stage_outputs"] if s["stage"] == "execute")["output"]["claims"]
        for b in c["evidence_bindings"]
    }

    run = evcli("gate", live, "--against", env_dir)

    assert run.exit_code != 0, run
    skipped = [line for line in run.stdout.splitlines() if line.startswith("✗ provenance.source_matches")]
    expected = sorted(i for i, tool in cited.items() if tool in ("query_metrics", "query_logs"))
    assert len(skipped) == len(expected) and all("served by a live backend (" in line for line in skipped), skipped
    assert run.stdout.splitlines()[-1].endswith(
        f"; {len(expected)} cited invocation(s) could not be re-checked there (see errors)"
    )


def test_gate_against_rechecks_what_the_named_live_backend_cannot_have_served(demo_export, tmp_path):
    """Naming Loki in a document does not make its metrics live, nor log lines whose output names the
    snapshot files they came from: those are re-run on DIR, and a value edited consistently is caught."""
    path, env_dir = demo_export
    document = load_json(path)
    document["run"]["config"]["env"] = {"loki": "http://127.0.0.1:9"}
    live = tmp_path / "loki.json"
    live.write_text(json.dumps(document, ensure_ascii=False), encoding="utf-8")

    run = evcli("gate", live, "--against", env_dir)

    assert run.exit_code == 0, run
    assert "could not be re-checked" not in run.stdout and "provenance.source_matches" not in run.stdout


def test_gate_against_a_missing_directory_is_a_usage_error(tmp_path):
    run = evcli("gate", sample("narrow-payment-highcpu"), "--against", tmp_path / "nowhere")

    assert_clean_error(run, 2, "nowhere")


def test_gate_stored_session_against_env_is_appended_to_history(demo_export, db_path):
    path, env_dir = demo_export
    session_id = import_sample(path, db_path)

    run = evcli("gate", session_id, "--against", env_dir, "--db", db_path, "--json")

    assert run.exit_code == 0, run
    assert run.json()["source"] == "store" and run.json()["sources_rechecked"] is True
    assert len(gate_rows(db_path, session_id)) == 2


def test_a_which_ip_answer_holds_against_its_source_and_a_forged_address_count_fails(tmp_path):
    """ "which IP had the most failed passwords?": the count per address is cited from $.stats, re-derived
    from the host snapshot by `gate --against`; the same export with one address's count changed in the
    output, the ref and the excerpt alike (a consistent forgery) passes a plain gate but not --against."""
    host = Path(__file__).resolve().parents[2] / "evcli" / "envs" / "host"
    path = export_offline_session(tmp_path, "which IP had the most failed passwords?", host)
    document = load_json(path)
    text = json.dumps(document, ensure_ascii=False)
    assert "by address: 203.0.113.45 38, 198.51.100.7 4" in text

    assert evcli("gate", path, "--against", host).exit_code == 0
    forged = tmp_path / "forged.json"
    forged.write_text(
        text.replace("203.0.113.45 38", "203.0.113.45 39").replace('"203.0.113.45": 38', '"203.0.113.45": 39'),
        encoding="utf-8",
    )
    assert evcli("gate", forged).exit_code == 0  # consistent in itself
    run = evcli("gate", forged, "--against", host, "--json")
    assert run.exit_code == 4, run
    assert {e["rule"] for e in run.json()["result"]["errors"]} == {"provenance.source_matches"}


def test_gate_report_and_trace_refuse_a_fifo_named_like_a_session_file_without_blocking(fifo):
    for command in ("gate", "report", "trace"):
        assert_clean_error(evcli(command, fifo), 2, f"cannot read {fifo}: refused: not a regular file (a FIFO)")


@pytest.fixture(scope="module")
def control_session(tmp_path_factory):
    from tests.report.conftest import control_export

    return control_export(tmp_path_factory)


def test_gate_human_output_shows_control_characters_in_evidence_visibly(control_session):
    from tests.report.conftest import RAW_CONTROLS

    run = evcli("gate", control_session)

    assert run.exit_code in EXIT_BY_SEVERITY.values(), run
    raw = run.result.stdout
    assert not [c for c in RAW_CONTROLS if c in raw], raw
    assert "status=503 \\x1b[2J\\x1b]0;PWNED\\x07 \\x1b]8;;https://attacker.example\\x1b\\click" in raw
    assert "\\x9b2J \\u202eevil\\u202c" in raw
