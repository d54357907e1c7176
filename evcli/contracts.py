"""The JSON contracts every stage speaks.

Field names follow the specification (seeds) exactly, so recorded sessions
stay comparable with the system they describe. Models are permissive about
extra keys where the producer is a model (we must be able to *see* a forbidden
field to reject it), strict where the producer is our own code.
"""

from __future__ import annotations

import re
from enum import StrEnum
from functools import cache
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    SerializerFunctionWrapHandler,
    ValidatorFunctionWrapHandler,
    model_serializer,
    model_validator,
)

ANSWER_VERSION = "executor_evidence_v2"
SESSION_FORMAT: Literal["evcli-session/1"] = "evcli-session/1"
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


ClaimType = str  # observation, negative_observation, symptom, root_cause, ...
EvidenceStatus = Literal["supported", "no_evidence", "deduped", "failed"]
RuleSeverity = Literal["warning", "low_confid", "reject"]


ROLES = ("planner", "executor", "verifier", "composer")


class _Ordered(StrEnum):
    """A string enum ordered by declaration (best first), not alphabetically; compares with its values too."""

    def _rank(self, other: object) -> tuple[int, int] | None:
        """(rank of self, rank of other); None for a non-string. Any other string is an error, never compared as text."""
        if not isinstance(other, str):
            return None
        members = list(type(self))
        if other not in [member.value for member in members]:
            raise TypeError(f"cannot order {type(self).__name__} {self.value!r} against {other!r}")
        return members.index(self), members.index(type(self)(other))

    def __lt__(self, other: object) -> bool:
        ranks = self._rank(other)
        return NotImplemented if ranks is None else ranks[0] < ranks[1]

    def __le__(self, other: object) -> bool:
        ranks = self._rank(other)
        return NotImplemented if ranks is None else ranks[0] <= ranks[1]

    def __gt__(self, other: object) -> bool:
        ranks = self._rank(other)
        return NotImplemented if ranks is None else ranks[0] > ranks[1]

    def __ge__(self, other: object) -> bool:
        ranks = self._rank(other)
        return NotImplemented if ranks is None else ranks[0] >= ranks[1]


class Verdict(_Ordered):
    """The Verifier's judgement; the worse of two verdicts is their max()."""

    PASS = "PASS"
    LOW_CONFID = "LOW_CONFID"
    REJECT = "REJECT"


class Severity(_Ordered):
    """A gate outcome; the gate's severity is the max() of its failed rules' severities."""

    NONE = "none"
    LOW_CONFID = "low_confid"
    REJECT = "reject"

    @property
    def ceiling(self) -> Verdict:
        """The best verdict a run gated with this severity may reach."""
        return {Severity.NONE: Verdict.PASS, Severity.LOW_CONFID: Verdict.LOW_CONFID, Severity.REJECT: Verdict.REJECT}[
            self
        ]


Mode = Literal["chat", "aiops"]
# The stages that store a StageOutput (evcli.stages.STAGES whose writes hold "stage_outputs"; a test keeps them in step).
StoredStage = Literal["plan", "execute", "verify", "compose"]


# defer_build: a model's validator is built on its first use, not at import, so a command pays
# only for the models it touches (`evcli gate` never builds the planner's or composer's).
class _Open(BaseModel):
    model_config = ConfigDict(extra="allow", defer_build=True)


class _Closed(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)


# --- Planner -----------------------------------------------------------------


class PlannerPlan(_Open):
    selected_skill: str | None = None
    selection_reason: str = ""
    plan: list[str] = Field(default_factory=list)
    reasoning: str = ""
    # the model's own reading of the question (Query's fields), checked by code before it widens the
    # Executor's scope (evcli.agents.reading); kept as proposed so `trace` shows it
    reading: dict[str, Any] | None = None

    @model_serializer(mode="wrap")
    def _reading_when_proposed(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """A plan without a reading dumps as one recorded before readings."""
        dumped: dict[str, Any] = handler(self)
        if self.reading is None:
            dumped.pop("reading", None)
        return dumped


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
    # The absolute range searched (TimeRange text with zones) and where it came from: "question/call",
    # "whole snapshot" or "live default 1h". None: recorded before absolute ranges (issue 9).
    range: str | None = None
    range_origin: str | None = None
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


class MatchedFact(_Closed):
    """One fact a claim states, compared with the field of its cited item it was matched to
    (`field` empty: no field of the item states it)."""

    claim: str
    field: str
    evidence: str
    ok: bool


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
    facts: list[MatchedFact] = Field(default_factory=list)


class Finding(_Closed):
    """One rule outcome worth reporting: an error (failed rule) or a warning.

    A scope finding (`scope.*` rules) also says, in words any catalogue can render, what the
    question asked (`asked`, e.g. "2026-03-18T09:14:00+01:00..2026-03-18T09:27:00+01:00" or
    'phrase "Accepted publickey"') and what the session searched (`searched`)."""

    rule: str
    severity: RuleSeverity
    message: str
    claim_id: str | None = None
    binding_index: int | None = None
    asked: str | None = None
    searched: str | None = None


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
    verdict: Verdict
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


AlertState = Literal["firing", "still_firing", "resolved", "silenced", "pending"]
ScopeLevel = Literal["DEBUG", "INFO", "WARN", "ERROR", "FATAL"]


class AskedRange(_Closed):
    """A time range the question names, resolved on the environment's clock and zone."""

    text: str  # as the question wrote it: "between 14:20 and 14:35", "最近 20 分钟"
    range: str  # canonical evcli.timerange.TimeRange text, START..END with offsets (an open end is empty)
    relative: str | None = None  # "20m" when the question named a window ending at the clock
    instant: str | None = None  # ISO 8601: the one moment "at/around 09:14" names (`range` is around it)


class AskedBaseline(_Closed):
    """What a comparison question compares its window against (evcli.scope.baselines)."""

    text: str  # as the question wrote it: "with the hour before", "from yesterday"
    mode: Literal["before", "day"]  # a stretch right before the window, or the same hours a day earlier
    length: str | None = None  # "1h": how long the stretch before is (mode before)


ANSWER_TABLE = Path(__file__).parent / "scope" / "answers.toml"


@cache
def answer_kinds() -> tuple[str, ...]:
    """The kinds of answer a question can ask for: the names of the answer table's rows (evcli/scope/answers.toml,
    in priority order; evcli.scope.answers reads the rest of each row). Adding a kind is adding a row."""
    import tomllib

    return tuple(str(row["name"]) for row in tomllib.loads(ANSWER_TABLE.read_text(encoding="utf-8"))["answers"])


def _answer_kind(value: str) -> str:
    if value not in answer_kinds():
        raise ValueError(f"unknown answer kind {value!r}: one of {', '.join(answer_kinds())}")
    return value


AnswerKind = Annotated[str, AfterValidator(_answer_kind)]  # a row of the answer table
Breakdown = Literal["address", "instance", "path"]  # what matching lines are counted by (query_logs' count_by)
Source = Literal["logs"]  # an evidence source a question names by name


class QueryCue(_Closed):
    """The words of the question one reading of it came from (positions in the question as asked)."""

    reads: str  # what the words gave: an answer kind ("count"), a breakdown ("breakdown:address"), "source:logs"
    start: int
    end: int
    words: str


class Query(_Closed):
    """The question as code read it (evcli.scope), never a model (DESIGN §2): one typed reading that every
    stage uses. What it asks about (services, hosts, alerts and their state, phrases, tokens, terms, the
    sources it names), its filters (range, levels, the baseline a comparison compares with), and the kind
    of answer it asks for (`answer`, every kind named in `kinds`, the field a breakdown counts by in `by`;
    evcli/scope/answers.toml), each tied by `cues` to the words of the question it came from.

    Stored with the session (`SessionConfig.scope`, the name it was first stored under), shown by `trace`,
    given to every engine (a model may propose its own reading, which code checks and only ever adds to this
    one: evcli.agents.reading), and compared by the Gatekeeper's `scope.*` rules with what the invocations
    searched and with the shape of the answer. Phrases and tokens are verbatim as the question wrote them. A
    reading recorded before answer kinds has `answer` None and round-trips byte for byte."""

    language: str = "en"
    task_scope: Literal["narrow", "broad"] = "broad"
    services: list[str] = Field(default_factory=list)  # canonical names of services the environment knows
    unknown_services: list[str] = Field(default_factory=list)  # service-like names it does not know
    hosts: list[str] = Field(default_factory=list)
    alertnames: list[str] = Field(default_factory=list)
    alert_state: AlertState | None = None  # the state the question asks about ("still firing?" → still_firing)
    range: AskedRange | None = None
    baseline: AskedBaseline | None = None  # what a comparison question compares the range with
    levels: list[ScopeLevel] = Field(default_factory=list)  # levels asked explicitly ("warnings" → WARN)
    phrases: list[str] = Field(default_factory=list)  # quoted text, verbatim
    tokens: list[str] = Field(default_factory=list)  # IPs, status codes, exception/class names, error codes, paths
    terms: list[str] = Field(default_factory=list)  # other content words worth searching, strongest first
    wants_count: bool = False  # "how many", "多少", "几次"
    answer: AnswerKind | None = None  # the kind of answer asked; None: recorded before answer kinds (issue 24)
    kinds: list[AnswerKind] = Field(default_factory=list)  # every kind the question names, in table order
    by: Breakdown | None = None  # what a breakdown counts the matching lines by
    sources: list[Source] = Field(default_factory=list)  # "any exceptions in billing's logs?": logs
    cues: list[QueryCue] = Field(default_factory=list)

    @model_serializer(mode="wrap")
    def _answer_when_read(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """A scope recorded before answer kinds round-trips byte for byte."""
        dumped: dict[str, Any] = handler(self)
        if self.answer is None:
            for name in ("answer", "kinds", "by", "sources", "cues"):
                dumped.pop(name, None)
        return dumped


class EnvironmentOverview(_Closed):
    """Services, active alerts and declared skills at session creation: what the Planner may choose from."""

    services: list[str] = Field(default_factory=list)
    aliases: dict[str, list[str]] = Field(default_factory=dict)
    alerts: list[dict[str, Any]] = Field(default_factory=list)
    skills: list[dict[str, Any]] = Field(default_factory=list)
    # {word of the question: {service: matching log lines}}: the words the environment's own logs
    # contain (evcli.backends.vocabulary.term_hits), for the offline engine to choose and rank by
    vocabulary: dict[str, dict[str, int]] = Field(default_factory=dict)
    # what the environment's backends serve (evcli.backends.registry.Capability values: what a snapshot
    # directory holds, what live backends are configured); None: not known (recorded before capabilities)
    capabilities: list[str] | None = None

    @model_serializer(mode="wrap")
    def _optional_when_set(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """An overview recorded before vocabularies (issue 10) or capabilities round-trips byte for byte."""
        dumped: dict[str, Any] = handler(self)
        for name in ("vocabulary", "capabilities"):
            if name not in self.model_fields_set:
                dumped.pop(name, None)
        return dumped


class ReplayOf(_Closed):
    session_id: str
    from_stage: str = Field(alias="from")

    model_config = ConfigDict(extra="forbid", populate_by_name=True, serialize_by_alias=True, defer_build=True)


DEFAULT_BACKEND_TIMEOUT = 10.0  # seconds per HTTP call


class BackendAuth(BaseModel):
    """How a backend authenticates: where the secret is read from, never the secret itself, so a
    spec can be stored with a session. `bearer` reads a token, `basic` a username and a password,
    each from a named environment variable or a file (the first one set wins)."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    kind: Literal["bearer", "basic"]
    token_env: str | None = None
    token_file: str | None = None
    username: str | None = None
    password_env: str | None = None
    password_file: str | None = None


class BackendSpec(BaseModel):
    """One live backend: its base URL, the per-request timeout and backend-specific options
    (e.g. Loki's `service_label`), and how to reach it (auth, extra headers such as
    `X-Scope-OrgID`, TLS, retries). Stored in `SessionConfig.env` when it differs from a bare URL;
    it never holds a secret (BackendAuth names where secrets are read from)."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    url: str = Field(min_length=1)
    timeout: float = Field(default=DEFAULT_BACKEND_TIMEOUT, gt=0)
    options: dict[str, str] = Field(default_factory=dict)
    auth: BackendAuth | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    ca_bundle: str | None = None
    insecure_skip_verify: bool = False
    retries: int = Field(default=2, ge=0, le=10)  # on connection errors and 429/502/503/504, with backoff

    @model_serializer(mode="wrap")
    def _connection_settings_when_set(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """Auth, headers, TLS and retries are stored only when they differ from the defaults, so a spec
        recorded before them (url, timeout, options) round-trips byte for byte."""
        dumped: dict[str, Any] = handler(self)
        for name in ("auth", "headers", "ca_bundle", "insecure_skip_verify", "retries"):
            if name in dumped and getattr(self, name) == type(self).model_fields[name].get_default(
                call_default_factory=True
            ):
                del dumped[name]
        return dumped


_INTENT_KEYS = frozenset({"services", "alertnames", "terms", "window"})


class SessionConfig(_Closed):
    """How a session was run, stored as `diagnosis_run.config`.

    Only the fields a writer set are stored (a session created without a config
    stores `{}`), so a config round-trips byte for byte. Documents written before
    this model (`{"model": "offline", "env": "demo"}`, the first sample sessions)
    are upgraded when read: one model for every role, `demo` meaning the packaged
    demo environment.
    """

    models: dict[str, str] = Field(default_factory=dict)  # role -> model, plus api_base when one was given
    # EnvironmentSpec.as_config(): env_dir / runbooks paths (one path, or a list of several), and per
    # backend its URL or its BackendSpec
    env: dict[str, str | list[str] | BackendSpec] = Field(default_factory=dict)
    task_scope: Literal["narrow", "broad"] = "broad"
    language: str = "en"
    scope: Query | None = None  # None: recorded before question scopes (issue 10)
    continues: str | None = None  # the session this one follows up (`ask --continue`)
    environment: EnvironmentOverview = Field(default_factory=EnvironmentOverview)
    max_steps: int = 8
    aiops_alert: dict[str, Any] | None = None
    replay_of: ReplayOf | None = None
    _stored_intent: dict[str, Any] | None = PrivateAttr(default=None)

    @property
    def intent(self) -> dict[str, Any]:
        """The `intent` key sessions have always stored (services, alert names, terms, window): what a session
        stored, else a view of `scope` (no second reading of the question: the Query is the one)."""
        if self._stored_intent is not None:
            return self._stored_intent
        if self.scope is None:
            return {"services": [], "alertnames": [], "terms": [], "window": None}
        scope = self.scope
        return {
            "services": list(scope.services),
            "alertnames": list(scope.alertnames),
            "terms": list(dict.fromkeys([*scope.phrases, *scope.tokens, *scope.terms])),
            "window": scope.range.relative if scope.range else None,
        }

    @model_validator(mode="wrap")
    @classmethod
    def _keep_stored_intent(cls, data: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        """A stored `intent` is kept as written, so a document round-trips byte for byte."""
        stored = data.get("intent") if isinstance(data, dict) else None
        if isinstance(data, dict) and "intent" in data:
            if not isinstance(stored, dict) or set(stored) - _INTENT_KEYS:
                raise ValueError(f"intent: an object of {sorted(_INTENT_KEYS)} expected")
            data = {key: value for key, value in data.items() if key != "intent"}
        config = handler(data)
        if stored is not None:
            config._stored_intent = dict(stored)
        return config

    @model_validator(mode="before")
    @classmethod
    def _upgrade_first_shape(cls, data: Any) -> Any:
        if not isinstance(data, dict) or not ("model" in data or isinstance(data.get("env"), str)):
            return data
        upgraded = {key: value for key, value in data.items() if key != "model"}
        if "model" in data and "models" not in data:
            upgraded["models"] = {role: data["model"] for role in ROLES}
        if isinstance(data.get("env"), str):
            upgraded["env"] = {} if data["env"] == "demo" else {"env_dir": data["env"]}
        return upgraded

    @model_serializer(mode="wrap")
    def _only_set_fields(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        dumped: dict[str, Any] = handler(self)
        kept = {key: value for key, value in dumped.items() if key in self.model_fields_set}
        if self._stored_intent is None and self.scope is None:
            return kept
        ordered: dict[str, Any] = {}
        for key, value in kept.items():  # where the field was: after language, before scope
            if key not in ("models", "env", "task_scope", "language") and "intent" not in ordered:
                ordered["intent"] = self.intent
            ordered[key] = value
        return ordered if "intent" in ordered else ordered | {"intent": self.intent}


class RunRecord(_Closed):
    """The `diagnosis_run` row."""

    session_id: SessionId
    question: str = ""
    mode: Mode = "chat"
    status: str = "created"
    verdict: Verdict | None = None
    config: SessionConfig = Field(default_factory=SessionConfig)
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
    # of prompt_tokens, those the provider read from its prompt cache; None: not reported (the offline
    # engine, a provider that reports no cache, a step recorded before cache figures)
    cached_tokens: int | None = None

    @model_serializer(mode="wrap")
    def _cached_tokens_when_reported(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """A step without a cache figure is stored as before (a step recorded earlier round-trips byte for byte)."""
        dumped: dict[str, Any] = handler(self)
        if self.cached_tokens is None:
            dumped.pop("cached_tokens", None)
        return dumped


class StageOutput(_Closed):
    """What one stage produced in one round: plan, execute, verify or compose."""

    stage: StoredStage
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
    models: dict[str, type[BaseModel]] = {
        "planner_plan": PlannerPlan,
        "executor_evidence_v2": ExecutorEvidenceV2,
        "tool_invocation": ToolInvocation,
        "gate_result": GateResult,
        "verifier_output": VerifierOutput,
        "composer_output": ComposerOutput,
        "session_document": SessionDocument,
    }
    return {name: model.model_json_schema() for name, model in models.items()}
