"""`evcli eval …`: evaluation suites that CI pipelines run."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from evcli.cli._common import DbOption, JsonOption, err, handles_errors, out, print_json, safe
from evcli.cli._eval_model import model_command
from evcli.core.errors import EXIT_OK, EXIT_RUNTIME

app = typer.Typer(help="Evaluation suites with targets; exit 1 when a target is missed.", no_args_is_help=True)
app.command("model")(model_command)


@app.command("gatekeeper")
@handles_errors
def gatekeeper_command(
    sessions: Annotated[
        Path | None,
        typer.Option(
            "--sessions",
            file_okay=False,
            help="Directory of valid session files to mutate (default: the shipped samples).",
        ),
    ] = None,
    rules: Annotated[
        Path | None, typer.Option("--rules", dir_okay=False, help="Rules file (default: the shipped rules.toml).")
    ] = None,
    envs: Annotated[
        bool,
        typer.Option(
            "--envs",
            help="Also mutate the offline chain's sessions on every packaged environment (typed-fact classes "
            "included); the held-out half of those questions is reported apart.",
        ),
    ] = False,
    json_output: JsonOption = False,
) -> None:
    """Fault injection: mutate valid sessions and check each false citation is caught.

    Target: 100% of mutations caught with the expected rule and severity, 0% of
    benign variants failed.
    """
    from evcli.core.errors import BadInput
    from evcli.evals.gatekeeper import load_base_sessions, run_suite, run_with_holdout
    from evcli.gatekeeper.rules import load_rules

    if sessions is not None and not sessions.is_dir():
        raise BadInput(f"no such directory: {sessions}")
    bases, rule_set = load_base_sessions(sessions), load_rules(rules)
    report = run_with_holdout(bases, rule_set) if envs else run_suite(bases, rule_set)
    if json_output:
        print_json(report)
    else:
        _render(report)
    raise typer.Exit(EXIT_OK if report["targets_met"] else EXIT_RUNTIME)


def _render(report) -> None:
    from rich.table import Table

    table = Table(
        title=f"gatekeeper fault injection · {len(report['base_sessions'])} base sessions · {report['rule_set_version']}"
    )
    for column in ("class", "expected", "cases", "ok", "observed severity", "rules fired"):
        table.add_column(column, overflow="fold")
    for row in report["classes"]:
        expected = "pass" if row["benign"] else f"{row['expected_severity']} · {row['expected_rule']}"
        colour = "green" if row["cases"] and row["ok"] == row["cases"] else "red"
        table.add_row(
            row["class"],
            expected,
            str(row["cases"]),
            f"[{colour}]{row['ok']}[/]",
            ", ".join(f"{k}={v}" for k, v in row["observed_severity"].items()),
            ", ".join(f"{k}={v}" for k, v in row["rules_fired"].items()) or "-",
        )
    out.print(table)
    for row in report["classes"]:
        for miss in row["misses"]:
            out.print(f"[red]miss[/] {row['class']}: {miss}")
    mutations, benign = report["mutations"], report["benign"]
    out.print(
        f"mutations caught: {mutations['caught']}/{mutations['cases']} ({(mutations['rate'] or 0):.1%}) · "
        f"benign rejected: {benign['rejected']}/{benign['cases']} ({(benign['rate'] or 0):.1%}) · "
        + ("[green]targets met[/]" if report["targets_met"] else "[red]targets missed[/]")
    )
    if report["skipped_bases"]:
        out.print(f"[yellow]skipped bases that do not pass the gate:[/] {', '.join(report['skipped_bases'])}")
    if report["classes_without_cases"]:
        out.print(f"[yellow]classes with no applicable case:[/] {', '.join(report['classes_without_cases'])}")


def _fail_under(rate: str):
    return typer.Option(
        "--fail-under", min=0.0, max=1.0, metavar="RATE", help=f"Exit 1 when the {rate} (0-1) is below RATE."
    )


def _exit_code(rate: float, fail_under: float | None) -> int:
    return EXIT_RUNTIME if fail_under is not None and rate < fail_under else EXIT_OK


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


@app.command("cases")
@handles_errors
def cases_command(
    path: Annotated[
        Path | None,
        typer.Argument(
            help="Case file or directory of *.toml case files (default: the shipped suites diagnosis.toml and oncall.toml)."
        ),
    ] = None,
    model: Annotated[
        str | None, typer.Option("--model", help="`offline` (default) or a litellm model string for every role.")
    ] = None,
    api_base: Annotated[
        str | None, typer.Option("--api-base", help="OpenAI-compatible server URL for the model(s).")
    ] = None,
    jobs: Annotated[int, typer.Option("--jobs", min=1, help="Run cases in this many parallel processes.")] = 1,
    runbooks: Annotated[
        list[Path] | None,
        typer.Option(
            "--runbooks",
            exists=True,
            file_okay=False,
            help="Runbook directory every case searches instead of its environment's own; repeatable.",
        ),
    ] = None,
    fail_under: Annotated[float | None, _fail_under("pass rate")] = None,
    progress: Annotated[
        bool, typer.Option("--progress", help="One stderr line per case even when stderr is not a terminal.")
    ] = False,
    json_output: JsonOption = False,
    db: DbOption = None,
) -> None:
    """Diagnosis cases through the whole chain: expectations, grounding, overstatements and cost per case.

    Each case runs in its own session (of a temporary store unless --db is
    given) and shows the scope its question asked next to what was searched;
    a PASS whose search missed a `must_search` is counted apart. Exit 0, or 1 when --fail-under RATE is given and the pass rate is
    below it; a case file that is not valid is a usage error (exit 2).
    """
    import dataclasses

    from evcli.agents.roles import Models
    from evcli.evals.cases import load_cases, run_suite
    from evcli.gatekeeper.rules import load_rules

    cases = load_cases(path)
    if runbooks:
        cases = [dataclasses.replace(case, runbooks=tuple(runbooks)) for case in cases]
    show_progress = progress or err.is_terminal
    report = run_suite(
        cases,
        rules=load_rules(),
        models=Models(default=model or "offline", api_base=api_base),
        db_path=db,
        jobs=jobs,
        progress=_print_case_progress if show_progress else None,
    )
    if json_output:
        print_json(report)
    else:
        _render_cases(report)
    raise typer.Exit(_exit_code(report["totals"]["pass_rate"], fail_under))


def _print_case_progress(result) -> None:
    mark = "[yellow]-[/]" if result["skipped"] else "[green]✓[/]" if result["passed"] else "[red]✗[/]"
    outcome = f"skipped: {result['skipped']}" if result["skipped"] else result["verdict"] or "error"
    err.print(f"{mark} {safe(result['id'])} · {safe(outcome)} · {result['seconds']:.1f}s")


_TOOL_SHORT = {"query_logs": "logs", "query_metrics": "metrics", "lookup_knowledge": "kb"}


def _clock(range_text: str | None) -> str:
    """`START..END` as `HH:MM–HH:MM` (the dates and zones are in --json)."""
    if not range_text:
        return ""
    start, _, end = range_text.partition("..")
    return f"{start[11:16]}–{end[11:16]}"


def _asked_text(scopes) -> str:
    """The question scopes of a case in a few words: what the question named and asked for."""
    parts = []
    for scope in (scope for scope in scopes if scope):
        parts += scope.get("services", []) + [f"{name}?" for name in scope.get("unknown_services", [])]
        parts += scope.get("hosts", []) + scope.get("alertnames", [])
        parts += [scope["alert_state"]] if scope.get("alert_state") else []
        parts += [_clock(scope["range"]["range"])] if scope.get("range") else []
        parts += [f">={level}" for level in scope.get("levels", [])]
        parts += [repr(text) for text in scope.get("phrases", []) + scope.get("tokens", [])]
        parts += ["count"] if scope.get("wants_count") else []
    return " ".join(parts) if scopes and any(scopes) else "-"


def _searched_text(searched) -> str:
    """One short line per successful invocation: tool, service, keywords, level, range."""
    lines = []
    for scope in searched:
        words = [_TOOL_SHORT.get(scope["tool"], scope["tool"]), scope["service"] or "*"]
        words += [repr(" ".join(scope["keywords"]))] if scope["keywords"] else []
        words += [f">={scope['level']}"] if scope["level"] else []
        words += [_clock(scope["range"])] if scope["range"] else []
        lines.append(" ".join(word for word in words if word))
    return "\n".join(lines) or "-"


def _result_mark(case) -> str:
    if case["skipped"]:
        return "[yellow]skip[/]"
    return "[green]pass[/]" if case["passed"] else "[red]fail[/]"


def _render_cases(report) -> None:
    from rich.table import Table

    from evcli.pipeline import ROLES

    models = ", ".join(sorted({report["models"][role] for role in ROLES}))
    table = Table(title=f"diagnosis cases · {len(report['cases'])} cases · {models}")
    table.add_column("case", overflow="fold", min_width=12)
    for column in ("env", "result", "verdict", "claims", "grounded", "precision", "overstated", "calls", "tokens", "s"):
        table.add_column(column, overflow="fold")
    table.add_column("asked", overflow="fold", max_width=28)
    table.add_column("searched", overflow="fold", max_width=40)
    for case in report["cases"]:
        table.add_row(
            safe(case["id"]),
            safe(case["env"]),
            _result_mark(case),
            case["verdict"] or "-",
            str(case["claims"]),
            _percent(case["coverage"]),
            _percent(case["precision"]),
            str(case["overstatements"]),
            str(case["model_calls"]),
            str(case["prompt_tokens"] + case["completion_tokens"]),
            f"{case['seconds']:.1f}",
            safe(_asked_text(case["asked"])),
            safe(_searched_text(case["searched"])),
        )
    out.print(table)
    for case in report["cases"]:
        for failure in case["failures"]:
            out.print(f"[red]fail[/] {safe(case['id'])}: {safe(failure)}")
        if case["skipped"]:
            out.print(f"[yellow]skipped[/] {safe(case['id'])}: {safe(case['skipped'])}")
    totals = report["totals"]
    ran = totals["cases"] - totals["skipped"]
    out.print(
        f"passed {totals['passed']}/{ran} ({_percent(totals['pass_rate'])}) · skipped {totals['skipped']} · "
        f"PASS with scope miss {totals['pass_with_scope_miss']} · "
        f"mean coverage {_percent(totals['mean_coverage'])} · precision {_percent(totals['precision'])} · "
        f"overstatements {totals['overstatements']} · model calls {totals['model_calls']} · "
        f"tokens {totals['prompt_tokens'] + totals['completion_tokens']} · {totals['seconds']:.1f}s"
    )


@app.command("retrieval")
@handles_errors
def retrieval_command(
    path: Annotated[
        Path | None,
        typer.Argument(help="Case file or directory of *.toml case files (default: the shipped retrieval suite)."),
    ] = None,
    k: Annotated[
        int | None, typer.Option("--k", min=1, help="Blocks to retrieve per query (default: each case's k, else 5).")
    ] = None,
    fail_under: Annotated[float | None, _fail_under("overall recall@k")] = None,
    json_output: JsonOption = False,
) -> None:
    """Runbook retrieval: rank of each expected document within k, recall@k and MRR per environment.

    The runbooks are indexed into a temporary index. Exit 0, or 1 when
    --fail-under RATE is given and the overall recall@k is below it.
    """
    from evcli.evals.retrieval import load_retrieval_cases, run_suite

    report = run_suite(load_retrieval_cases(path), k=k)
    if json_output:
        print_json(report)
    else:
        _render_retrieval(report)
    raise typer.Exit(_exit_code(report["totals"]["recall_at_k"], fail_under))


def _render_retrieval(report) -> None:
    from rich.table import Table

    table = Table(title=f"runbook retrieval · {len(report['cases'])} cases")
    for column in ("case", "env", "query", "expected", "k", "rank"):
        table.add_column(column, overflow="fold")
    for case in report["cases"]:
        expected = case["expected_doc"] + (f" › {case['expected_heading']}" if case["expected_heading"] else "")
        rank = f"[green]{case['rank']}[/]" if case["hit"] else "[red]miss[/]"
        table.add_row(safe(case["id"]), safe(case["env"]), safe(case["query"]), safe(expected), str(case["k"]), rank)
    out.print(table)
    for case in report["cases"]:
        if not case["hit"]:
            found = case["error"] or ", ".join(case["retrieved"]) or "nothing"
            out.print(f"[red]miss[/] {safe(case['id'])}: {safe(found)}")
    for env, totals in report["by_env"].items():
        out.print(
            f"{safe(env)}: recall@k {_percent(totals['recall_at_k'])} ({totals['hits']}/{totals['cases']}) · MRR {totals['mrr']:.3f}"
        )
    totals = report["totals"]
    out.print(
        f"overall: recall@k {_percent(totals['recall_at_k'])} ({totals['hits']}/{totals['cases']}) · "
        f"MRR {totals['mrr']:.3f} · {totals['seconds']:.1f}s"
    )


@app.command("incidents")
@handles_errors
def incidents_command(
    count: Annotated[int, typer.Option("--count", min=1, help="Seeds to draw from (the split keeps its share).")] = 40,
    first_seed: Annotated[int, typer.Option("--first-seed", min=0, help="The first seed.")] = 1,
    split: Annotated[
        str, typer.Option("--split", help="tune, holdout (never looked at while tuning) or all.")
    ] = "holdout",
    questions: Annotated[
        int | None, typer.Option("--questions", min=1, help="Ask at most N questions of each incident (default: all).")
    ] = None,
    model: Annotated[
        str | None, typer.Option("--model", help="`offline` (default) or a litellm model string for every role.")
    ] = None,
    fail_under: Annotated[
        float | None, _fail_under("AS@1 (root cause first), or with --traces the share answered right")
    ] = None,
    progress: Annotated[
        bool, typer.Option("--progress", help="One stderr line per question even when stderr is not a terminal.")
    ] = False,
    traces: Annotated[
        bool,
        typer.Option(
            "--traces",
            help="Ask the trace questions instead (incidents with traces/ only): the service a claim citing "
            "query_traces names, or the callers its edges show, against the spans' own answer.",
        ),
    ] = False,
    json_output: JsonOption = False,
) -> None:
    """Generated incidents with known root causes: AS@1, AS@3 and fault kind per split and language.

    Each incident is a seeded snapshot (random service graph, noise, daily shape, misleading
    warnings, one injected fault spreading to callers) asked through the whole chain. Exit 0, or 1
    when --fail-under RATE is given and AS@1 is below it, or when any answer states a cause as certain.
    With --traces: which service is slow, where errors come from, who calls a service, per split, kind and language.
    """
    from evcli.agents.roles import Models
    from evcli.core.errors import BadInput
    from evcli.evals.incident_suite import run_incidents
    from evcli.evals.incidents import suite
    from evcli.evals.trace_suite import run_traces
    from evcli.gatekeeper.rules import load_rules

    if split not in ("tune", "holdout", "all"):
        raise BadInput(f"--split must be tune, holdout or all, not {split!r}")
    seeds = suite(count, first_seed, None if split == "all" else split)
    show_progress = progress or err.is_terminal
    run, render, print_progress = (
        (run_traces, _render_traces, _print_trace_progress)
        if traces
        else (run_incidents, _render_incidents, _print_incident_progress)
    )
    report = run(
        seeds,
        rules=load_rules(),
        models=Models(default=model or "offline"),
        progress=print_progress if show_progress else None,
        questions=questions,
    )
    if json_output:
        print_json(report)
    else:
        render(report)
    totals = report["totals"]
    rate = totals["correct"] if traces else totals["as1"]
    missed = totals.get("certain", 0) > 0 or (fail_under is not None and (rate or 0.0) < fail_under)
    raise typer.Exit(EXIT_RUNTIME if missed else EXIT_OK)


def _print_incident_progress(result) -> None:
    mark = "[green]✓[/]" if result["as1"] else "[yellow]~[/]" if result["as3"] else "[red]✗[/]"
    ranked = ", ".join(result["ranked"]) or result.get("error") or "no suspect"
    err.print(
        f"{mark} {result['incident']} {result['fault']} at {safe(result['truth'])} · "
        f"ranked {safe(ranked)} · {safe(result['question'][:60])}"
    )


def _render_incidents(report) -> None:
    from rich.table import Table

    table = Table(title=f"generated incidents · {len(report['seeds'])} incidents · {len(report['results'])} questions")
    for column in ("group", "questions", "AS@1", "AS@3", "kind", "certain", "errors"):
        table.add_column(column)
    groups = [("all", report["totals"])]
    groups += [(f"split {name}", row) for name, row in report["by_split"].items() if row["questions"]]
    groups += [(f"lang {name}", row) for name, row in report["by_language"].items() if row["questions"]]
    groups += [(f"fault {name}", row) for name, row in report["by_fault"].items()]
    for name, row in groups:
        table.add_row(
            name,
            str(row["questions"]),
            _percent(row["as1"]),
            _percent(row["as3"]),
            _percent(row["kind"]),
            str(row["certain"]),
            str(row["errors"]),
        )
    out.print(table)
    out.print(f"{report['seconds']:.1f}s")


def _print_trace_progress(result) -> None:
    mark = "[green]✓[/]" if result["correct"] else "[red]✗[/]"
    named = ", ".join(result["named"]) or result.get("error") or "nothing"
    err.print(
        f"{mark} {result['incident']} {result['kind']} expected {safe(', '.join(result['expected']))} · "
        f"named {safe(named)} · {result['verdict']} · {safe(result['question'][:60])}"
    )


def _render_traces(report) -> None:
    from rich.table import Table

    asked = f"{report['totals']['incidents']} incidents with traces · {len(report['results'])} questions"
    table = Table(title=f"trace questions · {asked}")
    for column in ("group", "questions", "correct", "PASS", "errors"):
        table.add_column(column)
    groups = [("all", report["totals"])]
    groups += [(f"split {name}", row) for name, row in report["by_split"].items() if row["questions"]]
    groups += [(f"kind {name}", row) for name, row in report["by_kind"].items() if row["questions"]]
    groups += [(f"lang {name}", row) for name, row in report["by_language"].items() if row["questions"]]
    for name, row in groups:
        table.add_row(name, str(row["questions"]), _percent(row["correct"]), str(row["passed"]), str(row["errors"]))
    out.print(table)
    out.print(f"{report['seconds']:.1f}s")
