"""The Gatekeeper: a pure function of (executor output, invocations, rules, question scope).

It never opens the database and never calls a model. For each evidence binding
it resolves the cited invocation (back-filling a missing id only when exactly
one invocation fits), then runs the enabled rules in dependency order: a rule
whose precondition failed is not run, because its answer would be meaningless
(there is no ref text to compare an excerpt with when the invocation is fake).
With a question scope the `scope.*` rules (evcli.gatekeeper.scope) also compare what was
asked with what the invocations searched; a session recorded without one runs none of them.
A large session's claims are checked in contiguous parts on all usable cores
(evcli.gatekeeper.parallel); the parts' outcomes joined in claim order are exactly what
checking the claims one after the other gives.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Callable, Sequence
from functools import cache
from typing import TYPE_CHECKING, Any, Literal

from pydantic import TypeAdapter, ValidationError

from evcli.contracts import (
    CheckedBinding,
    Claim,
    EvidenceBinding,
    ExecutorEvidenceV2,
    Finding,
    GateResult,
    MatchedFact,
    Query,
    Severity,
    ToolInvocation,
)
from evcli.gatekeeper import checks, parallel, provenance
from evcli.gatekeeper.provenance import SessionRecord
from evcli.gatekeeper.rules import RuleSet
from evcli.gatekeeper.typed_model import Value

if TYPE_CHECKING:
    from evcli.gatekeeper import scope as scope_rules


class _Findings:
    """Collects rule outcomes and knows each rule's configured severity."""

    def __init__(self, rules: RuleSet) -> None:
        self.rules = rules
        self.errors: list[Finding] = []
        self.warnings: list[Finding] = []

    def run(self, rule_id: str, message: str | None, *, claim_id=None, binding_index=None) -> bool:
        """Record a check's outcome; True when the rule holds (or is disabled)."""
        if message is None or not self.rules.enabled(rule_id):
            return True
        severity = self.rules.severity(rule_id)
        finding = Finding.model_construct(
            rule=rule_id, severity=severity, message=message, claim_id=claim_id, binding_index=binding_index
        )
        if severity == "warning":
            self.warnings.append(finding)
            return True
        self.errors.append(finding)
        return False

    def miss(self, rule_id: str, miss: scope_rules.Miss) -> None:
        """Record a scope rule's miss, with what was asked and what was searched."""
        if not self.rules.enabled(rule_id):
            return
        severity = self.rules.severity(rule_id)
        finding = Finding.model_construct(
            rule=rule_id,
            severity=severity,
            message=miss.message,
            claim_id=None,
            binding_index=None,
            asked=miss.asked,
            searched=miss.searched,
        )
        (self.warnings if severity == "warning" else self.errors).append(finding)

    def warn(self, rule_id: str, message: str, *, claim_id=None, binding_index=None) -> None:
        self.warnings.append(
            Finding.model_construct(
                rule=rule_id, severity="warning", message=message, claim_id=claim_id, binding_index=binding_index
            )
        )


@contextlib.contextmanager
def _gc_paused():
    """Gating allocates many objects and frees few until it returns, so the cyclic
    collector's full passes over a large session would make it superlinear. What a large
    session's gate kept is its result, alive while the caller holds it: it joins the oldest
    generation at once (`_promote_young`) instead of being traversed by a young collection
    right after, which would find nothing to free."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            _promote_young()
            gc.enable()


# Objects gating left young (about 13 a binding) from which they join the oldest generation at once; below it the
# young collection is brief and runs as usual (an eval gating thousands of small sessions keeps its rhythm).
_PROMOTED_FROM = 20_000


def _promote_young() -> None:
    """Every object the collector tracks moved to its oldest generation (freeze, then unfreeze) when gating left
    many young, unless the process froze objects of its own: those stay frozen, and the young collection runs."""
    if gc.get_count()[0] >= _PROMOTED_FROM and gc.get_freeze_count() == 0:
        gc.freeze()
        gc.unfreeze()


def gate(
    executor_output: Any,
    invocations: list[ToolInvocation],
    rules: RuleSet,
    record: SessionRecord | None = None,
    scope: Query | None = None,
    services: tuple[str, ...] = (),
) -> GateResult:
    """`record` (what the session document says about its run) enables the accounting
    rule, and the provenance rule when it carries re-derived sources; `scope` (the session's
    question scope) enables the scope rules; `services` (the environment's) are facts a claim
    naming one must carry."""
    with _gc_paused():
        return _gate(executor_output, invocations, rules, record, scope, services)


class _Trust:
    """Session-file trust state shared by the bindings of one gate run."""

    def __init__(self, invocations: list[ToolInvocation], record: SessionRecord | None, findings: _Findings) -> None:
        self.invocations = invocations
        self.record = record
        self.duplicates = provenance.duplicate_ids(invocations)
        self.derived: dict[tuple[int, str], tuple[str, str | None]] = {}
        self.reported: set[tuple[str, int]] = set()
        findings.run("invocation.ids_unique", provenance.ids_unique(self.duplicates))
        if record is not None and not provenance.has_executor_steps(record) and invocations:
            findings.warn(
                "invocation.recorded_by_run",
                "the session records no executor steps: its invocations cannot be matched to the tool calls that made them",
            )

    def by_id(self) -> dict[int, ToolInvocation]:
        # Built only after duplicates are known: an id recorded twice resolves to neither.
        return {i.invocation_id: i for i in self.invocations if i.invocation_id not in self.duplicates}

    def derived_ref(self, invocation: ToolInvocation, raw_path: str) -> tuple[str, str | None]:
        key = (invocation.invocation_id, raw_path)
        if key not in self.derived:
            self.derived[key] = provenance.derived_ref(invocation, raw_path)
        return self.derived[key]

    def first_time(self, rule_id: str, invocation_id: int) -> bool:
        """Once per invocation and rule, for warnings that are about the invocation, not the binding."""
        key = (rule_id, invocation_id)
        if key in self.reported:
            return False
        self.reported.add(key)
        return True


def _gate(
    executor_output: Any,
    invocations: list[ToolInvocation],
    rules: RuleSet,
    record: SessionRecord | None,
    scope: Query | None,
    services: tuple[str, ...] = (),
    *,
    whole: bool = False,
) -> GateResult:
    """`whole`: the claims are validated with the document, before any is checked (`_parse_claims`)."""
    findings = _Findings(rules)
    trust = _Trust(invocations, record, findings)
    by_id = trust.by_id()
    output = executor_output if isinstance(executor_output, dict) else {}

    findings.run("contract.forbidden_fields", checks.forbidden_fields(output))

    def check_part(part: Sequence[Claim]) -> _Part:
        return _check_claims(part, by_id, trust, rules, services)

    # `provenance.source_matches` warns once per invocation across all claims: such a gate is not split
    split = record is None or record.sources is None
    raw_claims = None if whole or not split else _well_formed_claims(executor_output)
    claims: list[Claim] = []
    if raw_claims is not None:
        # each part validates its own claims (a child's are never validated, nor freed, in this process)
        try:
            weights = [_binding_count(raw) for raw in raw_claims]
            parts = parallel.in_parts(raw_claims, weights, _validated(check_part), _encode_part, _decode_part)
        except _Malformed:  # a claim that does not validate: the document is read whole, from the start
            return _gate(executor_output, invocations, rules, record, scope, services, whole=True)
        findings.run("contract.answer_version", checks.answer_version(output, None))
        if scope is not None:
            claims = _claims_adapter().validate_python(raw_claims)
    else:
        claims, parse_error = _parse_claims(executor_output)
        findings.run("contract.answer_version", checks.answer_version(output, parse_error))
        weights = [len(claim.evidence_bindings) for claim in claims]
        parts = (
            parallel.in_parts(claims, weights, check_part, _encode_part, _decode_part)
            if split
            else [check_part(claims)]
        )
    checked: list[CheckedBinding] = []
    for part_checked, part_errors, part_warnings in parts:
        checked += part_checked
        findings.errors += part_errors
        findings.warnings += part_warnings
    if scope is not None:
        _check_scope(scope, claims, invocations, output, findings)

    failed_rules = sorted({finding.rule for finding in findings.errors})
    severity = max((Severity(f.severity) for f in findings.errors), default=Severity.NONE)
    return GateResult(
        status="pass" if severity == Severity.NONE else "fail",
        severity=severity,
        rule_set_version=rules.version,
        rules_hash=rules.file_hash,
        rules=[rule.meta() for rule in rules.rules.values()],
        checked_bindings=checked,
        failed_rules=failed_rules,
        warnings=findings.warnings,
        errors=findings.errors,
    )


_Part = tuple[list[CheckedBinding], list[Finding], list[Finding]]


@cache
def _part_adapter() -> TypeAdapter[_Part]:
    return TypeAdapter(_Part)


def _encode_part(part: _Part) -> bytes:
    """A part's outcome as a child process sends it: JSON written by pydantic-core (faster both ways than
    pickling thousands of models); only the fields each model was given, so each comes back as it was."""
    return _part_adapter().dump_json(part, exclude_unset=True)


def _decode_part(sent: bytes) -> _Part:
    return _part_adapter().validate_json(sent)


def _check_claims(
    claims: Sequence[Claim], by_id: dict[int, ToolInvocation], trust: _Trust, rules: RuleSet, services: tuple[str, ...]
) -> _Part:
    """The claims' checked bindings, errors and warnings, in claim order."""
    findings = _Findings(rules)
    checked: list[CheckedBinding] = []
    is_session_entity = checks.session_entity_finder(by_id)
    items: dict[tuple[int, str], tuple[Any, list[Value]]] = {}  # cited items read as typed values, once per part
    for claim in claims:
        findings.run("claim.bindings_present", checks.bindings_present(claim), claim_id=claim.claim_id)
        findings.run("claim.plain_text", checks.plain_text(claim), claim_id=claim.claim_id)
        if rules.enabled("claim.observes_only"):
            phrases = rules.param("claim.observes_only", "asserting_phrases")
            findings.run("claim.observes_only", checks.observes_only(claim, phrases), claim_id=claim.claim_id)
        seen_items: set[tuple[int, str]] = set()
        claim_bindings = [
            _check_binding(claim, index, binding, by_id, seen_items, findings, trust)
            for index, binding in enumerate(claim.evidence_bindings)
        ]
        # Only a claim whose citations all hold is read for its facts; otherwise it has failed already.
        if claim_bindings and all(b.status == "pass" for b in claim_bindings):
            claim_bindings = _check_facts(claim, claim_bindings, by_id, is_session_entity, services, findings, items)
        checked += claim_bindings
    return checked, findings.errors, findings.warnings


def _check_facts(
    claim: Claim,
    claim_bindings: list[CheckedBinding],
    by_id: dict[int, ToolInvocation],
    is_session_entity,
    services: tuple[str, ...],
    findings: _Findings,
    items: dict[tuple[int, str], tuple[Any, list[Value]]],
) -> list[CheckedBinding]:
    """The typed facts rule, then the excerpt facts rule on what it did not compare; the facts
    compared are recorded on the binding whose item they were matched to."""
    typed_check = None
    if findings.rules.enabled("claim.facts_match"):
        message, typed_check = checks.facts_match(claim, checks.cited_items(claim_bindings, by_id, items), services)
        findings.run("claim.facts_match", message, claim_id=claim.claim_id)
    if findings.rules.enabled("claim.facts_in_excerpts"):
        cited = [by_id[b.source_invocation_id] for b in claim_bindings if b.source_invocation_id in by_id]
        message = checks.facts_in_excerpts(claim, cited, is_session_entity, services, typed_check)
        findings.run("claim.facts_in_excerpts", message, claim_id=claim.claim_id)
    if typed_check is None or not typed_check.facts:
        return claim_bindings
    matched: dict[int | None, list[MatchedFact]] = {}
    for f in typed_check.facts:
        matched.setdefault(f.binding_index, []).append(
            MatchedFact(claim=f.claim, field=f.field, evidence=f.evidence, ok=f.ok)
        )
    for binding in claim_bindings:  # made by _check_binding for this claim alone: set in place, not copied
        binding.facts = matched.get(binding.binding_index, [])
    return claim_bindings


def _check_scope(
    scope: Query,
    claims: list[Claim],
    invocations: list[ToolInvocation],
    output: dict[str, Any],
    findings: _Findings,
) -> None:
    from evcli.gatekeeper import scope as scope_rules  # only a session recorded with a question scope reads it

    searched = scope_rules.searches(invocations)
    outcomes = {
        "scope.services_covered": scope_rules.services_covered(scope, searched),
        "scope.terms_covered": scope_rules.terms_covered(scope, searched),
        "scope.range_covered": scope_rules.range_covered(scope, searched),
        "scope.level_not_narrower": scope_rules.level_not_narrower(scope, searched),
        "scope.count_claimed": scope_rules.count_claimed(scope, claims),
        "scope.breakdown_claimed": scope_rules.breakdown_claimed(scope, claims, invocations),
        "scope.why_answered": scope_rules.why_answered(scope, claims, output),
        "scope.alert_state_covered": scope_rules.alert_state_covered(scope, searched),
        "scope.negative_within_searched": scope_rules.negative_within_searched(
            scope, claims, invocations, tuple(findings.rules.param("scope.negative_within_searched", "widening_words"))
        ),
    }
    for rule_id, misses in outcomes.items():
        for miss in misses:
            findings.miss(rule_id, miss)


def _well_formed_claims(executor_output: Any) -> list[dict[str, Any]] | None:
    """The document's claims, unvalidated, when all of it but them is valid and each is an object whose
    bindings are a list; else None (`_parse_claims` then reads it whole, salvaging what parses). The
    claims are then validated a part at a time (`_validated`): a claim that does not validate there
    makes the gate read the document whole after all (`_Malformed`)."""
    if not isinstance(executor_output, dict):
        return None
    raw_claims = executor_output.get("claims", [])
    if not isinstance(raw_claims, list) or not all(
        isinstance(raw, dict) and isinstance(raw.get("evidence_bindings", []), list) for raw in raw_claims
    ):
        return None
    try:
        ExecutorEvidenceV2.model_validate({**executor_output, "claims": []})
    except ValidationError:
        return None
    return raw_claims


def _binding_count(raw_claim: dict[str, Any]) -> int:
    return len(raw_claim.get("evidence_bindings", []))


class _Malformed(Exception):
    """A part's claims did not validate: the document is read whole instead (`_parse_claims`)."""


@cache
def _claims_adapter() -> TypeAdapter[list[Claim]]:
    return TypeAdapter(list[Claim])


def _validated(check_part: Callable[[Sequence[Claim]], _Part]) -> Callable[[Sequence[dict[str, Any]]], _Part]:
    def check_raw(raw_part: Sequence[dict[str, Any]]) -> _Part:
        try:
            part = _claims_adapter().validate_python(raw_part)
        except ValidationError as error:
            raise _Malformed from error
        return check_part(part)

    return check_raw


def _parse_claims(executor_output: Any) -> tuple[list[Claim], str | None]:
    """Claims that parse; a document that does not parse yields none plus the reason."""
    if not isinstance(executor_output, dict):
        return [], f"executor output is {type(executor_output).__name__}, not an object"
    try:
        return ExecutorEvidenceV2.model_validate(executor_output).claims, None
    except ValidationError as exc:
        first = exc.errors()[0]
        location = ".".join(str(part) for part in first["loc"])
        # Salvage the claims that are well-formed so their citations still get checked.
        raw_claims = executor_output.get("claims")
        salvaged = []
        for raw_claim in raw_claims if isinstance(raw_claims, list) else []:
            try:
                salvaged.append(Claim.model_validate(raw_claim))
            except ValidationError:
                continue
        return salvaged, f"{location}: {first['msg']}"


def _check_binding(
    claim: Claim,
    index: int,
    binding: EvidenceBinding,
    invocations: dict[int, ToolInvocation],
    seen_items: set[tuple[int, str]],
    findings: _Findings,
    trust: _Trust,
) -> CheckedBinding:
    where = {"claim_id": claim.claim_id, "binding_index": index}
    errors_before = len(findings.errors)
    outcome = _BindingOutcome()

    findings.run("claim.negative_requires_no_evidence", checks.negative_requires_no_evidence(claim, binding), **where)
    if findings.run("binding.fields_present", checks.fields_present(binding), **where) and binding.raw_path:
        invocation = _resolve_invocation(binding, invocations, findings, outcome, where, trust)
        if invocation is not None:
            _check_against_invocation(binding, invocation, findings, outcome, where, trust)
            invocation_id = invocation.invocation_id
            if findings.run(
                "binding.unique_item", checks.unique_item(invocation_id, binding.raw_path, seen_items), **where
            ):
                seen_items.add((invocation_id, binding.raw_path))

    new_errors = findings.errors[errors_before:]
    # Built by the validator (pydantic-core), which takes less time than model_construct's loop in Python.
    return CheckedBinding(
        claim_id=claim.claim_id,
        binding_index=index,
        tool_name=binding.tool_name,
        source_invocation_id=outcome.invocation_id
        if outcome.invocation_id is not None
        else binding.source_invocation_id,
        raw_path=binding.raw_path,
        evidence_excerpt=binding.evidence_excerpt,
        matched_text=outcome.matched_text,
        match=outcome.match,
        similarity=outcome.similarity,
        backfilled=outcome.backfilled,
        # A binding passes only when it resolved to a recorded ref and no enabled
        # rule failed; a binding that points at nothing is never verified.
        status="pass" if outcome.matched_text is not None and not new_errors else "fail",
        failed_rules=sorted({finding.rule for finding in new_errors}),
        facts=[],  # given, so every field is set (an encoded part sends the fields set: see _encode_part)
    )


class _BindingOutcome:
    def __init__(self) -> None:
        self.invocation_id: int | None = None
        self.backfilled = False
        self.matched_text: str | None = None
        self.match: Literal["exact", "near", "none", "skipped"] = "skipped"
        self.similarity = 0.0


def _resolve_invocation(binding, invocations, findings: _Findings, outcome: _BindingOutcome, where, trust: _Trust):
    if binding.source_invocation_id is None:
        min_similarity = findings.rules.param("binding.excerpt_supported", "min_similarity")
        candidates = checks.backfill_candidates(binding, invocations, min_similarity)
        if not findings.run("binding.invocation_backfill", checks.invocation_backfill(candidates), **where):
            return None
        if len(candidates) != 1:  # rule disabled: nothing to back-fill from
            return None
        outcome.backfilled = True
        findings.warn(
            "binding.invocation_backfill",
            f"source_invocation_id back-filled as {candidates[0]} ({binding.tool_name} {binding.raw_path})",
            **where,
        )
        binding = binding.model_copy(update={"source_invocation_id": candidates[0]})
    if not findings.run(
        "invocation.ids_unique", provenance.ambiguous_id(binding.source_invocation_id, trust.duplicates), **where
    ):
        return None
    if not findings.run("binding.invocation_exists", checks.invocation_exists(binding, invocations), **where):
        return None
    invocation = invocations.get(binding.source_invocation_id)
    if invocation is not None:
        outcome.invocation_id = invocation.invocation_id
    return invocation


def _check_against_invocation(
    binding, invocation: ToolInvocation, findings: _Findings, outcome, where, trust: _Trust
) -> None:
    if not findings.run("binding.tool_name_match", checks.tool_name_match(binding, invocation), **where):
        return
    if not findings.run("binding.invocation_succeeded", provenance.invocation_succeeded(invocation), **where):
        return
    if trust.record is not None:
        findings.run(
            "invocation.recorded_by_run",
            provenance.recorded_by_run(invocation, trust.invocations, trust.record),
            **where,
        )
    if not findings.run("binding.raw_path_format", checks.raw_path_format(binding), **where):
        return
    if not findings.run("binding.invocation_has_refs", checks.invocation_has_refs(invocation), **where):
        return
    ref = checks.find_ref(invocation, binding.raw_path)
    if not findings.run("binding.raw_path_exists", checks.raw_path_exists(binding, invocation, ref), **where):
        return
    if ref is None:
        return
    if not findings.run(
        "invocation.refs_derivable",
        provenance.refs_derivable(invocation, ref, trust.derived_ref(invocation, ref.raw_path)),
        **where,
    ):
        return
    _check_source(invocation, ref, findings, where, trust)
    outcome.matched_text = ref.text
    min_chars = findings.rules.param("binding.excerpt_informative", "min_chars")
    if not findings.run("binding.excerpt_informative", checks.excerpt_informative(binding, min_chars), **where):
        return
    min_similarity = findings.rules.param("binding.excerpt_supported", "min_similarity")
    message, match = checks.excerpt_supported(binding, ref, min_similarity)
    outcome.match = match.kind
    outcome.similarity = match.similarity
    findings.run("binding.excerpt_supported", message, **where)


def _check_source(invocation: ToolInvocation, ref, findings: _Findings, where, trust: _Trust) -> None:
    """`gate --against DIR`: the cited ref must still be what its source gives."""
    record = trust.record
    if record is None or record.sources is None:
        return
    source = record.sources.get(invocation.invocation_id)
    if source is None or source.not_rechecked:
        # evidence cited under --against that could not be re-derived there is not shown to be real: the
        # document names where it came from, and a document can name anything (a live backend)
        if trust.first_time("provenance.source_matches", invocation.invocation_id):
            reason = source.not_rechecked if source else "not re-run"
            findings.run(
                "provenance.source_matches",
                f"invocation {invocation.invocation_id} cannot be re-checked against {record.against}: {reason}",
                **where,
            )
        return
    findings.run(
        "provenance.source_matches", provenance.source_matches(invocation, ref, source, record.against), **where
    )
