"""What changed between two gate results of the same session."""

from __future__ import annotations

from typing import Any

from evcli.contracts import CheckedBinding, GateResult


def compare(previous: GateResult, current: GateResult) -> dict[str, Any]:
    def binding_states(result: GateResult) -> dict[tuple[str, int], CheckedBinding]:
        return {(b.claim_id, b.binding_index): b for b in result.checked_bindings}

    before, after = binding_states(previous), binding_states(current)
    latest = before | after
    bindings_changed = []
    for key in sorted(latest):
        old, new = before.get(key), after.get(key)
        old_status = old.status if old else "absent"
        new_status = new.status if new else "absent"
        if old_status != new_status or (old and new and old.failed_rules != new.failed_rules):
            bindings_changed.append(
                {
                    "claim_id": key[0],
                    "binding_index": key[1],
                    "raw_path": latest[key].raw_path,
                    "before": old_status,
                    "after": new_status,
                    "failed_rules_before": old.failed_rules if old else [],
                    "failed_rules_after": new.failed_rules if new else [],
                }
            )
    return {
        "status": [previous.status, current.status],
        "severity": [previous.severity, current.severity],
        "rule_set_version": [previous.rule_set_version, current.rule_set_version],
        "rules_changed": previous.rules_hash != current.rules_hash,
        "failed_rules_added": sorted(set(current.failed_rules) - set(previous.failed_rules)),
        "failed_rules_removed": sorted(set(previous.failed_rules) - set(current.failed_rules)),
        "bindings_changed": bindings_changed,
        "unchanged": previous.severity == current.severity
        and previous.failed_rules == current.failed_rules
        and not bindings_changed,
    }
