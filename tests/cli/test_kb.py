"""`evcli kb index DIR` and `evcli kb search "QUERY"`: index reports, incremental re-indexing, and ranked
runbook blocks with relevance level and layer, in English and Chinese."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from evcli.backends.snapshot import demo_env_dir
from evcli.kb.index import parse_document
from tests.cli._util import assert_clean_error, evcli

DEMO = demo_env_dir()
DEMO_RUNBOOKS = sorted((DEMO / "runbooks").rglob("*.md"))
RANKED = re.compile(r"^(\d+)\. (\S+) › (.+) · (PRECISE|HIGHLY_RELEVANT|REFERENCE) · (L0|L1) · score (-?[\d.]+)$")


def chunk_count(paths: list[Path]) -> int:
    return sum(len(parse_document(p.read_text(encoding="utf-8"), stem=p.stem).chunks) for p in paths)


@pytest.fixture
def runbook_dir(tmp_path) -> Path:
    """A private copy of the demo runbooks, so they can be edited."""
    root = tmp_path / "kb-env"
    shutil.copytree(DEMO / "runbooks", root / "runbooks")
    return root


def index(directory: Path, *extra) -> dict:
    run = evcli("kb", "index", directory, "--json", *extra)
    assert run.exit_code == 0, run
    return run.json()


def search(query: str, *extra) -> list[dict]:
    run = evcli("kb", "search", query, "--json", *extra)
    assert run.exit_code == 0, run
    return run.json()


# --- index ---------------------------------------------------------------------------------------


def test_index_reports_counts(runbook_dir, evcli_home):
    run = evcli("kb", "index", runbook_dir)
    assert run.exit_code == 0, run
    files = sorted((runbook_dir / "runbooks").rglob("*.md"))
    chunks = chunk_count(files)
    assert re.fullmatch(
        rf"{re.escape(str(runbook_dir.resolve()))}: {len(files)} added, 0 updated, 0 removed, 0 unchanged"
        rf" · {chunks} blocks · \d+\.\d{{3}}s\n",
        run.stdout,
    ), run
    assert (evcli_home / "kb.db").exists()  # next to the trace store


def test_reindexing_unchanged_files_is_a_no_op(runbook_dir):
    first = index(runbook_dir)
    assert (first["added"], first["updated"], first["removed"], first["unchanged"]) == (len(DEMO_RUNBOOKS), 0, 0, 0)
    again = index(runbook_dir)
    assert (again["added"], again["updated"], again["removed"], again["unchanged"]) == (0, 0, 0, len(DEMO_RUNBOOKS))
    assert again["chunks"] == first["chunks"] == chunk_count(DEMO_RUNBOOKS)
    assert again["directory"] == str(runbook_dir.resolve())


def test_a_changed_file_is_reindexed(runbook_dir):
    first = index(runbook_dir)
    assert search("zebraquartz", "--dir", runbook_dir) == []
    target = runbook_dir / "runbooks" / "redis-timeout.md"
    target.write_text(
        target.read_text(encoding="utf-8")
        + "\n## Zebraquartz shard\n\nQuarantine the zebraquartz shard before failing over.\n",
        encoding="utf-8",
    )
    changed = index(runbook_dir)
    assert (changed["added"], changed["updated"], changed["removed"], changed["unchanged"]) == (
        0,
        1,
        0,
        len(DEMO_RUNBOOKS) - 1,
    )
    assert changed["chunks"] == first["chunks"] + 1
    blocks = search("zebraquartz", "--dir", runbook_dir)
    assert (blocks[0]["doc"], blocks[0]["heading"]) == ("runbooks/redis-timeout.md", "Zebraquartz shard")
    # and the re-index after that is a no-op again
    assert index(runbook_dir)["updated"] == 0


def test_a_deleted_file_is_dropped_and_a_new_one_added(runbook_dir):
    index(runbook_dir)
    (runbook_dir / "runbooks" / "disk-space.md").unlink()
    (runbook_dir / "runbooks" / "kafka-lag.md").write_text(
        "# Kafka consumer lag\n\nCheck the consumer group lag.\n", encoding="utf-8"
    )
    report = index(runbook_dir)
    assert (report["added"], report["updated"], report["removed"]) == (1, 0, 1)
    assert all(
        block["doc"] != "runbooks/disk-space.md" for block in search("disk space eviction", "--dir", runbook_dir)
    )


def test_explicit_kb_file(runbook_dir, tmp_path, evcli_home):
    kb = tmp_path / "elsewhere" / "my-kb.db"
    report = index(runbook_dir, "--kb", kb)
    assert report["added"] == len(DEMO_RUNBOOKS)
    assert kb.exists() and not (evcli_home / "kb.db").exists()
    blocks = search("heap dump OOMKilled", "--dir", runbook_dir, "--kb", kb)
    assert blocks[0]["doc"] == "runbooks/high-memory.md"


def test_index_of_a_directory_without_markdown_is_exit_2(tmp_path):
    (tmp_path / "empty").mkdir()
    assert_clean_error(evcli("kb", "index", tmp_path / "empty"), 2, "no markdown files under")


# --- search ------------------------------------------------------------------------------------------


def test_search_shows_ranked_blocks_with_level_and_layer():
    blocks = search("heap dump OOMKilled", "--limit", "4")
    run = evcli("kb", "search", "heap dump OOMKilled", "--limit", "4")
    assert run.exit_code == 0, run
    ranked = [RANKED.match(line) for line in run.stdout.splitlines() if RANKED.match(line)]
    assert [int(match[1]) for match in ranked] == [1, 2, 3, 4]
    assert [(m[2], m[3], m[4], m[5], float(m[6])) for m in ranked] == [
        (b["doc"], b["heading"], b["relevance_level"], b["layer"], b["score"]) for b in blocks
    ]
    assert [b["score"] for b in blocks] == sorted((b["score"] for b in blocks), reverse=True)
    # each ranked line is followed by the start of the block's text
    lines = run.stdout.splitlines()
    first = lines.index(ranked[0].group(0))
    assert lines[first + 1].strip().startswith(blocks[0]["text"][:60])


def test_search_json_blocks_have_the_contract_fields():
    blocks = search("slow SQL p99 latency")
    assert blocks
    for block in blocks:
        assert {"doc", "title", "heading", "text", "relevance_level", "score", "layer"} <= set(block)
        assert Path(block["directory"]) == DEMO


def test_english_query_finds_the_memory_runbook():
    blocks = search("heap dump OOMKilled")
    assert blocks[0]["doc"] == "runbooks/high-memory.md"
    assert blocks[0]["relevance_level"] in ("PRECISE", "HIGHLY_RELEVANT")
    assert "OOMKilled" in " ".join(block["text"] for block in blocks)


def test_chinese_query_finds_the_connection_pool_runbook():
    blocks = search("连接池耗尽")
    assert blocks[0]["doc"] == "runbooks/database/mysql-connection-pool.md"
    assert "连接池" in blocks[0]["heading"] + blocks[0]["text"]
    assert blocks[0]["relevance_level"] in ("PRECISE", "HIGHLY_RELEVANT")
    human = evcli("kb", "search", "连接池耗尽")
    assert human.exit_code == 0, human
    assert human.stdout.startswith("1. runbooks/database/mysql-connection-pool.md › ")


def test_alertname_hint_gives_an_l0_precise_block_from_the_high_cpu_runbook():
    hinted = search("thread pool saturation", "--alertname", "HighCPUUsage")
    assert (hinted[0]["doc"], hinted[0]["layer"], hinted[0]["relevance_level"]) == (
        "runbooks/high-cpu.md",
        "L0",
        "PRECISE",
    )
    assert all(block["layer"] == "L0" for block in hinted if block["doc"] == "runbooks/high-cpu.md")
    # without the hint the same query has no L0 layer
    plain = search("thread pool saturation")
    assert all(block["layer"] == "L1" for block in plain)
    run = evcli("kb", "search", "thread pool saturation", "--alertname", "HighCPUUsage")
    first = RANKED.match(run.stdout.splitlines()[0])
    assert first and (first[2], first[4], first[5]) == ("runbooks/high-cpu.md", "PRECISE", "L0")


def test_search_restricted_to_another_directory(tmp_path):
    root = tmp_path / "other"
    (root / "runbooks").mkdir(parents=True)
    (root / "runbooks" / "kafka.md").write_text(
        "---\ntitle: Kafka consumer lag\nalerts: [KafkaLagHigh]\n---\n\n# Kafka consumer lag\n\n"
        "Check the consumer group lag and the heap of the consumers.\n",
        encoding="utf-8",
    )
    blocks = search("heap consumer lag", "--dir", root)
    assert {block["doc"] for block in blocks} == {"runbooks/kafka.md"}
    assert {Path(block["directory"]) for block in blocks} == {root.resolve()}


def test_search_without_hits_says_so_on_stderr():
    run = evcli("kb", "search", "zzqqxxyy", "--dir", DEMO)
    assert run.exit_code == 0, run
    assert run.stdout == ""
    assert run.stderr.strip() == "no matching runbook blocks"
    assert search("zzqqxxyy") == []


# --- which runbooks a search searches (issue 26) ------------------------------------------------------


def kafka_runbooks(root: Path) -> Path:
    (root / "runbooks").mkdir(parents=True)
    (root / "runbooks" / "kafka.md").write_text(
        "# Kafka consumer lag\n\nCheck the consumer group lag before adding consumers.\n", encoding="utf-8"
    )
    return root


def test_search_without_a_directory_searches_what_kb_index_last_indexed_and_says_so(tmp_path):
    first, last = kafka_runbooks(tmp_path / "first"), kafka_runbooks(tmp_path / "last")
    index(first)
    index(last)

    run = evcli("kb", "search", "consumer lag", "--json")

    assert run.exit_code == 0, run
    assert {Path(block["directory"]) for block in run.json()} == {last.resolve()}
    assert run.stderr.strip() == f"searching {last.resolve()} (the directory `evcli kb index` indexed last)"
    # a search of a named directory indexes it, and changes nothing of that
    assert search("consumer lag", "--dir", first)
    assert {Path(block["directory"]) for block in search("consumer lag")} == {last.resolve()}


def test_search_before_any_kb_index_says_it_searches_the_demo_runbooks():
    run = evcli("kb", "search", "heap dump OOMKilled", "--json")

    assert run.exit_code == 0, run
    assert {Path(block["directory"]) for block in run.json()} == {DEMO}
    assert run.stderr.strip() == (
        f"searching {DEMO} (the packaged demo runbooks; `evcli kb index DIR` to search yours by default)"
    )


@pytest.mark.parametrize("option", ["--env", "--dir"])
def test_search_takes_packaged_environment_names_like_the_other_commands(option):
    from evcli.backends.spec import packaged_env_dir

    blocks = search("consumer lag", option, "edge")

    assert blocks and {Path(block["directory"]) for block in blocks} == {packaged_env_dir("edge")}
    assert blocks[0]["doc"] == "runbooks/kafka-consumer-lag.md"


def test_index_takes_a_packaged_environment_name():
    from evcli.backends.spec import packaged_env_dir

    report = index(Path("host"))

    assert report["directory"] == str(packaged_env_dir("host")) and report["added"] == 2
    assert {Path(block["directory"]) for block in search("ssh brute force")} == {packaged_env_dir("host")}


def test_search_limit_is_validated():
    run = evcli("kb", "search", "heap", "--limit", "0")
    assert run.exit_code == 2, run
