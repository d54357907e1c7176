"""The JSON contracts every stage speaks.

Field names follow the specification (seeds) exactly, so recorded sessions
stay comparable with the system they describe. Models are permissive about
extra keys where the producer is a model (we must be able to *see* a forbidden
field to reject it), strict where the producer is our own code.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

ANSWER_VERSION = "executor_evidence_v2"
SESSION_FORMAT = "evcli-session/1"
NO_EVIDENCE_PATH = "$.no_evidence"

# A session id names a file (`export --all -o DIR` writes DIR/<id>.json), so it
# can never hold a path separator, start with a dot or a dash, or be long:
# ASCII letters, digits, '.', '_' and '-', starting with a letter or a digit,
# 1 to 128 characters. Generated ids (20250101T093000-1a2b3c) and the shipped
# sample ids (sample-narrow-payment-highcpu) match.
SESSION_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$"
SESSION_ID_RULE = "ASCII letters, digits, '.', '_' or '-', starting with a letter or digit, at most 128 characters"
SessionId = Annotated[str, Field(pattern=SESSION_ID_PATTERN)]


def is_session_id(value: str) -> bool:
    return re.fullmatch(SESSION_ID_PATTERN, value) is not None

# Which array of a tool's output a raw_path may name (one item of it).
EVIDENCE_ARRAYS: dict[str, str] = {
    "query_metrics": "alerts|series",
    "query_logs": "logs",
    "lookup_knowledge": "evidence_blocks",
}

ClaimType = str  # observation, negative_observation, symptom, root_cause, ...
EvidenceStatus = Literal["supported", "no_evidence", "deduped", "failed"]
Severity = Literal["none", "low_confid", "reject"]
RuleSeverity = Literal["warning", "low_confid", "reject"]


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class _Closed(BaseModel):
    model_config = ConfigDict(extra="forbid")


# --- Planner -----------------------------------------------------------------


class PlannerPlan(_Open):
    selected_skill: str | None = None
    selection_reason: str = ""
    plan: list[str] = Field(default_factory=list)
    reasoning: str = ""


# --- Executor ----------------------------------------------------------------


class EvidenceBinding(_Open):
    source_type: str = "tool_trace"
    source_id: str = ""
    tool_name: str | None = None
    source_invocation_id: int | None = None
    raw_path: str | None = None
    evidence_excerpt: str | None = None


class Claim(_Open):
    claim_id: str
    claim_type: ClaimType
    claim_text: str
    support_level: str = "direct"
    evidence_bindings: list[EvidenceBinding] = Field(default_factory=list)


class ExecutorEvidenceV2(_Open):
    answer_version: str = ANSWER_VERSION
    claims: list[Claim] = Field(default_factory=list)
    hypotheses: list[Any] = Field(default_factory=list)
    recommended_actions: list[Any] = Field(default_factory=list)
    missing_info: list[Any] = Field(default_factory=list)


FORBIDDEN_EXECUTOR_FIELDS = ("diagnosis_summary", "user_facing_answer", "source_invocation_ids")


# --- Tool invocations --------------------------------------------------------


class EvidenceRef(_Closed):
    raw_path: str
    text: str


class RetrievalDetails(_Open):
    evidence_status: EvidenceStatus = "supported"
    # None means "recorded before evidence refs existed"; [] means "no refs" (e.g. failed).
    evidence_refs: list[EvidenceRef] | None = None
    service: str | None = None
    keywords: list[str] = Field(default_factory=list)
    window: str | None = None
    limit: int | None = None
    truncated: bool = False


class ToolInvocation(_Closed):
    """One recorded tool call. `invocation_id` is 1, 2, 3, ... within a session."""

    invocation_id: int
    round: int = 1
    tool_name: str
    input_params: dict[str, Any] = Field(default_factory=dict)
    output: dict[str, Any] = Field(default_factory=dict)
    output_preview: str = ""
    retrieval_details: RetrievalDetails | None = None
    relevance_level: str | None = None
    dedup_reason: str | None = None
    duration_ms: float = 0.0
    success: bool = True
    error_message: str | None = None
    created_at: str = ""


# --- Gatekeeper --------------------------------------------------------------


class RuleMeta(_Closed):
    id: str
    description: str
    enabled: bool
    default_severity: RuleSeverity


class CheckedBinding(_Closed):
    claim_id: str
    binding_index: int
    tool_name: str | None
    source_invocation_id: int | None
    raw_path: str | None
    evidence_excerpt: str | None
    matched_text: str | None
    match: Literal["exact", "near", "none", "skipped"]
    similarity: float
    backfilled: bool = False
    status: Literal["pass", "fail"]
    failed_rules: list[str] = Field(default_factory=list)


class Finding(_Closed):
    """One rule outcome worth reporting: an error (failed rule) or a warning."""

    rule: str
    severity: RuleSeverity
    message: str
    claim_id: str | None = None
    binding_index: int | None = None


class GateResult(_Closed):
    status: Literal["pass", "fail"]
    severity: Severity
    rule_set_version: str
    rules_hash: str
    rules: list[RuleMeta]
    checked_bindings: list[CheckedBinding]
    failed_rules: list[str]
    warnings: list[Finding]
    errors: list[Finding]


# --- Verifier / Composer -----------------------------------------------------


class VerifierOutput(_Open):
    verdict: Literal["PASS", "LOW_CONFID", "REJECT"]
    groundedness_score: float = 0.0
    critical_fact_count: int = 0
    claim_checks: list[Any] = Field(default_factory=list)
    facts_checked: list[Any] = Field(default_factory=list)
    rationale: str = ""


class RecommendedAction(_Open):
    action_text: str
    reason: str = ""


class ComposerOutput(_Open):
    answer_summary: str
    recommended_actions: list[RecommendedAction] = Field(default_factory=list)
    user_facing_answer: str


# --- The exported session document ----------------------------------------------


class RunRecord(_Closed):
    """The `diagnosis_run` row."""

    session_id: SessionId
    question: str = ""
    mode: Literal["chat", "aiops"] = "chat"
    status: str = "created"
    verdict: str | None = None
    config: dict[str, Any] = Field(default_factory=dict)
    prompt_audit: dict[str, Any] = Field(default_factory=dict)
    self_evaluation: dict[str, Any] = Field(default_factory=dict)
    # Free-form notes kept with the session, e.g. a sample's expected gate outcome.
    annotations: dict[str, Any] = Field(default_factory=dict)
    created_at: str = ""
    updated_at: str = ""


class AgentStep(_Closed):
    agent: str
    round: int = 1
    step_index: int
    model: str | None = None
    model_input_summary: str = ""
    model_output_summary: str = ""
    has_tool_call: bool = False
    duration_ms: float = 0.0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    status: str = "completed"
    error: str | None = None
    created_at: str = ""


class StageOutput(_Closed):
    """What one stage produced in one round: plan, execute, verify or compose."""

    stage: Literal["plan", "execute", "verify", "compose"]
    round: int = 1
    status: str = "COMPLETED"
    output: dict[str, Any] | None = None
    parse_status: dict[str, Any] = Field(default_factory=dict)
    raw_text: str | None = None
    created_at: str = ""


class StoredGateResult(_Closed):
    seq: int
    round: int = 1
    created_at: str = ""
    result: GateResult


class SessionDocument(_Closed):
    format: Literal["evcli-session/1"] = SESSION_FORMAT
    run: RunRecord
    steps: list[AgentStep] = Field(default_factory=list)
    invocations: list[ToolInvocation] = Field(default_factory=list)
    stage_outputs: list[StageOutput] = Field(default_factory=list)
    gate_results: list[StoredGateResult] = Field(default_factory=list)

    def latest_stage(self, stage: str) -> StageOutput | None:
        """The newest output of a stage (highest round, last written)."""
        latest = None
        for output in self.stage_outputs:
            if output.stage == stage and (latest is None or output.round >= latest.round):
                latest = output
        return latest


def json_schemas() -> dict[str, dict[str, Any]]:
    """JSON Schema of every public contract, keyed by contract name."""
    models = {
        "planner_plan": PlannerPlan,
        "executor_evidence_v2": ExecutorEvidenceV2,
        "tool_invocation": ToolInvocation,
        "gate_result": GateResult,
        "verifier_output": VerifierOutput,
        "composer_output": ComposerOutput,
        "session_document": SessionDocument,
    }
    return {name: model.model_json_schema() for name, model in models.items()}
