"""Retrieval cases: does a runbook query find the document (and section) it should?

```toml
[[cases]]
id = "oom-runbook"
env = "demo"                                # as in diagnosis cases
query = "order-service OOMKilled heap"
expected_doc = "runbooks/high-memory.md"    # relative to the environment directory
expected_heading = "Diagnosis"              # optional: the section must be the hit
k = 5                                       # optional, default 5
```

Each environment's runbooks are indexed into a fresh index file, so earlier
indexing cannot change the ranks, and every query is searched within its own
environment. A case's rank is the position of the first block of the expected
document (with the expected heading, when given) among the top k; recall@k and
MRR are reported per environment and overall.
"""

from __future__ import annotations

import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evcli.core.errors import EvcliError
from evcli.evals.cases import SUITES_DIR, CaseTable, env_dir, read_suite

RETRIEVAL_SUITE = SUITES_DIR / "retrieval.toml"
DEFAULT_K = 5
CASE_KEYS = ("id", "env", "query", "expected_doc", "expected_heading", "k")


@dataclass(frozen=True)
class RetrievalCase:
    id: str
    source: Path
    env: str
    env_dir: Path
    query: str
    expected_doc: str  # posix path relative to env_dir, as the index names documents
    expected_heading: str | None
    k: int


def _retrieval_case(table: CaseTable) -> RetrievalCase:
    env = table.text("env", default="demo")
    return RetrievalCase(
        id=table.text("id", required=True),
        source=table.source,
        env=env,
        env_dir=env_dir(env, table.source),
        query=table.text("query", required=True),
        expected_doc=Path(table.text("expected_doc", required=True)).as_posix(),
        expected_heading=table.text("expected_heading"),
        k=table.count("k", default=DEFAULT_K, minimum=1),
    )


def load_retrieval_cases(path: Path | None = None) -> list[RetrievalCase]:
    """The retrieval cases of a file or a directory of files (default: the shipped suite)."""
    return read_suite(path or RETRIEVAL_SUITE, CASE_KEYS, _retrieval_case)


def _same_heading(a: str, b: str) -> bool:
    return " ".join(a.split()).casefold() == " ".join(b.split()).casefold()


def _rank(blocks, doc: str, heading: str | None = None) -> int | None:
    for rank, block in enumerate(blocks, start=1):
        if block.doc == doc and (heading is None or _same_heading(block.heading, heading)):
            return rank
    return None


def run_suite(cases: list[RetrievalCase], *, k: int | None = None, kb_path: Path | None = None) -> dict[str, Any]:
    """Search every case's query in its environment; `k` overrides each case's own."""
    from evcli.kb.index import KnowledgeIndex

    started = time.perf_counter()
    with (
        tempfile.TemporaryDirectory(prefix="evcli-eval-") as scratch,
        KnowledgeIndex(kb_path or Path(scratch) / "kb.db") as index,
    ):
        index_errors: dict[Path, str | None] = {}
        results = []
        for case in cases:
            if case.env_dir not in index_errors:
                try:
                    index.index_dir(case.env_dir)
                    index_errors[case.env_dir] = None
                except EvcliError as exc:
                    index_errors[case.env_dir] = exc.message
            results.append(_run_case(index, case, k or case.k, index_errors[case.env_dir]))

    by_env: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for result in results:
        by_env[result["env"]].append(result)
    return {
        "suite": sorted({str(case.source) for case in cases}),
        "k": k,
        "cases": results,
        "by_env": {env: _totals(env_results) for env, env_results in by_env.items()},
        "totals": {**_totals(results), "seconds": round(time.perf_counter() - started, 3)},
    }


def _run_case(index, case: RetrievalCase, k: int, error: str | None) -> dict[str, Any]:
    blocks = [] if error else index.search(case.query, limit=k, directory=case.env_dir)
    rank = _rank(blocks, case.expected_doc, case.expected_heading)
    return {
        "id": case.id,
        "env": case.env,
        "query": case.query,
        "expected_doc": case.expected_doc,
        "expected_heading": case.expected_heading,
        "k": k,
        "rank": rank,
        "doc_rank": _rank(blocks, case.expected_doc),
        "hit": rank is not None,
        "reciprocal_rank": round(1 / rank, 4) if rank else 0.0,
        "retrieved": [f"{block.doc} › {block.heading}" for block in blocks],
        "error": error,
    }


def _totals(results: list[dict[str, Any]]) -> dict[str, Any]:
    hits = sum(result["hit"] for result in results)
    return {
        "cases": len(results),
        "hits": hits,
        "recall_at_k": round(hits / len(results), 4),
        "mrr": round(sum(1 / result["rank"] for result in results if result["rank"]) / len(results), 4),
    }
