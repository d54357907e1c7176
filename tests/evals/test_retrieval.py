"""Retrieval cases: ranks of the expected runbooks, recall@k and MRR by environment."""

from __future__ import annotations

from pathlib import Path

import pytest

from evcli.backends.snapshot import demo_env_dir
from evcli.core.errors import BadInput
from evcli.evals.retrieval import DEFAULT_K, RETRIEVAL_SUITE, load_retrieval_cases, run_suite

FIXTURES = Path(__file__).parent / "fixtures"
RETRIEVAL_CASES = FIXTURES / "retrieval-cases.toml"


def by_id(report: dict) -> dict[str, dict]:
    return {case["id"]: case for case in report["cases"]}


def test_fixture_cases_load():
    oom, leak, redis, latency = load_retrieval_cases(RETRIEVAL_CASES)

    assert (oom.env, oom.env_dir, oom.expected_doc, oom.expected_heading, oom.k) == (
        "demo",
        demo_env_dir(),
        "runbooks/high-memory.md",
        "Checks",
        DEFAULT_K,
    )
    assert leak.env == "demo" and leak.expected_heading is None  # env defaults to the demo
    assert redis.k == 3
    assert latency.query == "p99 latency slow"
    assert RETRIEVAL_SUITE.name == "retrieval.toml" and RETRIEVAL_SUITE.parent.name == "suites"


def test_ranks_recall_and_mrr(evcli_home):
    report = run_suite(load_retrieval_cases(RETRIEVAL_CASES))
    cases = by_id(report)

    # the section is third, although its document's first block is first
    assert (cases["oom-checks"]["rank"], cases["oom-checks"]["doc_rank"]) == (3, 1)
    assert cases["oom-checks"]["retrieved"][2] == "runbooks/high-memory.md › Checks"
    assert (cases["memory-leak-zh"]["rank"], cases["memory-leak-zh"]["reciprocal_rank"]) == (2, 0.5)
    assert (cases["redis-timeout"]["rank"], cases["redis-timeout"]["k"]) == (1, 3)
    assert len(cases["redis-timeout"]["retrieved"]) == 3
    miss = cases["latency-is-not-memory"]
    assert (miss["rank"], miss["doc_rank"], miss["hit"], miss["reciprocal_rank"]) == (None, None, False, 0.0)
    assert len(miss["retrieved"]) == 5 and not any("high-memory" in block for block in miss["retrieved"])
    assert all(case["error"] is None for case in report["cases"])

    expected = {"cases": 4, "hits": 3, "recall_at_k": 0.75, "mrr": round((1 / 3 + 1 / 2 + 1) / 4, 4)}
    assert report["by_env"] == {"demo": expected}
    assert {key: report["totals"][key] for key in expected} == expected and report["totals"]["seconds"] > 0
    assert report["k"] is None and report["suite"] == [str(RETRIEVAL_CASES)]
    # a fresh index every run: the user's kb.db is neither used nor created
    assert not (evcli_home / "kb.db").exists()


def test_k_overrides_every_case():
    report = run_suite(load_retrieval_cases(RETRIEVAL_CASES), k=1)

    assert [case["rank"] for case in report["cases"]] == [None, None, 1, None]
    assert all(case["k"] == 1 and len(case["retrieved"]) == 1 for case in report["cases"])
    assert report["totals"]["recall_at_k"] == 0.25 and report["totals"]["mrr"] == 0.25 and report["k"] == 1


def _write_env(directory: Path) -> Path:
    (directory / "runbooks").mkdir(parents=True)
    (directory / "runbooks" / "kafka-lag.md").write_text(
        "# Kafka consumer lag\n\n## Checks\n\nCompare consumer group offsets with the partition high watermark.\n",
        encoding="utf-8",
    )
    (directory / "runbooks" / "certificates.md").write_text(
        "# TLS certificate expiry\n\n## Renewal\n\nRenew the certificate with the internal CA before it expires.\n",
        encoding="utf-8",
    )
    return directory


def test_environments_are_reported_apart_and_an_unusable_one_misses(tmp_path):
    _write_env(tmp_path / "envs" / "mine")
    (tmp_path / "cases.toml").write_text(
        '[[cases]]\nid = "lag"\nenv = "envs/mine"\nquery = "consumer group offsets lag"\n'
        'expected_doc = "runbooks/kafka-lag.md"\nexpected_heading = "checks"\n'  # headings compare case-insensitively
        '[[cases]]\nid = "tls"\nenv = "envs/mine"\nquery = "certificate renewal"\nexpected_doc = "./runbooks/certificates.md"\n'
        '[[cases]]\nid = "scoped"\nenv = "envs/mine"\nquery = "redis timeout"\nexpected_doc = "runbooks/redis-timeout.md"\n'
        '[[cases]]\nid = "demo-redis"\nenv = "demo"\nquery = "redis timeout"\nexpected_doc = "runbooks/redis-timeout.md"\n'
        '[[cases]]\nid = "gone"\nenv = "envs/gone"\nquery = "anything"\nexpected_doc = "runbooks/x.md"\n',
        encoding="utf-8",
    )
    report = run_suite(load_retrieval_cases(tmp_path / "cases.toml"))
    cases = by_id(report)

    assert cases["lag"]["rank"] == 1 and cases["tls"]["rank"] == 1
    assert cases["tls"]["expected_doc"] == "runbooks/certificates.md"
    # a query is searched in its own environment only: the demo's redis runbook is not found from envs/mine
    assert cases["scoped"]["hit"] is False and all("redis" not in block for block in cases["scoped"]["retrieved"])
    assert cases["demo-redis"]["rank"] == 1
    assert cases["gone"]["hit"] is False and cases["gone"]["retrieved"] == []
    assert cases["gone"]["error"].startswith(f"knowledge directory {tmp_path / 'envs' / 'gone'} does not exist")
    assert report["by_env"] == {
        "envs/mine": {"cases": 3, "hits": 2, "recall_at_k": 0.6667, "mrr": 0.6667},
        "demo": {"cases": 1, "hits": 1, "recall_at_k": 1.0, "mrr": 1.0},
        "envs/gone": {"cases": 1, "hits": 0, "recall_at_k": 0.0, "mrr": 0.0},
    }
    assert (report["totals"]["hits"], report["totals"]["recall_at_k"], report["totals"]["mrr"]) == (3, 0.6, 0.6)


BAD_FILES = {
    "missing query": ('[[cases]]\nid = "x"\nexpected_doc = "runbooks/a.md"\n', "case 1 ('x'): missing `query`"),
    "missing expected_doc": ('[[cases]]\nid = "x"\nquery = "q"\n', "case 1 ('x'): missing `expected_doc`"),
    "k zero": (
        '[[cases]]\nid = "x"\nquery = "q"\nexpected_doc = "a.md"\nk = 0\n',
        "`k` must be a whole number of at least 1",
    ),
    "diagnosis key": (
        '[[cases]]\nid = "x"\nquery = "q"\nexpected_doc = "a.md"\nquestion = "q"\n',
        "unknown key 'question'",
    ),
    "duplicate id": ('[[cases]]\nid = "x"\nquery = "q"\nexpected_doc = "a.md"\n' * 2, "case 2 ('x'): duplicate id 'x'"),
}


@pytest.mark.parametrize("text, fragment", BAD_FILES.values(), ids=BAD_FILES.keys())
def test_a_bad_case_file_is_bad_input(tmp_path, text, fragment):
    path = tmp_path / "retrieval.toml"
    path.write_text(text, encoding="utf-8")

    with pytest.raises(BadInput) as raised:
        load_retrieval_cases(path)

    assert raised.value.message.startswith(f"{path}: ") and fragment in raised.value.message


def test_the_shipped_suite_reports_its_totals():
    cases = load_retrieval_cases()
    report = run_suite(cases)
    totals = report["totals"]

    assert [case["id"] for case in report["cases"]] == [case.id for case in cases]
    assert all(case["error"] is None for case in report["cases"])  # every environment's runbooks were indexed
    assert totals["cases"] == len(cases) and 0 <= totals["hits"] <= len(cases)
    assert totals["recall_at_k"] == round(totals["hits"] / len(cases), 4)
    assert totals["mrr"] == round(sum(1 / case["rank"] for case in report["cases"] if case["rank"]) / len(cases), 4)
    assert set(report["by_env"]) == {"demo", "edge"}
    assert sum(env["cases"] for env in report["by_env"].values()) == totals["cases"]
    assert sum(env["hits"] for env in report["by_env"].values()) == totals["hits"]
