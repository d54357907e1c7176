"""The shipped on-call suite (evcli/evals/suites/oncall.toml) cannot drift from the data it asks about.

Every case parses; the `# grep … → N` comment above each case is re-run here in Python over the
environment's files and must still count N; every `must_cite` and `must_search` text is found in
the environment's files (or is a derived text whose fact is checked: a count against the case's
greps, an unknown service against env.toml, an alert's labels and state against alerts.json, a
metric against its CSV header, an absent phrase against a grep that counts 0).
"""

from __future__ import annotations

import json
import re
import shlex
import tomllib
from datetime import datetime
from pathlib import Path

import pytest

from evcli.evals.cases import ONCALL_SUITE, DiagnosisCase, load_cases

CASES = load_cases(ONCALL_SUITE)
GREP = re.compile(r"^# (grep .*?) → (\d+)", re.MULTILINE)
CJK = re.compile(r"[\u4e00-\u9fff]")


def _greps_by_case() -> dict[str, list[tuple[str, int]]]:
    """The `# grep` lines of the comment block right above each case."""
    blocks = ONCALL_SUITE.read_text(encoding="utf-8").split("\n[[cases]]\n")
    found = {}
    for before, block in zip(blocks, blocks[1:], strict=False):
        case_id = re.search(r'^id = "([^"]+)"', block, re.MULTILINE)
        assert case_id, block[:200]
        found[case_id.group(1)] = [(cmd, int(n)) for cmd, n in GREP.findall(before.split("\n\n")[-1])]
    return found


GREPS = _greps_by_case()


def _files(env: Path, names: list[str], recursive: bool) -> list[Path]:
    files = []
    for name in names:
        path = env / name
        assert path.exists(), f"{path} named by a grep does not exist"
        files += sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() and recursive else [path]
    return files


def run_grep(command: str, env: Path) -> int:
    """`grep -c [-i] [-E] [-r] PATTERN FILE…` as grep counts it (matching lines, summed over files)."""
    return len(grep_lines(command, env))


def grep_lines(command: str, env: Path) -> list[str]:
    """The lines `grep -c …` counts, in file order."""
    words = shlex.split(command)
    assert words[0] == "grep" and "-c" in words, command
    flags = {word for word in words[1:] if word.startswith("-")}
    pattern, *names = [word for word in words[1:] if not word.startswith("-")]
    if "-E" not in flags:  # a basic regular expression: these are literal there
        pattern = re.sub(r"([+?(){}|])", r"\\\1", pattern)
    regex = re.compile(pattern, re.IGNORECASE if "-i" in flags else 0)
    return [
        line
        for path in _files(env, names, "-r" in flags)
        for line in path.read_text(encoding="utf-8").splitlines()
        if regex.search(line)
    ]


def _corpus(env: Path) -> str:
    """Logs, runbooks, metrics and alerts: a snapshot may hold only some of them (cluster: logs alone)."""
    alerts = env / "alerts.json"
    return "\n".join(
        path.read_text(encoding="utf-8")
        for folder in ("logs", "runbooks", "metrics")
        for path in sorted((env / folder).rglob("*"))
        if path.is_file()
    ) + (alerts.read_text(encoding="utf-8") if alerts.exists() else "")


def _services(env: Path) -> set[str]:
    declared = tomllib.loads((env / "env.toml").read_text(encoding="utf-8")).get("services", {})
    files = [path for folder in ("logs", "metrics") if (env / folder).is_dir() for path in (env / folder).iterdir()]
    return set(declared) | {path.stem for path in files}


def _alerts(env: Path) -> dict[str, dict]:
    """alertname → {service, state} with the state evcli derives (firing / pending / resolved / suppressed)."""
    data = json.loads((env / "alerts.json").read_text(encoding="utf-8"))
    items = data if isinstance(data, list) else data.get("data", {}).get("alerts", data.get("alerts", []))
    now = datetime.fromisoformat(tomllib.loads((env / "env.toml").read_text(encoding="utf-8"))["now"])
    alerts = {}
    for item in items:
        labels = item.get("labels", {})
        state = item.get("state") or item["status"]["state"]
        if state == "active":
            state = "firing" if datetime.fromisoformat(item["endsAt"]) > now else "resolved"
        alerts[labels["alertname"], labels.get("service")] = state
    return {f"{name}, service={service}": {"name": name, "state": state} for (name, service), state in alerts.items()}


def _absent(case: DiagnosisCase, text: str) -> bool:
    """The case greps for this text and counts 0 (a narrow negative)."""
    return any(n == 0 and text.casefold() in cmd.casefold() for cmd, n in GREPS[case.id])


def _cited_fact_holds(case: DiagnosisCase, tool: str, text: str) -> bool:
    env = case.env_dir
    # a count of lines, or of records (a traceback's lines are one record: the grep counts the first line)
    count = re.fullmatch(r"(\d+) matching lines|in (\d+) records", text)
    if count:
        return int(count.group(1) or count.group(2)) in {n for _, n in GREPS[case.id]}
    unknown = re.fullmatch(r"unknown service '([^']+)'", text)
    if unknown:
        return unknown.group(1) not in _services(env) and unknown.group(1) in (case.question or "")
    close = re.fullmatch(r"close names: (.+)", text)
    if close:  # the names the tool suggests for an unknown service the case also cites
        unknown_cited = any(c.text.startswith("unknown service") for c in case.must_cite)
        return unknown_cited and set(close.group(1).split(", ")) <= _services(env)
    # "first T, last T" of $.stats: the clock times of the first and last line the case's grep matches
    timing = re.fullmatch(r"(?:first (?P<first>\S+?))?(?:, )?(?:last (?P<last>\S+))?", text)
    if timing and (timing["first"] or timing["last"]):
        command = GREPS[case.id][0][0]
        lines = grep_lines(command, env)
        ends = ((timing["first"], lines[0] if lines else ""), (timing["last"], lines[-1] if lines else ""))
        return bool(lines) and all(
            datetime.fromisoformat(moment).strftime("%H:%M:%S") in line for moment, line in ends if moment
        )
    # "by address: A N, B M" of $.stats: of the lines the case's grep matches, N hold A and M hold B
    by_address = re.fullmatch(r"by address: (.+)", text)
    if by_address:
        lines = grep_lines(GREPS[case.id][0][0], env)
        pairs = [pair.rsplit(" ", 1) for pair in by_address.group(1).split(", ")]
        return all(sum(re.search(rf"(?<![\d.]){re.escape(a)}(?![\d])", line) is not None for line in lines) == int(n)
                   for a, n in pairs)  # fmt: skip
    # "by path: P N" of $.stats: of the lines the case's grep matches, N request P
    by_path = re.fullmatch(r"by path: (.+)", text)
    if by_path:
        lines = grep_lines(GREPS[case.id][0][0], env)
        pairs = [pair.rsplit(" ", 1) for pair in by_path.group(1).split(", ")]
        return all(sum(f" {path} HTTP/" in line for line in lines) == int(n) for path, n in pairs)
    # "pattern (count N" of $.patterns: N lines of the case's grep
    pattern = re.fullmatch(r"pattern \(count (\d+)", text)
    if pattern:
        return int(pattern.group(1)) in {n for _, n in GREPS[case.id]}
    if text == "total=0":
        return any(n == 0 for _, n in GREPS[case.id])
    if tool == "query_metrics":
        alerts = _alerts(env)
        if text in alerts:
            return True
        if text.startswith("state="):  # the state of an alert the case also cites
            named = [alerts[c.text] for c in case.must_cite if c.text in alerts]
            return bool(named) and all(alert["state"] == text.removeprefix("state=") for alert in named)
        series = re.fullmatch(r"(\S+) (\w+)", text)
        if series and (env / "metrics" / f"{series.group(1)}.csv").exists():
            header = (env / "metrics" / f"{series.group(1)}.csv").read_text(encoding="utf-8").splitlines()[0]
            return any(column.startswith(series.group(2)) for column in header.split(","))
    return text in _corpus(env) or _absent(case, text)


# --- the suite ------------------------------------------------------------------------------------


def test_the_suite_has_enough_cases_of_every_kind():
    questions = [case.question or "" for case in CASES]
    kinds = {
        "english": [q for q in questions if not CJK.search(q)],
        "chinese": [q for q in questions if CJK.search(q)],
        "double quotes": [q for q in questions if re.search(r'"[^"]+"', q)],
        "single quotes": [q for q in questions if re.search(r"'[^']+'", q)],
        "curly quotes": [q for q in questions if re.search(r"“[^”]+”", q)],
        "corner brackets": [q for q in questions if re.search(r"「[^」]+」", q)],
        "absolute ranges": [
            c for c in CASES if any(s.range for s in c.must_search) and re.search(r"\d:\d\d", c.question or "")
        ],
        "counts": [c for c in CASES if any(re.fullmatch(r"\d+ matching lines", m.text) for m in c.must_cite)],
        "unknown services": [c for c in CASES if any(m.text.startswith("unknown service") for m in c.must_cite)],
        "negatives": [c for c in CASES if "negative_observation" in c.claim_types],
        "levels": [c for c in CASES if any(s.level_at_most for s in c.must_search)],
        "alert states": [c for c in CASES if any(m.tool == "query_metrics" for m in c.must_cite)],
        "follow-ups": [c for c in CASES if c.follows],
    }
    assert len(CASES) >= 64
    assert {kind: len(found) for kind, found in kinds.items() if len(found) < 4} == {}
    assert {case.env for case in CASES} == {"host", "edge", "demo", "cluster"}


def test_follow_ups_carry_the_question_they_follow():
    for case in (case for case in CASES if case.follows):
        assert case.follows_question == next(c.question for c in CASES if c.id == case.follows)


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.id)
def test_every_grep_above_a_case_still_counts_what_it_says(case):
    assert GREPS[case.id], f"{case.id}: no `# grep … → N` comment above the case"
    assert [(cmd, run_grep(cmd, case.env_dir)) for cmd, _ in GREPS[case.id]] == GREPS[case.id]


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.id)
def test_every_expected_text_is_a_fact_of_the_environment(case):
    assert case.must_cite and case.must_search, f"{case.id}: checks the cited evidence and the search"
    wrong = [citation.text for citation in case.must_cite if not _cited_fact_holds(case, citation.tool, citation.text)]
    corpus = _corpus(case.env_dir).casefold()
    wrong += [
        expected.contains
        for expected in case.must_search
        if expected.contains and expected.contains.casefold() not in corpus and not _absent(case, expected.contains)
    ]
    services = _services(case.env_dir)
    wrong += [
        expected.service
        for expected in case.must_search
        if expected.service
        and expected.service not in services
        and f"unknown service '{expected.service}'" not in {c.text for c in case.must_cite}
    ]
    assert wrong == []


def test_the_grep_runner_counts_like_grep(tmp_path):
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "a.log").write_text("x (OOMKilled) 1\nx OOMKilled 2\nfailed password\n", encoding="utf-8")

    assert run_grep("grep -c 'x (OOMKilled)' logs/a.log", tmp_path) == 1  # basic: parentheses are literal
    assert run_grep("grep -c -E 'x \\(?OOMKilled' logs/a.log", tmp_path) == 2
    assert run_grep("grep -c -i 'FAILED' logs/a.log", tmp_path) == 1
    assert run_grep("grep -c -r 'OOM' logs", tmp_path) == 2
    with pytest.raises(AssertionError):
        run_grep("grep -c 'x' logs/missing.log", tmp_path)


def test_a_drifted_expectation_is_caught():
    from dataclasses import replace

    from evcli.evals.cases import Citation

    case = next(case for case in CASES if case.id == "host-502-count-en")
    assert _cited_fact_holds(case, "query_logs", "14 matching lines")
    assert not _cited_fact_holds(case, "query_logs", "15 matching lines")
    assert not _cited_fact_holds(case, "query_logs", '"POST /api/orders HTTP/1.1" 503')
    assert not _cited_fact_holds(case, "query_logs", "unknown service 'nginx'")  # nginx exists
    assert not _cited_fact_holds(case, "query_logs", "close names: nginx")  # the case cites no unknown service
    unknown = next(case for case in CASES if case.id == "host-unknown-shop-api-v2-zh")
    assert _cited_fact_holds(unknown, "query_logs", "close names: shop-api")
    assert not _cited_fact_holds(unknown, "query_logs", "close names: shop-api-v3")
    alert = next(case for case in CASES if case.id == "host-401-alert-firing-en")
    assert not _cited_fact_holds(alert, "query_metrics", "HighHTTP401Rate, service=auth")
    resolved = replace(alert, must_cite=(Citation("query_metrics", "ZooKeeperDown, service=zookeeper"),))
    assert not _cited_fact_holds(resolved, "query_metrics", "state=firing")  # it ended at 08:13Z
    assert run_grep("grep -c '\" 502 ' logs/nginx.log", case.env_dir) == 14
