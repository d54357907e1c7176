"""Facts of the packaged host environment (evcli/envs/host) as the tools state them, checked against
the files themselves: counts in `$.stats` and `$.patterns[i]` equal what a grep of the file finds, a
cited line is the line at its stated source, and local times are read in Europe/Berlin. Tool-level
evaluation of issue 9 capabilities (the question suite that asks for them is issue 10's)."""

from __future__ import annotations

import re
from pathlib import Path

import evcli
from tests.cli._util import evcli as run_evcli

HOST = Path(evcli.__file__).resolve().parent / "envs" / "host"


def _query_logs(*args: str) -> dict:
    run = run_evcli("tool", "query_logs", "--env", HOST, "--json", *args)
    assert run.exit_code == 0, run
    return run.json()["output"]


def _grep(name: str, pattern: str) -> list[tuple[int, str]]:
    lines = (HOST / "logs" / name).read_text(encoding="utf-8").splitlines()
    return [(number, line) for number, line in enumerate(lines, 1) if re.search(pattern, line)]


def test_failed_password_count_is_the_grep_count_and_lines_without_level_are_kept():
    output = _query_logs("--service", "auth", "--query", "Failed password")
    expected = len(_grep("auth.log", "Failed password"))
    assert expected == 42  # the file is what the env.toml comment describes
    stats = output["stats"]
    assert stats["total"] == expected
    assert {level: count for level, count in stats["by_level"].items() if count} == {"none": expected}  # no levels
    assert stats["by_source"] == {"logs/auth.log": expected}
    assert stats["range_origin"] == "whole snapshot"
    # patterns: the counts of the templates add up to the total, and each count is its grep count
    assert sum(pattern["count"] for pattern in output["patterns"]) == expected
    for pattern in output["patterns"]:
        words = re.escape(pattern["template"]).replace(re.escape("<*>"), r"\S+")
        assert len(_grep("auth.log", words + "$")) == pattern["count"], pattern["template"]


def test_cited_lines_are_the_lines_at_their_source_with_the_local_zone():
    output = _query_logs("--service", "auth", "--query", "Failed password", "--limit", "5")
    lines = (HOST / "logs" / "auth.log").read_text(encoding="utf-8").splitlines()
    for item in output["logs"]:
        assert item["source"]["path"] == "logs/auth.log"
        assert lines[item["source"]["line"] - 1] == item["line"]
        # `Mar 18 09:24:48` is local time in Europe/Berlin (UTC+1 in March)
        assert item["timestamp"].startswith("2026-03-18T" + item["line"][7:15]) and item["timestamp"].endswith("+01:00")


def test_401_responses_from_one_client_are_counted():
    output = _query_logs("--service", "nginx", "--query", "10.20.30.40 401")
    expected = len(_grep("nginx.log", r'^10\.20\.30\.40 .*" 401 '))
    assert expected == 27
    assert output["stats"]["total"] == expected
    by_level = {level: count for level, count in output["stats"]["by_level"].items() if count}
    assert by_level == {"WARN": expected}  # derived from the 4xx status


def test_an_absolute_local_range_counts_only_its_lines():
    # the brute force runs from 09:14 to 09:26 local; the earlier failures from 198.51.100.7 lie outside
    output = _query_logs("--service", "auth", "--query", "Failed password", "--since", "09:14", "--until", "09:27")
    in_range = [line for _, line in _grep("auth.log", "Failed password") if "09:14:00" <= line[7:15] < "09:27:00"]
    assert output["stats"]["total"] == len(in_range) == 38
    assert output["searched_range"].startswith("2026-03-18T09:14:00+01:00..")
    assert all("203.0.113.45" in item["line"] for item in output["logs"])


def test_failed_passwords_are_counted_per_address_when_asked():
    """`--count-by address` adds the matching lines per IPv4 address to $.stats (and its ref); a call that
    does not ask states none, so a session recorded before re-derives its refs unchanged."""
    output = _query_logs("--service", "auth", "--query", "Failed password", "--count-by", "address")
    expected: dict[str, int] = {}
    for _, line in _grep("auth.log", "Failed password"):
        address = re.search(r"from (\d+\.\d+\.\d+\.\d+) ", line)
        assert address, line
        expected[address.group(1)] = expected.get(address.group(1), 0) + 1
    assert expected == {"203.0.113.45": 38, "198.51.100.7": 4}
    assert output["stats"]["by_address"] == expected
    run = run_evcli(
        "tool", "query_logs", "--env", HOST, "--service", "auth", "--query", "Failed password", "--count-by", "address"
    )
    assert "by address: 203.0.113.45 38, 198.51.100.7 4; filters:" in " ".join(run.stdout.split())
    plain = _query_logs("--service", "auth", "--query", "Failed password")
    assert "by_address" not in plain["stats"]
    refused = run_evcli("tool", "query_logs", "--env", HOST, "--service", "auth", "--count-by", "user")
    assert refused.exit_code == 2 and "count_by" in refused.stderr
