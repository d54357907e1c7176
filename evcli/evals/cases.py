"""Diagnosis cases: questions and alerts with expectations, run through the whole chain.

A case file is TOML with one `[[cases]]` table per case:

```toml
[[cases]]
id = "payment-cpu"
env = "demo"                      # "demo", "edge", "host", or a directory relative to this file
question = "Why is payment-service CPU usage high?"   # or: alert = "alerts/x.json"
allowed_verdicts = ["PASS"]
claim_types = ["observation"]     # each must appear among the answer's claims
max_claims = 6
must_not_contain = ["root cause confirmed"]   # case-insensitive, in the answer
[[cases.must_cite]]
tool = "query_metrics"
text = "HighCPUUsage"             # some cited evidence of that tool contains it
[[cases.must_search]]             # some successful invocation searched at least this scope:
tool = "query_logs"
service = "payment-service"       # optional: that service
contains = "timeout"              # optional: its keywords contain this text
range = "22:40..23:00"            # optional: its range contains this one (env clock and zone, or ISO)
level_at_most = "WARN"            # optional: no level filter above this one
```

A case may also have `follows = "<case id>"` (it runs as `ask --continue` of a fresh session of
that question case) and `skip = "<reason>"` (it is listed, with the reason, but not run; the
pass rate is over the cases that ran).

An alert case's payload goes through `evcli.aiops`, one report (and session)
per firing alert; every report must meet the expectations and pass the AIOps
rule evaluation of its run.

Each case runs in its own session of one trace store, with the case's
environment and whatever models were chosen, so the same file grades the
offline engine and any litellm model. Besides the expectations, a case
reports how grounded the Executor was (the share of its claims whose every
binding passed the gate, and of its bindings that passed), overstatement
phrases in the answer, model calls, tokens and wall time, and the asked scope (the session's
`Query`, None before it was recorded) next to what each successful invocation searched.
A case whose verdict is PASS although a `must_search` was not met counts as `pass_with_scope_miss`:
the eval's own check of the searched scope, independent of the Gatekeeper's scope rules.
"""

from __future__ import annotations

import dataclasses
import multiprocessing
import tempfile
import time
import tomllib
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, TypeVar, get_args, overload

from evcli.agents.roles import Models
from evcli.contracts import ScopeLevel, SessionDocument, Verdict
from evcli.core.errors import BadInput, EvcliError
from evcli.core.time import TimeRange, parse_range_text, parse_time
from evcli.gatekeeper.excerpt import normalize
from evcli.gatekeeper.rules import RuleSet
from evcli.pipeline import Pipeline
from evcli.store.db import TraceStore

SUITES_DIR = Path(__file__).resolve().parent / "suites"
DIAGNOSIS_SUITE = SUITES_DIR / "diagnosis.toml"
ONCALL_SUITE = SUITES_DIR / "oncall.toml"
DEFAULT_SUITES = (DIAGNOSIS_SUITE, ONCALL_SUITE)  # what `evcli eval cases` runs without a path
LEVELS: tuple[str, ...] = get_args(ScopeLevel)  # lowest first
VERDICTS = tuple(verdict.value for verdict in Verdict)  # best first: a case with several alerts reports the worst

CaseT = TypeVar("CaseT")
Progress = Callable[[dict[str, Any]], None]


# --- case files (shared with evcli.evals.retrieval) -------------------------------------


def env_dir(name: str, case_file: Path) -> Path:
    """`demo` and the directories of evcli/envs (`edge`, `host`) are the packaged environments;
    anything else is a directory relative to the case file."""
    from evcli.backends.spec import packaged_env_dir

    return packaged_env_dir(name) or (case_file.parent / name).resolve()


class CaseTable:
    """One `[[cases]]` table; every problem names the file, the case number and its id."""

    def __init__(self, source: Path, number: int, table: Any, keys: Iterable[str]) -> None:
        self.source, self.number = source, number
        self.raw = table if isinstance(table, dict) else {}
        case_id = self.raw.get("id")
        self.label = f"case {number}" + (f" ({case_id!r})" if isinstance(case_id, str) and case_id else "")
        if not isinstance(table, dict):
            raise self.error("is not a table")
        unknown = sorted(set(self.raw) - set(keys))
        if unknown:
            raise self.error(f"unknown key {', '.join(map(repr, unknown))}; known keys: {', '.join(keys)}")

    def error(self, problem: str) -> BadInput:
        return BadInput(f"{self.source}: {self.label}: {problem}")

    @overload
    def text(self, key: str, *, required: Literal[True]) -> str: ...
    @overload
    def text(self, key: str, *, default: str) -> str: ...
    @overload
    def text(self, key: str) -> str | None: ...
    def text(self, key: str, *, required: bool = False, default: str | None = None) -> str | None:
        value = self.raw.get(key)
        if value is None:
            if required:
                raise self.error(f"missing `{key}`")
            return default
        if not isinstance(value, str) or not value.strip():
            raise self.error(f"`{key}` must be a non-empty string, got {value!r}")
        return value

    def texts(self, key: str, *, choices: tuple[str, ...] | None = None) -> tuple[str, ...]:
        value = self.raw.get(key, [])
        if not isinstance(value, list) or not all(isinstance(item, str) and item.strip() for item in value):
            raise self.error(f"`{key}` must be a list of non-empty strings, got {value!r}")
        for item in value:
            if choices is not None and item not in choices:
                raise self.error(f"`{key}` has {item!r}; allowed: {', '.join(choices)}")
        return tuple(value)

    @overload
    def count(self, key: str, *, default: int, minimum: int = 0) -> int: ...
    @overload
    def count(self, key: str, *, minimum: int = 0) -> int | None: ...
    def count(self, key: str, *, default: int | None = None, minimum: int = 0) -> int | None:
        value = self.raw.get(key, default)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise self.error(f"`{key}` must be a whole number of at least {minimum}, got {value!r}")
        return value

    def tables(self, key: str, keys: tuple[str, ...], optional: tuple[str, ...] = ()) -> list[dict[str, str]]:
        """A list of sub-tables of non-empty strings: every one of `keys`, any of `optional`."""
        value = self.raw.get(key, [])
        if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
            raise self.error(f"`{key}` must be a list of tables ([[cases.{key}]]), got {value!r}")
        for position, item in enumerate(value, start=1):
            fits = set(keys) <= set(item) <= set(keys + optional)
            if not fits or not all(isinstance(v, str) and v.strip() for v in item.values()):
                extra = f" (optional: {', '.join(optional)})" if optional else ""
                raise self.error(
                    f"`{key}` entry {position} must have exactly {', '.join(keys)}{extra} as non-empty strings, "
                    f"got {item!r}"
                )
        return value


def suite_files(path: Path) -> list[Path]:
    """The file itself, or the `*.toml` files of a directory in name order."""
    if path.is_dir():
        files = sorted(path.glob("*.toml"))
        if not files:
            raise BadInput(f"no case files (*.toml) in {path}")
        return files
    if not path.is_file():
        raise BadInput(f"no such case file: {path}")
    return [path]


def read_suite(path: Path | Sequence[Path], keys: tuple[str, ...], build: Callable[[CaseTable], CaseT]) -> list[CaseT]:
    """Every case of a file or directory (or of several), built from its validated table; ids are
    unique across the suite."""
    cases: list[CaseT] = []
    seen: dict[str, Path] = {}
    paths = [Path(path)] if isinstance(path, (str, Path)) else [Path(item) for item in path]
    for source in (file for item in paths for file in suite_files(item)):
        try:
            document = tomllib.loads(source.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError) as exc:
            raise BadInput(f"{source}: cannot read case file: {exc}") from exc
        except tomllib.TOMLDecodeError as exc:
            raise BadInput(f"{source}: not valid TOML: {exc}") from exc
        extra = sorted(set(document) - {"cases"})
        if extra:
            raise BadInput(
                f"{source}: unknown top-level key {', '.join(map(repr, extra))}; cases go in [[cases]] tables"
            )
        tables = document.get("cases")
        if not isinstance(tables, list) or not tables:
            raise BadInput(f"{source}: no [[cases]] tables")
        for number, raw in enumerate(tables, start=1):
            table = CaseTable(source, number, raw, keys)
            case_id = table.text("id", required=True)
            if case_id in seen:
                raise table.error(f"duplicate id {case_id!r} (first in {seen[case_id]})")
            seen[case_id] = source
            cases.append(build(table))
    return cases


# --- diagnosis cases ----------------------------------------------------------------------


@dataclass(frozen=True)
class Citation:
    tool: str
    text: str


@dataclass(frozen=True)
class SearchExpectation:
    """A scope some successful invocation must have searched (`[[cases.must_search]]`)."""

    tool: str
    service: str | None = None
    contains: str | None = None
    range: TimeRange | None = None
    level_at_most: str | None = None

    def describe(self) -> str:
        parts = [self.tool]
        parts += [f"service={self.service}"] if self.service else []
        parts += [f"keywords containing {self.contains!r}"] if self.contains else []
        parts += [f"range containing {self.range.text()}"] if self.range else []
        parts += [f"level filter at most {self.level_at_most}"] if self.level_at_most else []
        return ", ".join(parts)

    def met_by(self, searched: dict[str, Any]) -> bool:
        """Whether one searched scope (an item of `searched_scopes`) covers this expectation."""
        if searched["tool"] != self.tool:
            return False
        if self.service and (searched["service"] or "").casefold() != self.service.casefold():
            return False
        if self.contains and self.contains.casefold() not in " ".join(searched["keywords"]).casefold():
            return False
        if self.level_at_most and _level_rank(searched["level"]) > LEVELS.index(self.level_at_most):
            return False
        return self.range is None or (searched["range"] is not None and _contains(searched["range"], self.range))


def _level_rank(level: str | None) -> int:
    """The rank of a level filter in LEVELS; no filter ranks below every level."""
    name = (level or "").upper().replace("WARNING", "WARN")
    return LEVELS.index(name) if name in LEVELS else -1


def _contains(searched: str, asked: TimeRange) -> bool:
    try:
        return parse_range_text(searched).contains(asked)
    except ValueError:
        return False


@dataclass(frozen=True)
class DiagnosisCase:
    id: str
    source: Path
    env: str
    env_dir: Path
    question: str | None
    alert: Path | None  # an alert payload (JSON) diagnosed with evcli.aiops
    allowed_verdicts: tuple[str, ...]  # empty: any verdict
    claim_types: tuple[str, ...]
    max_claims: int | None
    must_cite: tuple[Citation, ...]
    must_not_contain: tuple[str, ...]
    must_search: tuple[SearchExpectation, ...] = ()
    follows: str | None = None  # id of the case this one follows up (`ask --continue`)
    follows_question: str | None = None  # that case's question, set when the suite is loaded
    skip: str | None = None  # why the case is listed but not run
    runbooks: tuple[Path, ...] = ()  # `eval cases --runbooks`: searched instead of the environment's own

    def env_spec(self) -> dict[str, Any]:
        """The environment its sessions run in (`EnvironmentSpec.as_config` form)."""
        spec: dict[str, Any] = {"env_dir": str(self.env_dir)}
        if self.runbooks:
            spec["runbooks"] = [str(directory) for directory in self.runbooks]
        return spec


CASE_KEYS = (
    "id",
    "env",
    "question",
    "alert",
    "allowed_verdicts",
    "claim_types",
    "max_claims",
    "must_cite",
    "must_not_contain",
    "must_search",
    "follows",
    "skip",
)
SEARCH_KEYS = ("service", "contains", "range", "level_at_most")


def _diagnosis_case(table: CaseTable) -> DiagnosisCase:
    question, alert = table.text("question"), table.text("alert")
    if (question is None) == (alert is None):
        raise table.error("needs exactly one of `question` and `alert`" + (", not both" if question else ""))
    allowed = table.texts("allowed_verdicts", choices=VERDICTS)
    if "allowed_verdicts" in table.raw and not allowed:
        raise table.error("`allowed_verdicts` must list at least one verdict (leave it out to allow any)")
    env = table.text("env", default="demo")
    if table.text("follows") is not None and question is None:
        raise table.error("`follows` needs a `question` (a follow-up is asked with `ask --continue`)")
    directory = env_dir(env, table.source)
    return DiagnosisCase(
        id=table.text("id", required=True),
        source=table.source,
        env=env,
        env_dir=directory,
        question=question,
        alert=(table.source.parent / alert).resolve() if alert else None,
        allowed_verdicts=allowed,
        claim_types=table.texts("claim_types"),
        max_claims=table.count("max_claims"),
        must_cite=tuple(Citation(**item) for item in table.tables("must_cite", ("tool", "text"))),
        must_not_contain=table.texts("must_not_contain"),
        must_search=tuple(
            _search_expectation(table, item, directory) for item in table.tables("must_search", ("tool",), SEARCH_KEYS)
        ),
        follows=table.text("follows"),
        skip=table.text("skip"),
    )


def _search_expectation(table: CaseTable, item: dict[str, str], directory: Path) -> SearchExpectation:
    level = item.get("level_at_most")
    if level is not None and level not in LEVELS:
        raise table.error(f"`must_search` level_at_most {level!r}; allowed: {', '.join(LEVELS)}")
    asked = item.get("range")
    return SearchExpectation(
        tool=item["tool"],
        service=item.get("service"),
        contains=item.get("contains"),
        range=None if asked is None else _expected_range(table, asked, directory),
        level_at_most=level,
    )


def _expected_range(table: CaseTable, text: str, directory: Path) -> TimeRange:
    """`START..END`, each a time expression read on the environment's clock and in its zone."""
    from evcli.backends.snapshot_config import ENV_FILE, load_env_config

    config = load_env_config(directory / ENV_FILE)
    start, separator, end = text.partition("..")
    if not separator or not start.strip() or not end.strip():
        raise table.error(f"`must_search` range {text!r} must be START..END")
    if config.now is None and not ("T" in start and "T" in end):
        raise table.error(f"`must_search` range {text!r}: the environment has no `now`; use ISO times")
    clock = config.now or datetime.now(UTC)
    try:
        return TimeRange(*(parse_time(part, clock=clock, tz=config.timezone) for part in (start, end)))
    except ValueError as exc:
        raise table.error(f"`must_search` range {text!r}: {exc}") from exc


def load_cases(path: Path | None = None) -> list[DiagnosisCase]:
    """The diagnosis cases of a file or a directory of files (default: the shipped suites); a
    follow-up gets the question of the case it follows."""
    cases = read_suite(path or DEFAULT_SUITES, CASE_KEYS, _diagnosis_case)
    questions = {case.id: case.question for case in cases}
    for index, case in enumerate(cases):
        if case.follows is None:
            continue
        if questions.get(case.follows) is None:
            raise BadInput(f"{case.source}: case {case.id!r} follows {case.follows!r}, no question case of the suite")
        cases[index] = dataclasses.replace(case, follows_question=questions[case.follows])
    return cases


# --- judging one result -------------------------------------------------------------------


def _answer_text(result: dict[str, Any]) -> str:
    answer = result.get("answer") or {}
    return f"{answer.get('answer_summary') or ''}\n{answer.get('user_facing_answer') or ''}"


def cites(result: dict[str, Any], citation: Citation) -> bool:
    """Whether a result's claims cite evidence of the citation's tool whose text contains its text."""
    return any(
        evidence["tool_name"] == citation.tool and citation.text in (evidence["text"] or "")
        for claim in result["claims"]
        for evidence in claim["evidence"]
    )


def failed_expectations(case: DiagnosisCase, result: dict[str, Any]) -> list[str]:
    """What a result (of `ask`, or one alert report) misses of the case's expectations; empty when it passes."""
    failures = []
    if case.allowed_verdicts and result["verdict"] not in case.allowed_verdicts:
        failures.append(f"verdict {result['verdict']} is not one of {', '.join(case.allowed_verdicts)}")
    claims = result["claims"]
    present = {claim["claim_type"] for claim in claims}
    failures += [f"no {claim_type} claim" for claim_type in case.claim_types if claim_type not in present]
    if case.max_claims is not None and len(claims) > case.max_claims:
        failures.append(f"{len(claims)} claims, more than max_claims {case.max_claims}")
    for citation in case.must_cite:
        if not cites(result, citation):
            failures.append(f"no cited {citation.tool} evidence contains {citation.text!r}")
    answer = _answer_text(result).casefold()
    failures += [f"answer contains {phrase!r}" for phrase in case.must_not_contain if phrase.casefold() in answer]
    # An alert report also carries the AIOps rule evaluation of its own run; a broken rule fails the case.
    evaluation = result.get("aiops_rule_evaluation") or {}
    failures += [
        f"AIOps check {name} failed" for name, held in evaluation.items() if name != "passed" and held is False
    ]
    return failures


def overstatements(result: dict[str, Any], phrases: Iterable[str]) -> int:
    """Occurrences of the rules' overstatement phrases in the answer (compared as the post-guard does)."""
    from evcli.agents.postguard import stated  # quoted cited evidence is not the answer's own claim

    text = normalize(_answer_text(result))
    corpus = normalize("\n".join(e["text"] or "" for claim in result.get("claims") or [] for e in claim["evidence"]))
    return sum(text.count(normalize(phrase)) for phrase in stated(text, phrases, corpus))


def grounding(document: SessionDocument) -> dict[str, int]:
    """The Executor's latest claims and bindings against the latest gate result of the session.

    A claim is grounded when it has bindings and every one of them passed the gate.
    """
    execute = document.latest_stage("execute")
    output = execute.output if execute is not None and isinstance(execute.output, dict) else {}
    claims = [claim for claim in output.get("claims") or [] if isinstance(claim, dict)]
    checked = document.gate_results[-1].result.checked_bindings if document.gate_results else []
    passed = {(binding.claim_id, binding.binding_index) for binding in checked if binding.status == "pass"}

    def grounded(claim: dict[str, Any]) -> bool:
        bindings = claim.get("evidence_bindings")
        return (
            isinstance(bindings, list)
            and bool(bindings)
            and all((claim.get("claim_id"), index) in passed for index in range(len(bindings)))
        )

    return {
        "executor_claims": len(claims),
        "grounded_claims": sum(map(grounded, claims)),
        "checked_bindings": len(checked),
        "passed_bindings": sum(binding.status == "pass" for binding in checked),
    }


def asked_scope(document: SessionDocument) -> dict[str, Any] | None:
    """The session's question scope as stored (only the fields that differ from the defaults)."""
    scope = document.run.config.scope
    return None if scope is None else scope.model_dump(mode="json", exclude_defaults=True)


def searched_scopes(document: SessionDocument) -> list[dict[str, Any]]:
    """What each successful evidence invocation searched: tool, service, keywords, level and range."""
    scopes = []
    for invocation in document.invocations:
        details = invocation.retrieval_details
        if not invocation.success or details is None or details.evidence_status == "failed":
            continue
        extra = details.model_extra or {}
        scopes.append(
            {
                "tool": invocation.tool_name,
                "service": details.service,
                "keywords": list(details.keywords),
                "level": extra.get("level"),
                "range": details.range,
            }
        )
    return scopes


def scope_misses(case: DiagnosisCase, searched: list[dict[str, Any]]) -> list[str]:
    """The case's `must_search` expectations that no searched scope meets."""
    return [
        f"nothing searched {expected.describe()}"
        for expected in case.must_search
        if not any(expected.met_by(scope) for scope in searched)
    ]


def _ratio(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


# --- running ------------------------------------------------------------------------------


def _diagnose(case: DiagnosisCase, pipeline) -> list[dict[str, Any]]:
    if case.follows_question is not None:  # `ask --continue` of a fresh session of the followed question
        first = pipeline.ask(case.follows_question)
        run = pipeline.create_session(case.question, continues=first.session_id)
        return [pipeline.run_from(run.session_id, "plan").model_dump(mode="json")]
    if case.alert is None:  # a case has exactly one of question and alert
        return [pipeline.ask(case.question).model_dump(mode="json")]  # an alert report is this JSON plus its alert
    from evcli.aiops import diagnose_payload  # the alert chain; loaded only by alert cases
    from evcli.core.userfiles import ALERT_PAYLOAD, read_json

    return diagnose_payload(pipeline, read_json(case.alert, ALERT_PAYLOAD), source=str(case.alert))


def run_case(case: DiagnosisCase, store: TraceStore, rules: RuleSet, models: Models) -> dict[str, Any]:
    """Run one case in its own session(s) of `store`; a case that cannot run fails with the error."""
    started = time.perf_counter()
    reports: list[dict[str, Any]] = []
    error = None
    try:
        if case.skip is None:
            pipeline = Pipeline(store=store, rules=rules, models=models, env_spec=case.env_spec())
            reports = _diagnose(case, pipeline)
    except EvcliError as exc:
        error = exc.message
    except Exception as exc:  # an eval reports what broke and goes on with the next case
        error = f"unexpected {type(exc).__name__}: {exc}"

    failures = [f"error: {error}"] if error else []
    counts = dict.fromkeys(("executor_claims", "grounded_claims", "checked_bindings", "passed_bindings"), 0)
    asked: list[dict[str, Any] | None] = []
    searched: list[dict[str, Any]] = []
    for report in reports:
        prefix = f"alert {report['alert']['alertname']}: " if len(reports) > 1 else ""
        failures += [prefix + failure for failure in failed_expectations(case, report)]
        document = store.load(report["session_id"])
        for key, value in grounding(document).items():
            counts[key] += value
        asked.append(asked_scope(document))
        searched += searched_scopes(document)
    misses = scope_misses(case, searched) if reports else []
    verdict = max((Verdict(r["verdict"]) for r in reports), default=None)
    return {
        "id": case.id,
        "env": case.env,
        "kind": "question" if case.question is not None else "alert",
        "follows": case.follows,
        "skipped": case.skip,
        "passed": case.skip is None and not failures and not misses,
        "failures": failures + misses,
        "error": error,
        "asked": asked,  # the question scope of each session (an alert case has one per alert)
        "searched": searched,
        "scope_misses": misses,
        "pass_with_scope_miss": verdict is Verdict.PASS and bool(misses),
        "verdict": verdict,
        "session_ids": [report["session_id"] for report in reports],
        "claims": sum(len(report["claims"]) for report in reports),
        **counts,
        "coverage": _ratio(counts["grounded_claims"], counts["executor_claims"]),
        "precision": _ratio(counts["passed_bindings"], counts["checked_bindings"]),
        "overstatements": sum(overstatements(report, rules.overstatement_phrases) for report in reports),
        "model_calls": sum(report["usage"]["model_calls"] for report in reports),
        "prompt_tokens": sum(report["usage"]["prompt_tokens"] for report in reports),
        "completion_tokens": sum(report["usage"]["completion_tokens"] for report in reports),
        "seconds": round(time.perf_counter() - started, 3),
    }


# One store per worker process, opened by the pool's initializer (each process
# needs its own connection; the store queues concurrent writers).
_worker: dict[str, Any] = {}


def _start_worker(db_path: Path, rules: RuleSet, models: Models) -> None:
    _worker.update(store=TraceStore(db_path), rules=rules, models=models)


def _run_in_worker(indexed: tuple[int, DiagnosisCase]) -> tuple[int, dict[str, Any]]:
    index, case = indexed
    return index, run_case(case, _worker["store"], _worker["rules"], _worker["models"])


def _results(
    cases: list[DiagnosisCase], db_path: Path, rules: RuleSet, models: Models, jobs: int
) -> Iterator[tuple[int, dict[str, Any]]]:
    """(case index, result) as each case finishes."""
    with TraceStore(db_path) as store:
        if jobs == 1:
            for index, case in enumerate(cases):
                yield index, run_case(case, store, rules, models)
            return
    # Each worker opens its own connection to the file the store above created and migrated.
    pool = multiprocessing.get_context("spawn").Pool(min(jobs, len(cases)), _start_worker, (db_path, rules, models))
    try:
        yield from pool.imap_unordered(_run_in_worker, enumerate(cases))
        pool.close()
    except BaseException:
        pool.terminate()
        raise
    finally:
        pool.join()


def run_suite(
    cases: list[DiagnosisCase],
    *,
    rules: RuleSet,
    models: Models,
    db_path: Path | None = None,
    jobs: int = 1,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Run every case (in `jobs` processes) in a store at `db_path`, else in a temporary one."""
    if jobs < 1:
        raise BadInput(f"jobs must be at least 1, not {jobs}")
    started = time.perf_counter()
    results: list[dict[str, Any]] = [{} for _ in cases]
    with tempfile.TemporaryDirectory(prefix="evcli-eval-") as scratch:
        for index, result in _results(cases, db_path or Path(scratch) / "eval.db", rules, models, jobs):
            results[index] = result
            if progress is not None:
                progress(result)
    return {
        "suite": sorted({str(case.source) for case in cases}),
        "models": models.as_config(),
        "rule_set_version": rules.version,
        "db": str(db_path) if db_path else None,
        "jobs": jobs,
        "cases": results,
        "totals": _totals(results, seconds=time.perf_counter() - started),
    }


def _totals(results: list[dict[str, Any]], *, seconds: float) -> dict[str, Any]:
    """Sums over the cases; the pass rate is over the cases that ran (skipped ones are counted apart)."""
    passed = sum(result["passed"] for result in results)
    skipped = sum(result["skipped"] is not None for result in results)
    coverages = [result["coverage"] for result in results if result["coverage"] is not None]

    def total(key: str) -> int:
        return sum(result[key] for result in results)

    return {
        "cases": len(results),
        "passed": passed,
        "failed": len(results) - skipped - passed,
        "skipped": skipped,
        "pass_rate": _ratio(passed, len(results) - skipped),
        "pass_with_scope_miss": sum(result["pass_with_scope_miss"] for result in results),
        "mean_coverage": round(sum(coverages) / len(coverages), 4) if coverages else None,
        "precision": _ratio(total("passed_bindings"), total("checked_bindings")),
        "overstatements": total("overstatements"),
        "model_calls": total("model_calls"),
        "prompt_tokens": total("prompt_tokens"),
        "completion_tokens": total("completion_tokens"),
        "seconds": round(seconds, 3),
    }
