"""The offline Executor: the calls of the compiled plan (plan.py) not made yet, and the evidence document
once they are made (or the step budget is spent).

Claims are built only from evidence refs (claims.py); runbook blocks feed
hypotheses and checking steps (runbooks.py). A narrow task makes one precise
query and never widens it, not even on an evidence retry.
"""

from __future__ import annotations

import re
from typing import Any

from evcli.agents.engine import EngineReply, RoleRequest, ToolCall, Turn, Usage
from evcli.agents.offline.answers import answer_claims
from evcli.agents.offline.claims import (
    LOG_SYMPTOM_CAP,
    NARROW_CLAIM_CAP,
    Claim,
    Ref,
    alert_claims,
    holds,
    log_claims,
    narrow_claims,
    negative_claim,
    no_evidence_note,
    refs_of,
    series_claims,
)
from evcli.agents.offline.diagnosis_claims import confirm_action, diagnosis_claims
from evcli.agents.offline.payload import MODEL, Ask, Call, call_key, intent_of, reply
from evcli.agents.offline.plan import Known, compile_plan
from evcli.agents.offline.queries import is_status_class, narrow_calls
from evcli.agents.offline.runbooks import actions as runbook_actions
from evcli.agents.offline.runbooks import doc_ranks, firing_alert_names
from evcli.agents.offline.runbooks import hypotheses as runbook_hypotheses
from evcli.contracts import ANSWER_VERSION, NO_EVIDENCE_PATH, ToolInvocation
from evcli.messages import Catalogue, catalogue


def execute(request: RoleRequest) -> EngineReply:
    payload = request.payload
    transcript = list(request.transcript)
    intent = intent_of(payload)
    retry = payload.get("retry_context") or None
    # Refused and failed calls count as done: the same call would only be refused again.
    done = {call_key(turn.call.name, turn.call.arguments) for turn in transcript}
    done |= {
        call_key(query.get("tool_name", ""), query.get("input_params") or {})
        for query in (retry or {}).get("completed_queries") or []
    }
    question = payload.get("question", "")
    wanted = compile_plan(intent, question, Known.made(_results(transcript), done, retry)).calls
    pending = [call for call in wanted if call.key not in done]
    # On the stage's last step (`last_step`) no tool may be called: then the document is due.
    offered = {(schema.get("function") or schema).get("name") for schema in request.tools or []}
    runnable = [call for call in pending if call.name in offered]
    if runnable and not request.last_step:
        first = len(transcript) + 1
        calls = [ToolCall(id=f"call-{first + i}", name=c.name, arguments=c.arguments) for i, c in enumerate(runnable)]
        return EngineReply(text="", tool_calls=calls, usage=Usage(), model=MODEL)
    words = catalogue(intent.language)
    document = _evidence_document(payload, intent, transcript, retry, words)
    if pending:
        signatures = "; ".join(call.signature() for call in pending)
        document["missing_info"].append(words("executor.not_run_in_budget", calls=signatures))
    return reply(document)


def _results(transcript: list[Turn]) -> dict[str, ToolInvocation]:
    """Successful recorded invocations by call key (a refused call has none)."""
    results = {}
    for turn in transcript:
        if turn.invocation is not None and turn.invocation.success:
            results[call_key(turn.call.name, turn.call.arguments)] = turn.invocation
    return results


def _evidence_document(
    payload: dict[str, Any],
    intent: Ask,
    transcript: list[Turn],
    retry: dict[str, Any] | None,
    words: Catalogue,
) -> dict[str, Any]:
    invocations = [turn.invocation for turn in transcript if turn.invocation is not None]
    refs = [ref for invocation in invocations if invocation.success for ref in refs_of(invocation)]
    missing: list[str] = []
    claims: list[Claim] = []
    hypotheses: list[str] = []
    actions: list[str] = []

    question = payload.get("question", "")
    answers = answer_claims(intent, refs, words)  # what the asked kinds state (answers.toml)
    if intent.narrow:
        claims = answers + narrow_claims(intent, refs, missing, words)
        missing += _narrow_scope_notes(intent, question, invocations, words)
    else:
        diagnosis, notes = diagnosis_claims(refs, words, intent.services)
        missing += notes
        actions += confirm_action(refs, words) if diagnosis else []
        claims = (
            diagnosis
            + answers
            + alert_claims(refs, words, intent.alert_state)
            + series_claims(intent, refs, words)
            + _asked_log_claims(intent, refs, words, question)
        )
        blocks = [ref for ref in refs if ref.array == "evidence_blocks"]
        doc_rank = doc_ranks(intent, blocks, firing_alert_names(refs))
        hypotheses = runbook_hypotheses(intent, blocks, claims, doc_rank, words)
        actions += runbook_actions(blocks, doc_rank, words)
        if not blocks:
            missing.append(words("missing.no_runbook" if intent.serves_knowledge else "missing.no_runbooks_held"))
        if hypotheses:
            missing.append(words("missing.hypotheses_unconfirmed"))
    # a runbook lookup that found nothing is missing guidance, not an observation of the environment; a
    # count of words no line holds together is that none does, whatever fewer of them found
    no_evidence = [
        ref
        for ref in refs
        if ref.ref.raw_path == NO_EVIDENCE_PATH
        and ref.invocation.tool_name not in ("lookup_knowledge", "find_changes")  # guidance; no change (in missing)
        and (intent.wants_count or not _found_by_fewer_words(ref.invocation, invocations))
    ]
    # a service or host the environment does not know is answered first: it is what the question named
    unknown = [ref for ref in no_evidence if getattr(ref.invocation.retrieval_details, "unknown_service", False)]
    claims = [negative_claim(ref, words) for ref in unknown] + claims
    claims += [negative_claim(ref, words) for ref in no_evidence if ref not in unknown]
    missing += [no_evidence_note(ref, words) for ref in no_evidence]
    missing += _call_problems(transcript, words)
    missing += [words("missing.mentioned_not_service", name=name) for name in intent.mentioned]
    if intent.since and intent.since == intent.until:  # "since 2099-01-01", "after 20:50" past the clock
        missing.append(words("missing.empty_range", at=intent.since))
    if not intent.serves_metrics:
        missing.append(words("missing.no_metrics_served"))
    absent = _asked_items_absent(intent, question, refs)
    if absent:  # what was asked verbatim is not there: that is the answer, first
        leading = [negative_claim(ref, words) for ref in absent]
        stated = {claim["claim_text"] for claim in leading}
        claims = leading + [claim for claim in claims if claim["claim_text"] not in stated]
    if intent.narrow or absent:
        claims = claims[:NARROW_CLAIM_CAP]
    queried = [i.retrieval_details.service for i in invocations if i.retrieval_details and i.retrieval_details.service]
    if not actions and not intent.narrow and queried:
        actions.append(words("action.collect_more", services=", ".join(dict.fromkeys(queried))))
    return {
        "answer_version": ANSWER_VERSION,
        "claims": _merge_retry(claims, retry),
        "hypotheses": hypotheses,
        "recommended_actions": actions,
        "missing_info": list(dict.fromkeys(missing)),
    }


def _found_by_fewer_words(invocation: ToolInvocation, invocations: list[ToolInvocation]) -> bool:
    """Whether a word search that found nothing was searched again with some of its words and that found
    lines (a back-off: "remove failed volume" 0, "remove volume" found "Removed volume: /data/2"): its
    "no matching evidence" is no finding then, the lines are."""
    details = invocation.retrieval_details
    if invocation.tool_name != "query_logs" or details is None or len(details.keywords or []) < 2:
        return False
    words = {word.lower() for word in details.keywords}
    for other in invocations:
        found = other.retrieval_details
        if other is invocation or other.tool_name != "query_logs" or found is None or not other.success:
            continue
        fewer = {word.lower() for word in found.keywords or []}
        if found.evidence_status != "supported" or not fewer or found.range != details.range:
            continue
        if fewer < words and found.service == details.service:
            return True
        # "203.0.113.77 5xx" (no log writes a class) found by "203.0.113.77" at the level the class implies
        classes = {word for word in words if is_status_class(word)}
        if classes and fewer == words - classes and other.input_params.get("level"):
            return True
    return False


def _asked_log_claims(intent: Ask, refs: list[Ref], words: Catalogue, question: str) -> list[Claim]:
    """A broad task's log lines: symptoms (lines showing an error signal) and the lines found for what
    the question asked (a level, phrases and tokens, its words), whatever they say. A level, phrase or
    token asked outright, words asked without a why ("when did the datanode remove the failed volume?")
    or counted (the lines counted follow the count), are the answer: their lines come first; otherwise
    lines that only hold the question's words fill the places the symptoms leave."""
    symptoms = log_claims(intent, refs, words, "symptom")
    asked = [ref for ref in refs if ref.array == "logs" and _is_asked_line(intent, ref)]
    lines = log_claims(intent, asked, words, "observation", symptoms_only=False)
    typed = {claim["evidence_bindings"][0]["evidence_excerpt"]: claim for claim in symptoms}
    lines = [typed.get(claim["evidence_bindings"][0]["evidence_excerpt"], claim) for claim in lines]
    asked_first = intent.levels or intent.exact or intent.wants_count or not intent.asks("why")
    first, then = (lines, symptoms) if asked_first else (symptoms, lines)
    quoted = {claim["evidence_bindings"][0]["evidence_excerpt"] for claim in first}
    others = [claim for claim in then if claim["evidence_bindings"][0]["evidence_excerpt"] not in quoted]
    return (first + others)[:LOG_SYMPTOM_CAP]


def _asked_items_absent(intent: Ask, question: str, refs: list[Ref]) -> list[Ref]:
    """The no-evidence results of the verbatim searches when a question that asks no why (no broad cue)
    and no count found nothing it asked verbatim ("any 502s on nginx between 09:15 and 09:25?": no
    line holds 502): those negatives are the answer and lead, within NARROW_CLAIM_CAP claims as a
    narrow answer; the service's other symptoms are not what was asked. [] otherwise."""
    if not intent.exact or intent.wants_count or intent.asks("why"):
        return []
    if any(ref.array == "logs" and _holds_asked(intent, ref) for ref in refs):
        return []
    asked = {term.lower() for term in intent.exact}
    return [
        ref
        for ref in refs
        if ref.ref.raw_path == NO_EVIDENCE_PATH
        and ref.invocation.tool_name == "query_logs"
        and ref.invocation.retrieval_details
        and asked & {word.lower() for word in ref.invocation.retrieval_details.keywords or []}
    ]


def _holds_asked(intent: Ask, ref: Ref) -> bool:
    message = str(ref.item.get("message") or "")
    return any(holds(message, term) for term in intent.exact)


def _is_asked_line(intent: Ask, ref: Ref) -> bool:
    """A log line at a level the question asked, or holding every phrase and token it asked, or (none
    asked) two of the words it asked that the logs contain (one when it asked one)."""
    if intent.levels and str(ref.item.get("level") or "").upper() in intent.levels:
        return True
    message = str(ref.item.get("message") or "")
    if intent.exact:
        return all(holds(message, term) for term in intent.exact)
    text = message.lower()
    found = [term for term in intent.terms if intent.found_in(term)]
    return bool(found) and sum(term.lower() in text for term in found) >= min(2, len(found))


def _narrow_scope_notes(intent: Ask, question: str, invocations: list[ToolInvocation], words: Catalogue) -> list[str]:
    notes = []
    if not narrow_calls(intent, question):
        notes.append(words("narrow.nothing_queried"))
    if len(intent.services) > 1:
        notes.append(
            words(
                "narrow.others_unchecked",
                service=intent.services[0],
                others=", ".join(intent.services[1:]),
            )
        )
    if invocations and _asked_all_searched(intent, invocations):
        notes.append(words("narrow.only_item"))
    return notes


def _asked_all_searched(intent: Ask, invocations: list[ToolInvocation]) -> bool:
    """Whether the calls made searched every service, alert, phrase and token asked (only then is "only the
    item asked about was checked" true)."""
    searched_services: set[str] = set()
    searched_words: set[str] = set()
    for invocation in invocations:
        params = invocation.input_params or {}
        searched_services |= {str(params["service"])} if params.get("service") else set()
        searched_words |= {str(params[key]).lower() for key in ("alertname",) if params.get(key)}
        searched_words |= (
            {word.lower() for word in (invocation.retrieval_details.keywords or [])}
            if invocation.retrieval_details
            else set()
        )
    asked_words = {word.lower() for word in (*intent.alertnames[:1], *intent.exact)}
    asked_services = set(intent.services[:1]) | set(intent.unknown_services)
    return asked_words <= searched_words and asked_services <= searched_services


def _call_problems(transcript: list[Turn], words: Catalogue) -> list[str]:
    notes = []
    for turn in transcript:
        signature = Call(turn.call.name, turn.call.arguments).signature()
        if turn.invocation is None:
            reason = re.sub(r"<[^>]*>", "", turn.view).strip().split("\n", 1)[0]
            notes.append(words("call.not_run", signature=signature, reason=reason))
        elif not turn.invocation.success or (
            turn.invocation.retrieval_details and turn.invocation.retrieval_details.evidence_status == "failed"
        ):
            reason = turn.invocation.error_message or "failed"
            notes.append(words("call.failed", signature=signature, reason=reason))
    return notes


def _merge_retry(claims: list[Claim], retry: dict[str, Any] | None) -> list[Claim]:
    """Number the claims; in an evidence retry keep the verified claims that had no gap before the new ones."""
    kept: list[Claim] = []
    if retry:
        gaps = {gap.get("claim_id") for gap in retry.get("gaps") or []}
        for claim in retry.get("verified_claims") or []:
            if claim.get("claim_id") not in gaps:
                kept.append(_as_v2_claim(claim))
    cited = {(b["source_invocation_id"], b["raw_path"]) for claim in kept for b in claim["evidence_bindings"]}
    stated = {claim["claim_text"] for claim in kept}
    fresh = [
        claim
        for claim in claims
        if claim["claim_text"] not in stated
        and not any((b["source_invocation_id"], b["raw_path"]) in cited for b in claim["evidence_bindings"])
    ]
    used = {claim["claim_id"] for claim in kept}
    number = 0
    for claim in fresh:
        number += 1
        while f"claim-{number}" in used:
            number += 1
        claim["claim_id"] = f"claim-{number}"
        used.add(claim["claim_id"])
    return kept + fresh


def _as_v2_claim(claim: dict[str, Any]) -> Claim:
    """A prior verified claim (evcli.agents.projection.VerifiedClaim) as a v2 claim, its bindings
    rebuilt from the evidence that passed the gate."""
    bindings = [
        {
            "source_type": "tool_trace",
            "source_id": "",
            "tool_name": evidence.get("tool_name"),
            "source_invocation_id": evidence.get("source_invocation_id"),
            "raw_path": evidence.get("raw_path"),
            "evidence_excerpt": evidence.get("evidence_excerpt") or evidence.get("matched_text"),
        }
        for evidence in claim.get("verified_evidence") or []
    ]
    return {
        "claim_id": claim["claim_id"],
        "claim_type": claim.get("claim_type", "observation"),
        "claim_text": claim.get("claim_text", ""),
        "support_level": claim.get("support_level", "direct"),
        "evidence_bindings": bindings,
    }
