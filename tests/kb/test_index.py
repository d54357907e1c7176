from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from evcli.core.errors import BadInput, StoreError
from evcli.kb import EvidenceBlock, KnowledgeIndex, Skill, default_index_path
from evcli.kb.frontmatter import split_front_matter
from evcli.kb.index import (
    HIGHLY_RELEVANT_MIN_SCORE_RATIO,
    MAX_CHUNK_CHARS,
    SCHEMA_VERSION,
    fts_expression,
    parse_document,
    query_terms,
)

RUNBOOKS = {
    "high-memory.md": """---
title: High memory usage
alerts: [HighMemoryUsage, "ContainerOOMKilled"]
services: [inventory-service]
skill: memory_triage
tags: [jvm, memory]
owner: team-inventory
---
# High memory

Use this runbook when a JVM service keeps growing its heap.

## Symptoms

Heap usage climbs steadily, GC pauses get longer and pods end up OOMKilled.

## Diagnosis

Take a heap dump with jmap and look for the largest retained objects.

```bash
# take the dump; this line is a comment, not a heading
jmap -dump:live,format=b,file=heap.hprof 1
```

## Remediation

Raise the memory limit only after the leak is understood; restart the pod to recover.
""",
    "db-pool.md": """# Database connection pool exhausted

## Symptoms

HikariCP reports the connection pool exhausted and requests fail with a connection timeout.

## Checks

Count active connections on the database and look for long running transactions holding connections.

## Recovery

Kill the stuck transactions, then restart the service if the pool does not recover.
""",
    "disk-full.md": """---
title: 'Disk full on node'
alerts: NodeDiskFull
skill: disk_cleanup
services:
  - node-exporter
  - kubelet
---
## Check

Run df -h and df -i: inodes can run out before bytes do.

## Cleanup

Remove old container images and rotate logs; restart nothing.
""",
    "latency.md": """# High latency

## Symptoms

p99 latency above target; upstream calls hit their timeout. Restart loops make it worse; restart only as a last
resort, restart carefully.
""",
    "cn-memory.md": """---
title: 内存泄漏排查
alerts: [JvmMemoryLeak]
services: [order-service]
---
# 内存泄漏排查

## 现象

服务内存持续增长，最终被 OOMKilled。

## 排查步骤

使用 jmap 导出堆转储，分析泄漏对象。
""",
    "cn-network.md": """# 网络超时

## 现象

下游接口响应超时，连接数升高。

## 处理

检查网络策略与 DNS 解析。
""",
}


def write_runbooks(root: Path, runbooks: dict[str, str] = RUNBOOKS) -> Path:
    for name, text in runbooks.items():
        path = root / "runbooks" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


@pytest.fixture
def env_dir(tmp_path) -> Path:
    return write_runbooks(tmp_path / "env")


@pytest.fixture
def kb(tmp_path):
    index = KnowledgeIndex(tmp_path / "kb.db")
    yield index
    index.close()


@pytest.fixture
def indexed(kb, env_dir) -> KnowledgeIndex:
    kb.index_dir(env_dir)
    return kb


def docs(blocks: list[EvidenceBlock]) -> list[str]:
    return [block.doc for block in blocks]


# --- front matter and chunking ---------------------------------------------------


def test_front_matter_lists_quotes_block_lists_and_unknown_keys():
    text = """---
title: "Disk \\"full\\" on node"
alerts: [NodeDiskFull, "Disk, Inodes", 'KubeletDown']
services:
  - kubelet
  - 'node-exporter'
skill: disk_cleanup  # the planner's name for it
owner: it's team-storage
empty:
---
# Heading
body
"""
    front_matter, body = split_front_matter(text)
    assert front_matter == {
        "title": 'Disk "full" on node',
        "alerts": ["NodeDiskFull", "Disk, Inodes", "KubeletDown"],
        "services": ["kubelet", "node-exporter"],
        "skill": "disk_cleanup",
        "owner": "it's team-storage",
        "empty": "",
    }
    assert body == "# Heading\nbody\n"


@pytest.mark.parametrize(
    "text",
    [
        "# No front matter\n\ntitle: not a key\n",
        "---\ntitle: never closed\n\n# Body\n",
        "\n---\ntitle: not at the top\n---\n",
    ],
)
def test_text_without_a_front_matter_block_is_all_body(text):
    assert split_front_matter(text) == ({}, text)


def test_title_is_front_matter_title_then_first_h1_then_stem():
    assert (
        parse_document("---\ntitle: 'From front matter'\n---\n# From heading\n", stem="s").title == "From front matter"
    )
    assert parse_document("intro\n\n# From   heading\n\n## Part\ntext\n", stem="s").title == "From heading"
    assert parse_document("## Only a section\ntext\n", stem="file-stem").title == "file-stem"


def test_chunks_follow_headings_and_skip_code_comments():
    parsed = parse_document(RUNBOOKS["high-memory.md"], stem="high-memory")
    assert [(chunk.heading, chunk.text[:30]) for chunk in parsed.chunks] == [
        ("High memory", "Use this runbook when a JVM se"),
        ("Symptoms", "Heap usage climbs steadily, GC"),
        ("Diagnosis", "Take a heap dump with jmap and"),
        ("Remediation", "Raise the memory limit only af"),
    ]
    diagnosis = parsed.chunks[2].text
    assert "# take the dump; this line is a comment, not a heading" in diagnosis
    assert "\n" not in diagnosis and "  " not in diagnosis


def test_h3_splits_h4_stays_and_empty_sections_are_dropped():
    text = "Preamble before any heading.\n## Steps\n### Step one\nfirst\n#### detail\nmore\n### Step two\nsecond\n"
    parsed = parse_document(text, stem="steps")
    assert [(chunk.heading, chunk.text) for chunk in parsed.chunks] == [
        ("steps", "Preamble before any heading."),
        ("Step one", "first #### detail more"),
        ("Step two", "second"),
    ]


def test_long_section_is_split_on_paragraph_boundaries():
    paragraphs = [f"paragraph {i} " + " ".join(["word"] * 80) for i in range(6)]  # ~420 chars each
    cjk_run = "内存" * 1000  # one 2,000-character paragraph with no space to break at
    text = "# Doc\n## Long\n\n" + "\n\n".join(paragraphs) + "\n## 中文\n\n" + cjk_run + "\n"
    parsed = parse_document(text, stem="doc")
    long_chunks = [chunk.text for chunk in parsed.chunks if chunk.heading == "Long"]
    assert len(long_chunks) == 2
    assert all(len(chunk) <= MAX_CHUNK_CHARS for chunk in long_chunks)
    assert " ".join(long_chunks) == " ".join(paragraphs)
    # Each piece starts with a whole paragraph.
    assert [chunk.split(" ")[:2] for chunk in long_chunks] == [["paragraph", "0"], ["paragraph", "3"]]
    cjk_chunks = [chunk.text for chunk in parsed.chunks if chunk.heading == "中文"]
    assert [len(chunk) for chunk in cjk_chunks] == [MAX_CHUNK_CHARS, 2000 - MAX_CHUNK_CHARS]
    assert "".join(cjk_chunks) == cjk_run


# --- indexing --------------------------------------------------------------------


def test_index_report_counts_documents_and_chunks(kb, env_dir):
    report = kb.index_dir(env_dir)
    expected_chunks = sum(len(parse_document(text, stem="x").chunks) for text in RUNBOOKS.values())
    assert (report.directory, report.added, report.updated, report.removed, report.unchanged) == (
        str(env_dir.resolve()),
        6,
        0,
        0,
        0,
    )
    assert report.chunks == expected_chunks == 14
    stored = kb.conn.execute("SELECT path, title FROM kb_doc ORDER BY path").fetchall()
    assert stored[0] == ("runbooks/cn-memory.md", "内存泄漏排查")
    assert ("runbooks/db-pool.md", "Database connection pool exhausted") in stored
    assert kb.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_reindexing_an_unchanged_directory_is_a_no_op(kb, env_dir):
    kb.index_dir(env_dir)
    before = kb.conn.execute("SELECT id, path, sha256, indexed_at FROM kb_doc ORDER BY id").fetchall()
    (env_dir / "runbooks" / "latency.md").touch()  # a new mtime alone is not a change
    report = kb.index_dir(env_dir)
    assert (report.added, report.updated, report.removed, report.unchanged, report.chunks) == (0, 0, 0, 6, 14)
    assert kb.conn.execute("SELECT id, path, sha256, indexed_at FROM kb_doc ORDER BY id").fetchall() == before


def test_changed_file_is_reindexed(indexed, env_dir):
    assert "runbooks/high-memory.md" in docs(indexed.search("jmap"))
    path = env_dir / "runbooks" / "high-memory.md"
    path.write_text(RUNBOOKS["high-memory.md"].replace("jmap", "async-profiler"), encoding="utf-8")
    report = indexed.index_dir(env_dir)
    assert (report.added, report.updated, report.removed, report.unchanged) == (0, 1, 0, 5)
    assert "runbooks/high-memory.md" not in docs(indexed.search("jmap"))
    assert docs(indexed.search("async-profiler")) == ["runbooks/high-memory.md"]
    # The old chunks are gone, not duplicated.
    assert report.chunks == 14


def test_deleted_file_is_removed(indexed, env_dir):
    (env_dir / "runbooks" / "disk-full.md").unlink()
    report = indexed.index_dir(env_dir)
    assert (report.added, report.updated, report.removed, report.unchanged, report.chunks) == (0, 0, 1, 5, 12)
    assert indexed.search("inodes") == []
    assert [skill.name for skill in indexed.skills()] == ["memory_triage"]
    assert indexed.conn.execute("SELECT count(*) FROM kb_hint WHERE value = 'nodediskfull'").fetchone() == (0,)


def test_a_failed_index_run_leaves_the_index_as_it_was(indexed, env_dir, monkeypatch):
    (env_dir / "runbooks" / "latency.md").unlink()
    (env_dir / "runbooks" / "new.md").write_text("# New\n\nfresh text\n", encoding="utf-8")

    def boom(*args, **kwargs):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(KnowledgeIndex, "_insert_doc", boom)
    with pytest.raises(RuntimeError):
        indexed.index_dir(env_dir)
    assert docs(indexed.search("latency", limit=1)) == ["runbooks/latency.md"]


def test_directory_without_runbooks_subdir_is_indexed_itself(kb, tmp_path):
    root = tmp_path / "notes"
    (root / "nested").mkdir(parents=True)
    (root / "nested" / "kafka.md").write_text("# Kafka lag\n\nConsumer lag grows.\n", encoding="utf-8")
    (root / ".hidden").mkdir()
    (root / ".hidden" / "skip.md").write_text("# Skip\n\nConsumer lag.\n", encoding="utf-8")
    assert kb.index_dir(root).added == 1
    assert docs(kb.search("consumer lag")) == ["nested/kafka.md"]


def test_directories_are_kept_apart(kb, env_dir, tmp_path):
    other = write_runbooks(tmp_path / "other", {"high-memory.md": "# Memory elsewhere\n\n## Symptoms\n\nHeap grows.\n"})
    kb.index_dir(env_dir)
    kb.index_dir(other)
    everywhere = kb.search("heap", limit=10)
    assert {block.directory for block in everywhere} == {str(env_dir.resolve()), str(other.resolve())}
    scoped = kb.search("heap", limit=10, directory=other)
    assert [(block.doc, block.title, block.directory) for block in scoped] == [
        ("runbooks/high-memory.md", "Memory elsewhere", str(other.resolve()))
    ]


# --- search ----------------------------------------------------------------------


def test_english_query_ranks_the_topic_document_first(indexed):
    blocks = indexed.search("heap dump jmap")
    assert (blocks[0].doc, blocks[0].heading) == ("runbooks/high-memory.md", "Diagnosis")
    assert "jmap -dump:live" in blocks[0].text
    blocks = indexed.search("connection timeout", limit=10)
    assert (blocks[0].doc, blocks[0].heading) == ("runbooks/db-pool.md", "Symptoms")
    assert "runbooks/latency.md" in docs(blocks)  # it mentions timeout, further down
    assert docs(blocks).index("runbooks/latency.md") > 0


def test_results_are_sorted_limited_and_shaped(indexed):
    blocks = indexed.search("restart", limit=3)
    assert len(blocks) == 3
    assert [block.score for block in blocks] == sorted((block.score for block in blocks), reverse=True)
    first = blocks[0].as_dict()
    assert set(first) == {"doc", "title", "heading", "text", "relevance_level", "score", "layer", "directory"}
    assert first["doc"] == "runbooks/latency.md"  # says restart three times in one short section
    assert first["score"] == round(first["score"], 3) > 0


def test_chinese_query_uses_trigrams_and_drops_stopwords(indexed):
    assert query_terms("内存泄漏怎么排查？") == ["内存泄漏", "排查"]
    blocks = indexed.search("内存泄漏怎么排查")
    assert set(docs(blocks)) == {"runbooks/cn-memory.md"}
    # A longer run still finds a document that shares only part of it.
    assert docs(indexed.search("堆转储文件"))[0] == "runbooks/cn-memory.md"


def test_two_character_chinese_terms_fall_back_to_like(indexed):
    blocks = indexed.search("内存")
    assert [(block.doc, block.heading) for block in blocks] == [("runbooks/cn-memory.md", "现象")]
    assert blocks[0].score > 0
    # Mixed with a trigram term, the block that has both ranks first.
    mixed = indexed.search("OOMKilled 内存", limit=10)
    assert (mixed[0].doc, mixed[0].heading) == ("runbooks/cn-memory.md", "现象")
    # Its FTS and LIKE scores add up.
    fts_only = {(b.doc, b.heading): b.score for b in indexed.search("OOMKilled", limit=10)}
    assert mixed[0].score == pytest.approx(fts_only[("runbooks/cn-memory.md", "现象")] + blocks[0].score, abs=0.002)
    assert ("runbooks/high-memory.md", "Symptoms") in [(block.doc, block.heading) for block in mixed]
    assert docs(indexed.search("超时")) == ["runbooks/cn-network.md"]
    # Short ASCII terms take the same path, case-insensitively.
    assert [(block.doc, block.heading) for block in indexed.search("GC")] == [("runbooks/high-memory.md", "Symptoms")]


def test_alertname_in_front_matter_is_l0_and_precise_but_does_not_bypass_l1(indexed):
    blocks = indexed.search("restart", limit=10, alertname="highmemoryusage")
    assert (blocks[0].doc, blocks[0].heading, blocks[0].layer, blocks[0].relevance_level) == (
        "runbooks/high-memory.md",
        "Remediation",
        "L0",
        "PRECISE",
    )
    # Ranked first although plain L1 scoring puts it behind latency.md.
    assert indexed.search("restart", limit=1)[0].doc == "runbooks/latency.md"
    assert all(block.layer == "L1" for block in blocks[1:])
    # The hint labels retrieved blocks; it adds none that the query did not retrieve.
    assert docs(indexed.search("inodes", alertname="HighMemoryUsage")) == ["runbooks/disk-full.md"]


def test_query_term_equal_to_an_alert_or_title_and_service_hint_give_l0(indexed):
    by_alert = indexed.search("NodeDiskFull cleanup")
    assert [(block.doc, block.layer, block.relevance_level) for block in by_alert] == [
        ("runbooks/disk-full.md", "L0", "PRECISE")
    ]
    by_title = indexed.search("database connection pool exhausted", limit=10)
    assert {block.doc for block in by_title if block.layer == "L0"} == {"runbooks/db-pool.md"}
    by_service = indexed.search("heap restart", limit=10, service="Inventory-Service")
    layers = [(block.doc, block.layer) for block in by_service]
    assert layers[:4] == [("runbooks/high-memory.md", "L0")] * 4
    assert all(layer == "L1" for _, layer in layers[4:]) and len(layers) > 4


def test_highly_relevant_needs_a_near_best_score_and_two_terms(indexed):
    blocks = {(block.doc, block.heading): block for block in indexed.search("connection timeout", limit=10)}
    best = blocks[("runbooks/db-pool.md", "Symptoms")]
    assert best.relevance_level == "HIGHLY_RELEVANT"  # both terms, the best score
    checks = blocks[("runbooks/db-pool.md", "Checks")]
    assert checks.relevance_level == "REFERENCE"  # "connection" only
    latency = blocks[("runbooks/latency.md", "Symptoms")]
    assert latency.relevance_level == "REFERENCE"  # "timeout" only
    assert latency.score < HIGHLY_RELEVANT_MIN_SCORE_RATIO * best.score
    # A single-term query cannot match two terms: the near-best blocks count as highly relevant.
    single = indexed.search("heap", limit=10)
    assert single[0].relevance_level == "HIGHLY_RELEVANT"
    assert {
        block.relevance_level for block in single if block.score < HIGHLY_RELEVANT_MIN_SCORE_RATIO * single[0].score
    } <= {"REFERENCE"}


def test_a_near_best_block_with_one_of_two_terms_is_only_reference(kb, tmp_path):
    runbooks = {f"filler-{i}.md": f"# Filler {i}\n\n## Part\n\nnothing relevant here, item {i}.\n" for i in range(30)}
    runbooks["both.md"] = "# Both\n\n## Part\n\nkafka consumer lag after a rebalance.\n"
    runbooks["single.md"] = "# Single\n\n## Part\n\nkafka kafka kafka kafka.\n"
    runbooks["diluted.md"] = "# Diluted\n\n## Part\n\nkafka " + "unrelated words " * 80 + "rebalance.\n"
    kb.index_dir(write_runbooks(tmp_path / "env", runbooks))
    blocks = {block.doc: block for block in kb.search("kafka rebalance", limit=10)}
    assert set(blocks) == {"runbooks/both.md", "runbooks/single.md", "runbooks/diluted.md"}
    best = max(block.score for block in blocks.values())
    assert blocks["runbooks/both.md"].relevance_level == "HIGHLY_RELEVANT"
    # Scores high enough, but matches one term of two.
    assert blocks["runbooks/single.md"].score >= HIGHLY_RELEVANT_MIN_SCORE_RATIO * best
    assert blocks["runbooks/single.md"].relevance_level == "REFERENCE"
    # Matches both terms, but scores too far below the best.
    assert blocks["runbooks/diluted.md"].score < HIGHLY_RELEVANT_MIN_SCORE_RATIO * best
    assert blocks["runbooks/diluted.md"].relevance_level == "REFERENCE"


def test_an_unknown_chinese_compound_falls_back_to_its_two_character_words(indexed):
    # No runbook says 内存增长; cn-memory says 内存持续增长.
    assert query_terms("内存增长") == ["内存增长"]
    blocks = indexed.search("内存增长")
    assert [(block.doc, block.heading, block.relevance_level) for block in blocks] == [
        ("runbooks/cn-memory.md", "现象", "HIGHLY_RELEVANT")
    ]
    assert indexed.search("完全无关词语") == []


def test_a_long_chinese_term_counts_as_matched_when_most_of_it_is_there(indexed):
    assert query_terms("连接数升高啦 超时") == ["连接数升高啦", "超时"]
    blocks = indexed.search("连接数升高啦 超时")
    assert [(block.doc, block.heading, block.relevance_level) for block in blocks] == [
        ("runbooks/cn-network.md", "现象", "HIGHLY_RELEVANT")
    ]


@pytest.mark.parametrize(
    "query",
    [
        '"',
        'heap"',
        '""heap',
        "*",
        "heap*",
        "AND",
        "heap AND",
        "OR NOT",
        "NEAR(",
        "NEAR(heap dump",
        "-",
        "-heap",
        ":",
        "title:heap",
        "heap:",
        "()",
        "^heap",
        "{heap}",
        "'",
        "\\",
        "%_",
        "内存*",
        "NEAR(内存",
    ],
)
def test_fts_syntax_in_queries_never_raises(indexed, query):
    blocks = indexed.search(query, limit=10)
    assert isinstance(blocks, list)
    if query in ('heap"', "heap*", "-heap", "heap:", "^heap", "{heap}", "heap AND"):
        assert blocks and blocks[0].doc == "runbooks/high-memory.md"


def test_fts_expression_quotes_every_term():
    assert fts_expression(['say"hi', "near(x"]) == '"say""hi" OR "near(x"'
    assert fts_expression(["内存泄漏"]) == '"内存泄" OR "存泄漏"'
    assert fts_expression(["db"]) is None  # below a trigram: LIKE only
    assert query_terms("How is the heap of the JVM and GC") == ["heap", "jvm", "gc"]


def test_empty_or_stopword_only_query_returns_nothing(indexed):
    assert indexed.search("") == []
    assert indexed.search("the of and 如何") == []


# --- skills ----------------------------------------------------------------------


def test_skills_lists_front_matter_declarations(indexed, env_dir, tmp_path):
    assert indexed.skills() == [
        Skill(
            name="disk_cleanup",
            doc="runbooks/disk-full.md",
            title="Disk full on node",
            alerts=["NodeDiskFull"],
            services=["node-exporter", "kubelet"],
        ),
        Skill(
            name="memory_triage",
            doc="runbooks/high-memory.md",
            title="High memory usage",
            alerts=["HighMemoryUsage", "ContainerOOMKilled"],
            services=["inventory-service"],
        ),
    ]
    assert indexed.skills(directory=tmp_path / "elsewhere") == []
    assert [skill.name for skill in indexed.skills(directory=env_dir)] == ["disk_cleanup", "memory_triage"]


# --- the file --------------------------------------------------------------------


def test_schema_version_change_rebuilds_the_cache(tmp_path, env_dir):
    path = tmp_path / "kb.db"
    with KnowledgeIndex(path) as kb:
        kb.index_dir(env_dir)
    conn = sqlite3.connect(path)
    conn.execute("UPDATE kb_meta SET value = '0' WHERE key = 'schema_version'")
    conn.execute("CREATE TABLE kb_legacy (x)")
    conn.commit()
    conn.close()
    with KnowledgeIndex(path) as kb:
        tables = {name for (name,) in kb.conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        assert "kb_legacy" not in tables and {"kb_doc", "kb_chunk", "kb_chunk_fts"} <= tables
        assert kb.conn.execute("SELECT value FROM kb_meta").fetchall() == [(SCHEMA_VERSION,)]
        assert kb.search("heap") == []
        assert kb.index_dir(env_dir).added == 6
    with KnowledgeIndex(path) as kb:  # the current version is left alone
        assert kb.index_dir(env_dir).unchanged == 6


def test_missing_directory_is_bad_input(kb, tmp_path):
    with pytest.raises(BadInput, match="does not exist"):
        kb.index_dir(tmp_path / "nope")
    (tmp_path / "empty" / "runbooks").mkdir(parents=True)
    (tmp_path / "empty" / "runbooks" / "notes.txt").write_text("not markdown")
    with pytest.raises(BadInput, match="no markdown files"):
        kb.index_dir(tmp_path / "empty")


def test_corrupt_index_file_is_a_store_error(tmp_path):
    path = tmp_path / "kb.db"
    path.write_bytes(b"this is not a database " * 100)
    with pytest.raises(StoreError, match="cannot use knowledge index"):
        KnowledgeIndex(path)


def test_default_path_is_next_to_the_trace_store(evcli_home):
    assert default_index_path() == evcli_home / "kb.db"


def test_tied_blocks_keep_their_order_when_a_document_is_indexed_again(tmp_path):
    # b.md's section ties a.md's; editing a.md gives its sections new row ids: the order must not follow them
    root = tmp_path / "env"
    (root / "runbooks").mkdir(parents=True)
    same = "## Checks\n\nRestart the payment gateway pod and watch its queue depth.\n"
    (root / "runbooks" / "a.md").write_text("# A\n\n" + same, encoding="utf-8")
    (root / "runbooks" / "b.md").write_text("# B\n\n" + same, encoding="utf-8")
    index = KnowledgeIndex(tmp_path / "kb.db")
    index.index_dir(root)
    before = [block.doc for block in index.search("payment gateway queue depth", limit=5, directory=root)]
    (root / "runbooks" / "a.md").write_text("# A\n\n" + same + "\n## Notes\n\nNothing else.\n", encoding="utf-8")
    index.index_dir(root)
    after = [block.doc for block in index.search("payment gateway queue depth", limit=5, directory=root)]
    assert before[:2] == after[:2] == ["runbooks/a.md", "runbooks/b.md"]


def test_a_directory_scores_the_same_whatever_else_is_indexed(indexed, env_dir, tmp_path):
    """BM25 weighs a term by its rarity in the table searched: another directory full of the query's words,
    indexed into the same file, must not change one directory's scores or order (a replay of
    lookup_knowledge cites $.evidence_blocks[i] and must find the same block)."""
    queries = ["heap memory leak", "connection pool timeout", "网络超时 DNS"]
    before = {query: indexed.search(query, limit=5, directory=env_dir) for query in queries}
    assert any(before.values())
    noise = {
        f"noise-{n}.md": f"# Heap {n}\n\n## Memory\n\nheap memory leak connection pool timeout DNS {n}\n"
        for n in range(40)
    }
    indexed.index_dir(write_runbooks(tmp_path / "other", noise))
    for query in queries:
        after = indexed.search(query, limit=5, directory=env_dir)
        assert [(b.doc, b.heading, b.score) for b in after] == [(b.doc, b.heading, b.score) for b in before[query]], (
            query
        )
    everywhere = indexed.search("heap memory leak", limit=5)  # no directory named: every directory's blocks
    assert any(block.directory.endswith("other") for block in everywhere)
