"""Gatekeeper fault injection: does every kind of false citation get caught?

Starting from sessions whose citations are all valid, each mutation class
rewrites the executor output the way a careless or adversarial model would,
and says which rule must catch it with which severity. Benign variants are
edits a faithful model makes (case, spacing, `92 %`, an excerpt split with
`...`, a missing id that one invocation fits) and must still pass. Scope classes
(evcli.evals.mutations.scope) make what was searched miss what was asked, on bases
that recorded a question scope. Trace classes (evcli.evals.mutations.traces) edit claims citing
query_traces items, on the bases of environments with traces (evcli.evals.mutations.tracebases).

A class is named after its mutation function; the order of `MUTATIONS` is the
order of the report.
"""

from __future__ import annotations

from evcli.evals.mutations import benign, citations, facts, paraphrases, scope, session_trust, subjects, traces
from evcli.evals.mutations.base import Mutate, MutationClass


def _caught(mutate: Mutate, expected_severity: str, expected_rule: str) -> MutationClass:
    """A mutation that `expected_rule` must catch with `expected_severity`."""
    return MutationClass(mutate.__name__, expected_severity, expected_rule, mutate)


def _benign(mutate: Mutate) -> MutationClass:
    """A faithful edit that must pass the gatekeeper."""
    return MutationClass(mutate.__name__, "none", None, mutate, benign=True)


def _scope_caught(mutate: Mutate, expected_rule: str) -> MutationClass:
    """A scope mutation: what was searched misses what was asked; `expected_rule` caps it at low_confid."""
    return MutationClass(mutate.__name__, "low_confid", expected_rule, mutate, scope=True)


def _scope_benign(mutate: Mutate) -> MutationClass:
    return MutationClass(mutate.__name__, "none", None, mutate, benign=True, scope=True)


MUTATIONS: tuple[MutationClass, ...] = (
    _caught(citations.fabricated_invocation_id, "reject", "binding.invocation_exists"),
    _caught(citations.tool_name_of_other_invocation, "reject", "binding.tool_name_match"),
    _caught(citations.raw_path_absent, "reject", "binding.raw_path_exists"),
    _caught(citations.field_absent, "reject", "binding.raw_path_exists"),
    _caught(citations.field_not_stated, "reject", "claim.facts_match"),
    _caught(citations.excerpt_number_changed, "reject", "binding.excerpt_supported"),
    _caught(citations.excerpt_negation_inserted, "reject", "binding.excerpt_supported"),
    _caught(citations.excerpt_invented_text, "reject", "binding.excerpt_supported"),
    _caught(citations.negative_bound_to_positive, "reject", "claim.negative_requires_no_evidence"),
    _caught(citations.no_evidence_on_hits, "reject", "binding.raw_path_exists"),
    _caught(citations.duplicate_item_binding, "low_confid", "binding.unique_item"),
    _caught(citations.forbidden_field("user_facing_answer"), "reject", "contract.forbidden_fields"),
    _caught(citations.forbidden_field("diagnosis_summary"), "reject", "contract.forbidden_fields"),
    _caught(citations.wrong_answer_version, "low_confid", "contract.answer_version"),
    _caught(citations.missing_id_unresolvable, "low_confid", "binding.invocation_backfill"),
    _caught(session_trust.hand_added_invocation, "low_confid", "invocation.recorded_by_run"),
    _caught(session_trust.edited_ref_text, "reject", "invocation.refs_derivable"),
    _caught(session_trust.duplicate_invocation_id, "reject", "invocation.ids_unique"),
    _caught(session_trust.failed_invocation_cited, "reject", "binding.invocation_succeeded"),
    _caught(citations.excerpt_trivial, "reject", "binding.excerpt_informative"),
    _caught(citations.excerpt_word_changed, "reject", "binding.excerpt_supported"),
    _caught(citations.claim_hidden_character, "reject", "claim.plain_text"),
    _caught(citations.claim_lookalike_letter, "reject", "claim.plain_text"),
    _caught(citations.claim_service_swapped, "reject", "claim.facts_in_excerpts"),
    _caught(facts.fact_unit_changed, "reject", "claim.facts_match"),
    _caught(facts.fact_role_value_swapped, "reject", "claim.facts_match"),
    _caught(facts.fact_state_swapped, "reject", "claim.facts_match"),
    _caught(facts.claim_cause_asserted, "reject", "claim.observes_only"),
    _caught(facts.claim_lookalike_skeleton, "reject", "claim.plain_text"),
    _caught(facts.claim_hidden_filler, "reject", "claim.plain_text"),
    _benign(benign.benign_contraction),
    _benign(benign.benign_unicode_digits),
    _benign(benign.benign_case),
    _benign(benign.benign_whitespace),
    _benign(benign.benign_percent_space),
    _benign(benign.benign_split_ellipsis),
    _benign(benign.benign_unicode_punctuation),
    _benign(benign.benign_id_backfilled),
    _benign(citations.benign_field_cited),
    _benign(facts.benign_unit_converted),
    _benign(facts.benign_rounded_about),
    _scope_caught(scope.scope_range_shifted, "scope.range_covered"),
    _scope_caught(scope.scope_phrase_dropped, "scope.terms_covered"),
    _scope_caught(scope.scope_level_narrowed, "scope.level_not_narrower"),
    _scope_caught(scope.scope_count_claim_removed, "scope.count_claimed"),
    _scope_caught(scope.scope_service_swapped, "scope.services_covered"),
    _scope_caught(scope.scope_alert_state_narrowed, "scope.alert_state_covered"),
    _scope_caught(scope.scope_negative_widened, "scope.negative_within_searched"),
    _scope_benign(scope.benign_scope_wider_search),
    _scope_benign(scope.benign_scope_extra_search),
    _scope_benign(scope.benign_scope_warn_when_error_asked),
)

# Classes whose claims only the environment bases hold (directions, level counts, times with fractions,
# long numbers, snake_case names): run by `evcli eval gatekeeper --envs` (evcli.evals.mutations.envbases).
ENV_MUTATIONS: tuple[MutationClass, ...] = (
    _caught(facts.fact_direction_flipped, "reject", "claim.facts_match"),
    _caught(facts.fact_counts_swapped, "reject", "claim.facts_match"),
    _caught(facts.fact_time_shifted, "reject", "claim.facts_match"),
    _caught(subjects.subject_address_reassigned, "reject", "claim.facts_match"),
    _caught(subjects.subject_certificate_owner, "reject", "claim.facts_match"),
    _caught(subjects.claim_stitched, "reject", "claim.facts_in_excerpts"),
    _benign(facts.benign_thousands_separator),
    _benign(facts.benign_time_truncated),
    _benign(facts.benign_snake_case_spelled),
    _benign(paraphrases.benign_unit_spelled),
    _benign(paraphrases.benign_duration_rescaled),
    _benign(paraphrases.benign_compound_duration),
    _benign(paraphrases.benign_count_abbreviated),
    _benign(paraphrases.benign_count_reordered),
    _benign(paraphrases.benign_field_worded),
    _benign(paraphrases.benign_approximate_worded),
    _benign(paraphrases.benign_state_worded),
    _benign(paraphrases.benign_time_reformatted),
    _benign(paraphrases.benign_bytes_rescaled),
    _benign(paraphrases.benign_percent_as_fraction),
    _benign(paraphrases.benign_negative_as_ago),
    _benign(paraphrases.benign_clauses_swapped),
    _benign(paraphrases.benign_time_in_utc),
    _benign(paraphrases.benign_zone_named),
    _benign(paraphrases.benign_date_in_words),
    _benign(paraphrases.benign_range_worded),
    _benign(paraphrases.benign_bound_stated),
    _benign(paraphrases.benign_field_after_value),
    _benign(subjects.benign_certificate_owner),
    _benign(subjects.benign_two_items_joined),
)

# Classes whose claims only sessions citing query_traces hold: run on the bases of environments with traces/
# (evcli.evals.mutations.tracebases).
TRACE_MUTATIONS: tuple[MutationClass, ...] = (
    _caught(traces.trace_edge_flipped, "reject", "claim.facts_match"),
    _caught(traces.trace_percentile_swapped, "reject", "claim.facts_match"),
    _caught(traces.trace_calls_errors_swapped, "reject", "claim.facts_match"),
    _caught(traces.trace_unit_error, "reject", "claim.facts_match"),
    _caught(traces.trace_slowest_second, "reject", "claim.facts_match"),
    _caught(traces.trace_caller_as_subject, "reject", "claim.facts_match"),
    _scope_caught(traces.trace_negative_widened, "scope.negative_within_searched"),
    _benign(traces.benign_trace_in_seconds),
    _benign(traces.benign_trace_rounded),
    _benign(traces.benign_trace_microseconds),
    _benign(traces.benign_trace_called_by),
)
