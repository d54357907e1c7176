"""The diagnosis state machine (DESIGN §7): the stages of `evcli.stages`, in its order.

Every stage reads what it needs from the trace store and writes what it
produced back, so any stage can be run on its own (`evcli execute SESSION`), a
whole run is just the stages in order (`evcli ask`), and a replay is a new
session seeded with another session's upstream outputs. The order, and what
each stage reads and writes, is written down once, in `evcli.stages.STAGES`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, NoReturn

from pydantic import BaseModel

from evcli.agents.calls import (
    COMPLETED,
    INVALID_OUTPUT,
    RETRYABLE_FAILED,
    StageResult,
    StepCounter,
)
from evcli.agents.drafts import check_drafts, repair_context, session_entity, shown_again
from evcli.agents.engine import CHECK_CLAIMS, Engine, ToolCall, Turn
from evcli.agents.projection import AllowedClaim
from evcli.agents.roles import Models, build_engines
from evcli.contracts import (
    ROLES,
    AgentStep,
    GateResult,
    Mode,
    Query,
    RunRecord,
    SessionConfig,
    SessionDocument,
    Severity,
    StageOutput,
    StoredStage,
    ToolInvocation,
    Verdict,
)
from evcli.core.errors import BadInput, EvcliError
from evcli.core.time import now_iso
from evcli.gatekeeper.engine import gate
from evcli.gatekeeper.rules import RuleSet
from evcli.session_setup import (
    environment_overview,
    latest_gate,
    question_payload,
    question_scope,
    reviewed_reading,
    vocabulary,
)
from evcli.stages import stages_from
from evcli.store.db import TraceStore

__all__ = ["ROLES", "AskResult", "Pipeline", "StageFailed"]
Progress = Callable[[str], None]


class StageFailed(EvcliError):
    """A stage failed for good; the session is kept and marked failed."""


class GateSummary(BaseModel):
    status: str
    severity: Severity
    failed_rules: list[str]

    @classmethod
    def of(cls, result: GateResult) -> GateSummary:
        return cls(status=result.status, severity=result.severity, failed_rules=result.failed_rules)


class AnswerSummary(BaseModel):
    answer_summary: str
    user_facing_answer: str
    recommended_actions: list[Any]


class Usage(BaseModel):
    prompt_tokens: int
    completion_tokens: int
    model_calls: int


class AskResult(BaseModel):
    """A run's final document: what `ask --json` prints."""

    session_id: str
    question: str
    query: Query | None = None  # the question as code read it; None: a session stored before question scopes
    verdict: Verdict
    gate: GateSummary
    answer: AnswerSummary
    claims: list[AllowedClaim]
    hypotheses: list[Any]  # possibilities the answer may mention as unconfirmed, never facts
    missing_info: list[Any]
    fallback: str | None
    rounds: int
    models: dict[str, str]
    usage: Usage


@dataclass
class Pipeline:
    store: TraceStore
    rules: RuleSet
    models: Models = field(default_factory=Models)
    env_spec: dict[str, Any] = field(default_factory=dict)  # EnvironmentSpec.as_config() or a stored SessionConfig.env
    max_steps: int = 8
    progress: Progress = lambda message: None
    _engines: dict[str, Engine] | None = None
    _tools: Any = None
    drafts_checked: list[str] = field(default_factory=list)  # check_claims results of the running executor stage

    # --- wiring ------------------------------------------------------------

    def engine(self, role: str) -> Engine:
        if self._engines is None:
            self._engines = build_engines(self.models)
        return self._engines[role]

    def tools(self):
        if self._tools is None:
            from evcli.backends.spec import EnvironmentSpec
            from evcli.tools.context import build_environment

            self._tools = build_environment(spec=EnvironmentSpec.from_config(self.env_spec))
        return self._tools

    # --- sessions ----------------------------------------------------------

    def create_session(
        self,
        question: str,
        *,
        mode: Mode = "chat",
        aiops_alert: dict[str, Any] | None = None,
        continues: str | None = None,
    ) -> RunRecord:
        """A new running session for `question`; `continues` names the session it follows up
        (`ask --continue`), whose scope fills what the new question leaves unsaid."""
        environment = environment_overview(self.tools())
        redactor = self.tools().redactor  # the question and config are stored and shown to models: mask first
        question = redactor.mask_text(question)
        previous = self.store.load(continues) if continues else None
        scope = question_scope(
            self.tools().backend, question, environment, previous.run.config.scope if previous else None
        )
        environment.vocabulary = vocabulary(self.tools().backend, scope, environment)
        config = SessionConfig(
            models=self.models.as_config(),
            env=self.env_spec,
            task_scope=scope.task_scope,
            language=scope.language,
            scope=scope,
            environment=environment,
            max_steps=self.max_steps,
        )
        if previous is not None:
            config.continues = previous.run.session_id
        if aiops_alert is not None:
            config.aiops_alert = aiops_alert
        masked = SessionConfig.model_validate(redactor.mask(config.model_dump(mode="json")))
        run = self.store.create_session(question, mode=mode, config=masked)
        self.store.update_run(run.session_id, status="running", prompt_audit=_prompt_audit())
        self.progress(f"session {run.session_id} · {config.task_scope} · {config.language}")
        return run

    # --- stages --------------------------------------------------------------

    def plan(self, session_id: str) -> StageResult:
        document = self.store.load(session_id)
        payload = {
            **question_payload(self.store, document),
            "environment": document.run.config.environment.model_dump(mode="json"),
        }
        self.progress("planner …")
        from evcli.agents.planner import run_planner

        steps = self._steps(session_id, 1)
        result = run_planner(self.engine("planner"), payload, steps)
        if result.status == RETRYABLE_FAILED:
            self.progress(f"planner failed ({result.error}); retrying once")
            result = run_planner(self.engine("planner"), payload, steps)
        extra: dict[str, Any] = {}
        if result.status in (RETRYABLE_FAILED, INVALID_OUTPUT):  # the planner states no facts: the offline
            # planner's plan is as safe (a rejected key or model is a setup error the run stops on)
            from evcli.agents.offline import OfflineEngine

            self.progress(f"planner failed ({result.error}); using the offline planner")
            extra = {"fallback": "offline planner", "model_status": result.status, "model_error": result.error}
            result = run_planner(OfflineEngine(), payload, steps)
        review = reviewed_reading(document, (result.output or {}).get("reading"))
        if review is not None:  # the model's own reading of the question: what code kept of it, and why not the rest
            extra["reading"] = review.record()
        self._store_stage(session_id, "plan", 1, result, extra=extra)
        self._fail_unless(session_id, "planner", result, allow_invalid=False)
        self.progress(f"planner done · skill {(result.output or {}).get('selected_skill') or '-'}")
        return result

    def execute(self, session_id: str, *, round: int = 1, retry_context: dict[str, Any] | None = None) -> StageResult:
        from evcli.agents.executor import run_executor

        document = self.store.load(session_id)
        plan = document.latest_stage("plan")
        if plan is None or plan.output is None:
            raise BadInput(
                f"session {session_id} has no plan",
                hint=f"run `evcli plan` first, or `evcli replay {session_id} --from execute`",
            )
        environment = document.run.config.environment
        payload = {
            # the scope widened by what code kept of the Planner's own reading of the question
            **question_payload(self.store, document, reading=plan.output.get("reading")),
            # where the question's words occur: the offline executor searches them there (DESIGN §6);
            # what the backends serve (None: all), so it asks no tool that can only fail
            "environment": {
                "services": environment.services,
                "vocabulary": environment.vocabulary,
                "capabilities": environment.capabilities,
            },
            "plan": plan.output,
            "max_steps": self.max_steps,
            "retry_context": retry_context,
        }
        self.progress(f"executor round {round} …")
        run_calls = self._tool_runner(session_id, document, round, narrow=document.run.config.task_scope == "narrow")
        self.drafts_checked = []
        result = run_executor(
            self.engine("executor"), payload, self._steps(session_id, round), run_calls, max_steps=self.max_steps
        )
        checked = {"drafts_checked": self.drafts_checked} if self.drafts_checked else None
        self._store_stage(session_id, "execute", round, result, extra=checked)
        self._fail_unless(session_id, "executor", result, allow_invalid=True)
        if result.status == INVALID_OUTPUT:
            self.progress(f"executor output invalid ({result.error}); continuing as low confidence")
        return result

    def gate(self, session_id: str) -> GateResult:
        document = self.store.load(session_id)
        execute = document.latest_stage("execute")
        if execute is None:
            raise BadInput(
                f"session {session_id} has no executor output to gate", hint=f"run `evcli execute {session_id}` first"
            )
        result = gate(
            execute.output,
            document.invocations,
            self.rules,
            scope=document.run.config.scope,
            services=tuple(document.run.config.environment.services),
        )
        self.store.append_gate_result(session_id, result, round=execute.round)
        self.progress(
            f"gate {result.status}/{result.severity}"
            + (f" · {', '.join(result.failed_rules)}" if result.failed_rules else "")
        )
        return result

    def gate_with_repair(self, session_id: str) -> GateResult:
        """Gate; a model Executor whose first draft the gate REJECTs gets one repair round with each failed
        claim's rules (the trace keeps both drafts), and its new draft is gated; what still fails is REJECT."""
        result = self.gate(session_id)
        document = self.store.load(session_id)
        execute = document.latest_stage("execute")
        if result.severity != Severity.REJECT or execute is None or execute.round != 1 or self._offline("executor"):
            return result
        context = repair_context(execute.output, result, document.invocations)
        self.progress(f"repair round for {len(context['repair']) or 'the'} claim(s) the gate rejected")
        self.execute(session_id, round=2, retry_context=context)
        return self.gate(session_id)

    def _offline(self, role: str) -> bool:
        return self.models.for_role(role) == "offline"  # the offline engine writes the same draft again

    def verify(self, session_id: str) -> tuple[StageResult, Verdict]:
        """(verifier stage result, effective verdict capped by the gate)."""
        from evcli.agents.projection import verified_claims
        from evcli.agents.verifier import effective_verdict, failed_verification, run_verifier

        document = self.store.load(session_id)
        execute = document.latest_stage("execute")
        gate_result = latest_gate(document, execute.round if execute else None)
        if execute is None or gate_result is None:
            raise BadInput(f"session {session_id} has not been gated", hint=f"run `evcli gate {session_id}` first")
        round = execute.round
        if gate_result.severity == Severity.REJECT:
            # Claims that cite something false are not worth judging; the answer will be a fallback.
            result = StageResult(
                COMPLETED,
                output={
                    "verdict": Verdict.REJECT.value,
                    "groundedness_score": 0.0,
                    "critical_fact_count": 0,
                    "claim_checks": [],
                    "facts_checked": [],
                    "rationale": "gate reject: " + ", ".join(gate_result.failed_rules),
                },
            )
            self._store_stage(session_id, "verify", round, result, extra={"skipped": "gate reject"})
            self.progress("verifier skipped · gate reject")
            return result, Verdict.REJECT
        config = document.run.config
        payload = {
            "original_query": document.run.question,
            "language": config.language,
            "task_scope": config.task_scope,
            "gatekeeper": GateSummary.of(gate_result).model_dump(mode="json"),
            "verified_claims": [
                claim.model_dump(mode="json") for claim in verified_claims(execute.output, gate_result)
            ],
        }
        self.progress(f"verifier round {round} …")
        steps = self._steps(session_id, round)
        result = run_verifier(self.engine("verifier"), payload, steps)
        if result.status == RETRYABLE_FAILED:
            self.progress(f"verifier failed ({result.error}); retrying once")
            result = run_verifier(self.engine("verifier"), payload, steps)
        if not result.ok:  # fail closed without losing the run: LOW_CONFID, no claim confirmed
            self.progress(f"verifier failed ({result.error}); answering as not verified")
            result = replace(result, output=failed_verification(result.error))
        output = result.output or {}
        verdict = effective_verdict(output["verdict"], gate_result.severity)
        self._store_stage(session_id, "verify", round, result, extra={"effective_verdict": verdict})
        self.progress(f"verifier {output['verdict']} → effective {verdict}")
        return result, verdict

    def verify_with_evidence_retry(self, session_id: str) -> None:
        """Verify; a LOW_CONFID first round with critical gaps gets one more round of evidence."""
        from evcli.agents.projection import directly_supported, verified_claims
        from evcli.agents.verifier import critical_gaps

        result, verdict = self.verify(session_id)
        output = result.output or {}
        gaps = critical_gaps(output) if verdict == Verdict.LOW_CONFID else []
        document = self.store.load(session_id)
        execute = document.latest_stage("execute")
        if not gaps or execute is None or sum(s.stage == "verify" for s in document.stage_outputs) != 1:
            return  # one evidence retry a run (after a repair round too)
        gate_result = latest_gate(document, execute.round)
        kept = directly_supported(verified_claims(execute.output, gate_result), output) if gate_result else []
        flagged = {gap.get("claim_id") for gap in gaps}
        retry_context = {
            "verified_claims": [claim.model_dump(mode="json") for claim in kept],
            "gaps": gaps,
            # the claims the Verifier could not confirm, with the bindings they had: repair or drop them
            "flagged_claims": [
                claim
                for claim in (execute.output or {}).get("claims") or []
                if isinstance(claim, dict) and claim.get("claim_id") in flagged
            ],
            "completed_queries": [
                {"tool_name": i.tool_name, "input_params": i.input_params} for i in document.invocations
            ],
            # what those queries returned, as the model was shown it: citable again by invocation id
            "evidence": [shown_again(invocation) for invocation in document.invocations],
        }
        self.progress(f"evidence retry for {len(gaps)} critical gap(s)")
        self.execute(session_id, round=execute.round + 1, retry_context=retry_context)
        self.gate(session_id)
        self.verify(session_id)

    def compose(self, session_id: str) -> AskResult:
        """Write the answer; returns the run's AskResult (its JSON is what `ask --json` prints)."""
        from evcli.agents.composer import answer_material, compose_guarded, scope_statement, with_statement
        from evcli.agents.fallback import composer_fallback_answer, gate_reject_answer, unverified_answer
        from evcli.agents.projection import allowed_claims, verified_claims
        from evcli.agents.verifier import effective_verdict

        document = self.store.load(session_id)
        execute, verify = document.latest_stage("execute"), document.latest_stage("verify")
        gate_result = latest_gate(document, execute.round) if execute else None
        if verify is None or verify.output is None or execute is None or gate_result is None:
            raise BadInput(f"session {session_id} has not been verified", hint=f"run `evcli verify {session_id}` first")
        verdict = effective_verdict(verify.output["verdict"], gate_result.severity)
        language = document.run.config.language
        executor_output = execute.output if isinstance(execute.output, dict) else {}
        claims = allowed_claims(executor_output, gate_result, verify.output)
        hypotheses = list(executor_output.get("hypotheses") or []) if verdict != Verdict.REJECT else []
        missing = list(executor_output.get("missing_info") or [])
        actions = list(executor_output.get("recommended_actions") or []) if verdict != Verdict.REJECT else []

        def record(result: StageResult, extra: dict[str, Any]) -> None:
            self._store_stage(session_id, "compose", execute.round, result, extra=extra)

        answer, fallback = None, None
        if gate_result.severity == Severity.REJECT:
            answer, fallback = gate_reject_answer(language, gate_result, document.invocations), "gate_reject"
        elif verify.output.get("verifier_failed"):
            unverified = verified_claims(executor_output, gate_result)
            answer, fallback = unverified_answer(language, unverified, missing), "verifier_failed"
        else:
            payload = {
                "original_query": document.run.question,
                "language": language,
                "verdict": verdict.value,
                "allowed_claims": [claim.model_dump(mode="json") for claim in claims],
                "allowed_hypotheses": hypotheses,
                "missing_info": missing,
                "recommended_actions": actions,
                "rationale": verify.output.get("rationale", ""),
            }
            answer = compose_guarded(
                self.engine("composer"),
                payload,
                self._steps(session_id, execute.round),
                claims=claims,
                material=answer_material(document.run.question, claims, hypotheses, missing, actions),
                phrases=self.rules.overstatement_phrases,
                progress=self.progress,
                record=lambda result, violations: record(result, {"postguard": violations}),
                statement=scope_statement(language, gate_result),
                is_entity=session_entity(document),
            )
            if answer is None:
                answer = composer_fallback_answer(language, verdict, claims, missing, actions, hypotheses)
                fallback = "composer"
        if fallback:
            answer = with_statement(answer, scope_statement(language, gate_result))
            record(StageResult(COMPLETED, output=answer), {"fallback": fallback})
        self.progress("composer done" + (f" · fallback ({fallback})" if fallback else ""))
        result = self._ask_result(
            session_id,
            verdict,
            gate_result,
            answer,
            claims,
            missing,
            fallback,
            hypotheses if fallback != "gate_reject" else [],
        )
        self.store.update_run(
            session_id,
            status="completed",
            verdict=verdict,
            self_evaluation=self._self_evaluation(session_id, verdict, gate_result, answer, fallback),
        )
        return result

    # --- the whole chain -------------------------------------------------------

    def ask(
        self,
        question: str,
        *,
        mode: Mode = "chat",
        aiops_alert: dict[str, Any] | None = None,
        continues: str | None = None,
        on_session: Callable[[str], None] | None = None,
    ) -> AskResult:
        """The whole chain for `question`; `on_session` is told the new session's id before the chain runs
        (`evcli serve` records it with the alert, so a diagnosis that finished is never run again)."""
        self.models.check()  # a missing key or model server fails before a session is created
        run = self.create_session(question, mode=mode, aiops_alert=aiops_alert, continues=continues)
        if on_session is not None:
            on_session(run.session_id)
        return self.run_from(run.session_id, "plan")

    def run_from(self, session_id: str, stage: str, *, reused: frozenset[str] = frozenset()) -> AskResult:
        """Run `stage` and every later one (one evidence retry after verify); returns the AskResult.

        `reused` names the stages whose stored outputs a replay took over: a stage whose chain run would
        run one of them again (the evidence retry executes) runs once, so a replay rests on that evidence.
        """
        result = None
        for step in stages_from(stage):
            result = getattr(self, step.name if reused & set(step.reruns) else step.run)(session_id)
        assert isinstance(result, AskResult)  # compose, the table's last stage, returns it
        return result

    # --- internals ----------------------------------------------------------------

    def _steps(self, session_id: str, round: int) -> StepCounter:
        existing = [s for s in self.store.load(session_id).steps if s.round == round]
        counter = StepCounter(lambda step: self.store.record_step(session_id, self._masked(step)), round)
        counter.index = max((s.step_index for s in existing), default=0)
        return counter

    def _masked(self, step: AgentStep) -> AgentStep:
        """A step with secrets in the model's reply and the error masked (both are stored and shown by trace)."""
        redactor = self.tools().redactor
        return step.model_copy(
            update={
                "model_output_summary": redactor.mask_text(step.model_output_summary),
                "error": redactor.mask_text(step.error) if step.error else step.error,
            }
        )

    def _tool_runner(
        self, session_id: str, document: SessionDocument, round: int, *, narrow: bool
    ) -> Callable[[list[ToolCall]], list[Turn]]:
        """The calls of one Executor reply → their turns, in the order asked: evidence calls run side by side
        (evcli.tools.batch), each recorded in ask order; a check_claims call sees every call asked before it."""
        from evcli.tools.batch import CallBatch, Settled
        from evcli.tools.runner import stored_guards
        from evcli.tools.view import model_view

        invocations = list(document.invocations)  # the session's, then every call recorded: what the guards read
        tools = self.tools()

        def record(invocation: ToolInvocation) -> ToolInvocation:
            in_round = invocation.model_copy(update={"round": round})
            return self.store.record_invocation(session_id, in_round, check=stored_guards(invocation, tools.settings))

        def check_claims(call: ToolCall) -> Turn:
            view = check_drafts(document, invocations, call.arguments, self.rules)
            self.drafts_checked.append(view)
            self.progress(f"  {CHECK_CLAIMS} → {view.splitlines()[0]}")
            return Turn(call=call, view=view)

        def turn(call: ToolCall, settled: Settled) -> Turn:
            stored = settled.invocation
            if stored is None:
                self.progress(f"  tool {call.name} refused: {settled.refusal}")
                return Turn(call=call, view=f'<refused tool="{call.name}">{settled.refusal}</refused>')
            status = stored.retrieval_details.evidence_status if stored.retrieval_details else "?"
            self.progress(f"  #{stored.invocation_id} {call.name} → {status} ({stored.duration_ms:.0f} ms)")
            return Turn(call=call, view=model_view(stored), invocation=stored)

        def run_calls(calls: list[ToolCall]) -> list[Turn]:
            turns: list[Turn] = []
            asked: list[ToolCall] = []
            with CallBatch(tools, invocations, record, narrow=narrow) as batch:
                for call in calls:
                    if call.name == CHECK_CLAIMS:  # the Gatekeeper on the drafts sees every call asked before it
                        turns += map(turn, asked, batch.settle())
                        asked.clear()
                        turns.append(check_claims(call))
                    else:
                        batch.ask(call.name, call.arguments)
                        asked.append(call)
                turns += map(turn, asked, batch.settle())
            return turns

        return run_calls

    def _store_stage(
        self,
        session_id: str,
        stage: StoredStage,
        round: int,
        result: StageResult,
        *,
        extra: dict[str, Any] | None = None,
    ) -> None:
        mask = self.tools().redactor.mask_text  # a model's reply, quoted in an error too, may hold a secret
        parse_status: dict[str, Any] = {"status": result.status}
        if result.error:
            parse_status["detail"] = mask(result.error)
        if result.notes:
            parse_status["notes"] = result.notes
        parse_status.update(extra or {})
        if parse_status.get("model_error"):
            parse_status["model_error"] = mask(parse_status["model_error"])
        self.store.record_stage_output(
            session_id,
            StageOutput(
                stage=stage,
                round=round,
                status=result.status,
                output=result.output,
                parse_status=parse_status,
                raw_text=mask(result.raw_text) if result.raw_text else result.raw_text,
                created_at=now_iso(),
            ),
        )

    def _fail_unless(self, session_id: str, role: str, result: StageResult, *, allow_invalid: bool) -> None:
        if result.ok or (allow_invalid and result.status == INVALID_OUTPUT):
            return
        self._fail(session_id, f"the {role} failed: {result.error}")

    def _fail(self, session_id: str, message: str) -> NoReturn:
        self.store.update_run(session_id, status="failed")
        raise StageFailed(message, hint=f"the partial session {session_id} is kept; see `evcli trace {session_id}`")

    def _ask_result(
        self,
        session_id: str,
        verdict: Verdict,
        gate_result: GateResult,
        answer: dict[str, Any],
        claims: list[AllowedClaim],
        missing: list[Any],
        fallback: str | None,
        hypotheses: list[Any],
    ) -> AskResult:
        document = self.store.load(session_id)
        return AskResult(
            session_id=session_id,
            question=document.run.question,
            query=document.run.config.scope,
            verdict=verdict,
            gate=GateSummary.of(gate_result),
            answer=AnswerSummary(
                answer_summary=answer["answer_summary"],
                user_facing_answer=answer["user_facing_answer"],
                recommended_actions=answer.get("recommended_actions", []),
            ),
            claims=claims,
            hypotheses=hypotheses,
            missing_info=missing,
            fallback=fallback,
            rounds=max((s.round for s in document.stage_outputs if s.stage == "execute"), default=0),
            models=document.run.config.models,
            usage=Usage(
                prompt_tokens=sum(s.prompt_tokens for s in document.steps),
                completion_tokens=sum(s.completion_tokens for s in document.steps),
                model_calls=len(document.steps),
            ),
        )

    def _self_evaluation(
        self, session_id: str, verdict: Verdict, gate_result: GateResult, answer: dict[str, Any], fallback: str | None
    ) -> dict[str, Any]:
        document = self.store.load(session_id)
        verify = document.latest_stage("verify")
        execute = document.latest_stage("execute")
        self_evaluation = dict(document.run.self_evaluation)
        self_evaluation["verifier_evaluation"] = {
            **((verify.output if verify else None) or {}),
            "effective_verdict": verdict,
            "round": execute.round if execute else 0,
            "traceability_version": "v1",
            "executor_output_parse_status": execute.parse_status if execute else {},
            "gatekeeper_result": {
                "status": gate_result.status,
                "severity": gate_result.severity,
                "rule_set_version": gate_result.rule_set_version,
                "failed_rules": gate_result.failed_rules,
            },
            "composer_output": answer,
            "fallback": fallback,
        }
        return self_evaluation

    # --- replay ---------------------------------------------------------------------

    def replay(self, source: SessionDocument, from_stage: str) -> AskResult:
        """A new session reusing the stored outputs upstream of `from_stage`; returns its AskResult.

        `source` is a stored session or an exported one; it is never changed.
        """
        from evcli.replay import seeded

        document, reused = seeded(source, from_stage, self.models, _prompt_audit())
        self.store.import_document(document)
        self.progress(f"replay of {source.run.session_id} from {from_stage} as {document.run.session_id}")
        return self.run_from(document.run.session_id, from_stage, reused=reused)


def _prompt_audit() -> dict[str, Any]:
    from evcli.agents.prompts import load_prompt

    return {"version": "prompts-v1", "prompts": [load_prompt(role).audit() for role in ROLES]}
