"""`evcli ask`, and the chain one stage at a time: plan, execute, verify, compose, replay."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from evcli.cli._common import (
    DbOption,
    JsonOption,
    environment_options,
    err,
    handles_errors,
    open_store,
    out,
    print_json,
    required_text,
    safe,
)
from evcli.cli.report import AnswerFormat, AnswerFormatOption, check_answer_format, print_answer
from evcli.core.errors import EXIT_LOW_CONFID, EXIT_OK, EXIT_REJECT, BadInput
from evcli.stages import REPLAYABLE

if TYPE_CHECKING:
    from evcli.backends.spec import EnvironmentSpec
    from evcli.config import Loaded
    from evcli.pipeline import AskResult

ModelOption = Annotated[
    str | None, typer.Option("--model", help="`offline` (default) or a litellm model string for every role.")
]
RoleModel = Annotated[str | None, typer.Option(help="Model for this role only.")]
ApiBaseOption = Annotated[str | None, typer.Option("--api-base", help="OpenAI-compatible server URL for the model(s).")]
ModelTimeoutOption = Annotated[
    float | None,
    typer.Option("--model-timeout", min=0.1, help="Seconds one model call may take (the connection is then closed)."),
]
MaxTokensOption = Annotated[
    int | None, typer.Option("--max-tokens", min=1, help="Most tokens one model reply may have.")
]
RulesOption = Annotated[
    Path | None,
    typer.Option("--rules", dir_okay=False, help="Gatekeeper rules file (default: the shipped rules.toml)."),
]
MaxStepsOption = Annotated[int, typer.Option("--max-steps", min=2, max=30, help="Executor tool-calling steps.")]
ContinueOption = Annotated[
    bool,
    typer.Option(
        "--continue",
        help="Follow up a session: `ask --continue [SESSION] QUESTION` (SESSION: an id, a unique prefix or `last`, "
        "the default). Its scope fills what the question leaves unsaid, in its environment unless --env or a "
        "backend flag names another.",
    ),
]
ReportOption = Annotated[
    Path | None,
    typer.Option("--report", dir_okay=False, help="Also write the session's report here (.md: Markdown, else HTML)."),
]


class FailOn(StrEnum):
    low_confid = "low_confid"
    reject = "reject"


FailOnOption = Annotated[
    FailOn | None, typer.Option("--fail-on", help="Exit 3/4 when the verdict is at least low_confid / reject.")
]
VerboseOption = Annotated[
    bool, typer.Option("--verbose", "-v", help="Print every stage and tool call on stderr as it happens.")
]
QuietOption = Annotated[
    bool, typer.Option("--quiet", "-q", help="Print only the answer: no progress, no evidence list.")
]


def _models(settings, model, planner_model, executor_model, verifier_model, composer_model, api_base, stored=None):
    """The models of the configuration (`settings`, an `evcli.config.Loaded`: file, profile, EVCLI_*
    variables) with the model flags on top; for a stored session (`stored`), its models with the flags on top."""
    roles = {"planner": planner_model, "executor": executor_model, "verifier": verifier_model}
    roles["composer"] = composer_model
    if stored is None:
        from evcli.config import load

        flags: dict = {"models": {role: {"model": value} for role, value in roles.items() if value}}
        flags["models"] |= {key: value for key, value in (("default", model), ("api_base", api_base)) if value}
        return (settings or load()).with_flags(flags).settings.models.pipeline_models()
    from evcli.agents.roles import Models

    models = Models.from_config(stored)
    if model:
        models.default, models.per_role = model, {}
    models.per_role.update({role: value for role, value in roles.items() if value})
    if api_base:
        models.api_base = api_base
    return models


def _pipeline(db, rules, models, env_spec, max_steps, *, must_exist=False, store=None, progress=None):
    from evcli.cli._progress import _line, _silent
    from evcli.gatekeeper.rules import load_rules
    from evcli.pipeline import Pipeline

    if progress is None:  # the stage commands: one line per stage on a terminal
        progress = _line if err.is_terminal else _silent
    return Pipeline(
        store=store or open_store(db, must_exist=must_exist),
        rules=load_rules(rules),
        models=models,
        env_spec=env_spec,
        max_steps=max_steps,
        progress=progress,
    )


def _exit_code(verdict: str, fail_on: str | None) -> int:
    if fail_on not in (None, "low_confid", "reject"):
        raise BadInput("--fail-on must be low_confid or reject")
    if fail_on == "reject" and verdict == "REJECT":
        return EXIT_REJECT
    if fail_on == "low_confid" and verdict in ("LOW_CONFID", "REJECT"):
        return EXIT_REJECT if verdict == "REJECT" else EXIT_LOW_CONFID
    return EXIT_OK


@handles_errors
@environment_options(runbooks=True)
def ask_command(
    question: Annotated[
        str,
        typer.Argument(
            metavar="QUESTION",
            help="The question, in English or Chinese; with --continue and FOLLOW_UP: the session to follow up.",
        ),
    ],
    follow_up: Annotated[
        str | None,
        typer.Argument(
            metavar="FOLLOW_UP",
            help="Only with --continue: the follow-up question, after the session it continues"
            " (`ask --continue SESSION FOLLOW_UP`); `ask --continue QUESTION` follows up the last session.",
        ),
    ] = None,
    environment: EnvironmentSpec = None,  # type: ignore[assignment]  # replaced by the environment options
    model: ModelOption = None,
    planner_model: RoleModel = None,
    executor_model: RoleModel = None,
    verifier_model: RoleModel = None,
    composer_model: RoleModel = None,
    api_base: ApiBaseOption = None,
    model_timeout: ModelTimeoutOption = None,
    max_tokens: MaxTokensOption = None,
    rules: RulesOption = None,
    max_steps: MaxStepsOption = 8,
    fail_on: FailOnOption = None,
    continue_session: ContinueOption = False,
    report: ReportOption = None,
    answer_format: AnswerFormatOption = AnswerFormat.text,
    verbose: VerboseOption = False,
    quiet: QuietOption = False,
    json_output: JsonOption = False,
    db: DbOption = None,
    settings: Loaded = None,  # type: ignore[assignment]  # filled by the environment options
) -> None:
    """Run the whole chain and print an answer whose every fact is cited."""
    _exit_code("PASS", fail_on)  # validate the option before doing any work
    check_answer_format(answer_format, json_output)
    session_reference = None
    if follow_up is not None:
        if not continue_session:
            raise BadInput(
                "ask takes one question", hint="quote it; to follow up a session: ask --continue SESSION FOLLOW_UP"
            )
        session_reference, question = question, follow_up
    elif continue_session:
        session_reference = "last"
    required_text(question, "the question")
    models = _models(settings, model, planner_model, executor_model, verifier_model, composer_model, api_base)
    models.timeout, models.max_tokens = model_timeout or models.timeout, max_tokens or models.max_tokens
    models.check()  # a missing key or model server: before the store, the environment or litellm is opened
    store = open_store(db, must_exist=session_reference is not None)
    continues = None
    env_config = environment.as_config()
    if session_reference is not None:
        continued = store.load(store.resolve(session_reference))
        continues = continued.run.session_id
        if environment == type(environment).from_config(None):  # no environment named: keep the continued one
            env_config = continued.run.config.env
    from evcli.cli._progress import stage_progress

    with stage_progress(verbose=verbose, quiet=quiet) as progress:
        pipeline = _pipeline(db, rules, models, env_config, max_steps, store=store, progress=progress)
        result = pipeline.ask(question, continues=continues)
    if answer_format is AnswerFormat.text:
        render_result(result, json_output, quiet=quiet)
    else:
        print_answer(store.load(result.session_id), answer_format)
    if report is not None:
        from evcli.cli.report import format_of, write_report

        write_report(store.load(result.session_id), format_of(report), report)
    raise typer.Exit(_exit_code(result.verdict, fail_on))


def render_result(result: AskResult, json_output: bool, *, quiet: bool = False) -> None:
    if json_output:
        print_json(result.model_dump(mode="json"))
        return
    out.print(safe(result.answer.user_facing_answer))
    if quiet:
        return
    if result.claims:
        out.print("\n[bold]Evidence[/]")
        for claim in result.claims:
            for evidence in claim.evidence:
                out.print(
                    f"{safe('[' + str(claim.citation) + ']')} {safe(evidence.tool_name)} #{safe(evidence.source_invocation_id)} "
                    f"{safe(evidence.raw_path)}: {safe(evidence.text or '')}"
                )
    colour = {"PASS": "green", "LOW_CONFID": "yellow", "REJECT": "red"}[result.verdict]
    gate_info = result.gate
    out.print(
        f"\nverdict [{colour}]{result.verdict}[/] · gate {gate_info.status}/{gate_info.severity}"
        + (f" ({safe(', '.join(gate_info.failed_rules))})" if gate_info.failed_rules else "")
        + (f" · fallback: {safe(result.fallback)}" if result.fallback else "")
        + f" · session {safe(result.session_id)}"
    )


def _stored_pipeline(session_id, db, rules, model, api_base, max_steps=None):
    """The pipeline of a stored session named by its id, a unique prefix or `last`, and its document."""
    store = open_store(db, must_exist=True)
    document = store.load(store.resolve(session_id))
    config = document.run.config
    models = _models(None, model, None, None, None, None, api_base, stored=config)
    pipeline = _pipeline(db, rules, models, config.env, max_steps or config.max_steps, store=store)
    return pipeline, document


@handles_errors
@environment_options(runbooks=True)
def plan_command(
    question: Annotated[str, typer.Argument(help="The question.")],
    environment: EnvironmentSpec,
    model: ModelOption = None,
    api_base: ApiBaseOption = None,
    json_output: JsonOption = False,
    db: DbOption = None,
    settings: Loaded = None,  # type: ignore[assignment]  # filled by the environment options
) -> None:
    """Create a session and run the Planner only; prints the session id."""
    required_text(question, "the question")
    models = _models(settings, model, None, None, None, None, api_base)
    pipeline = _pipeline(db, None, models, environment.as_config(), 8)
    run = pipeline.create_session(question)
    result = pipeline.plan(run.session_id)
    if json_output:
        print_json({"session_id": run.session_id, "plan": result.output})
    else:
        out.print(run.session_id)
        for index, step in enumerate(result.output.get("plan") or [], start=1):
            err.print(f"{index}. {safe(step)}")


def _stage_command(stage: str):
    @handles_errors
    def command(
        session_id: Annotated[str, typer.Argument(help="Stored session: its id, a unique prefix or `last`.")],
        model: ModelOption = None,
        api_base: ApiBaseOption = None,
        rules: RulesOption = None,
        json_output: JsonOption = False,
        db: DbOption = None,
    ) -> None:
        pipeline, document = _stored_pipeline(session_id, db, rules, model, api_base)
        session_id = document.run.session_id
        if stage == "execute":
            if document.latest_stage("execute") is not None:
                raise BadInput(
                    f"session {session_id} was already executed", hint=f"use `evcli replay {session_id} --from execute`"
                )
            result = pipeline.execute(session_id)
            data = {"session_id": session_id, "status": result.status, "output": result.output}
        elif stage == "verify":
            result, verdict = pipeline.verify(session_id)
            data = {
                "session_id": session_id,
                "status": result.status,
                "effective_verdict": verdict,
                "output": result.output,
            }
        else:
            render_result(pipeline.compose(session_id), json_output)
            return
        if json_output:
            print_json(data)
        else:
            from evcli.cli._stages import render_stage

            render_stage(stage, data)

    command.__doc__ = {
        "execute": "Run the Executor on a planned session (tools are called and recorded).",
        "verify": "Run the Verifier on a gated session; prints the effective verdict.",
        "compose": "Run the Composer on a verified session and print the answer.",
    }[stage]
    return command


execute_command = _stage_command("execute")
verify_command = _stage_command("verify")
compose_command = _stage_command("compose")


@handles_errors
def replay_command(
    source: Annotated[str, typer.Argument(help="A stored session id or an exported session JSON file.")],
    from_stage: Annotated[str, typer.Option("--from", help=f"{', '.join(REPLAYABLE[:-1])} or {REPLAYABLE[-1]}.")],
    model: ModelOption = None,
    api_base: ApiBaseOption = None,
    rules: RulesOption = None,
    json_output: JsonOption = False,
    db: DbOption = None,
) -> None:
    """A new session that reuses the stored upstream outputs and re-runs the later stages."""
    from evcli.cli._common import load_source

    document, store = load_source(source, db)  # store is None for an exported file
    config = document.run.config
    models = _models(None, model, None, None, None, None, api_base, stored=config)
    pipeline = _pipeline(db, rules, models, config.env, config.max_steps, store=store)
    render_result(pipeline.replay(document, from_stage), json_output)
