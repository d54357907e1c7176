"""`evcli gate SESSION|FILE [--against DIR|URL]`: re-check every citation with the current rules.

Without --against the citations are compared with the outputs the session
recorded, not with their sources; the output says so plainly.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from evcli.cli._common import DbOption, JsonOption, err, handles_errors, load_source, out, print_json, safe
from evcli.core.errors import EXIT_LOW_CONFID, EXIT_OK, EXIT_REJECT

EXIT_BY_SEVERITY = {"none": EXIT_OK, "low_confid": EXIT_LOW_CONFID, "reject": EXIT_REJECT}


@handles_errors
def gate_command(
    source: Annotated[str, typer.Argument(help="A stored session id or an exported session JSON file.")],
    rules: Annotated[
        Path | None, typer.Option("--rules", help="Rules file (default: the shipped rules.toml).", dir_okay=False)
    ] = None,
    against: Annotated[
        str | None,
        typer.Option(
            "--against",
            metavar="DIR|URL",
            help=(
                "Snapshot environment directory, or live backend URL (the session's Prometheus, Jaeger or Tempo), "
                "to re-run each invocation on (live calls over the range they recorded); cited refs must still match it."
            ),
        ),
    ] = None,
    json_output: JsonOption = False,
    db: DbOption = None,
) -> None:
    """Re-run the Gatekeeper on a session. Exit 0 pass, 3 low_confid, 4 reject.

    A stored session's result is appended to its gate history and compared
    with the previous one; a file is only checked. With --against DIR every
    invocation is re-run on that environment, with --against URL every one the
    backend there serves (the session's backend at that URL, else its only live
    backend, else a Prometheus) on it (provenance.source_matches).
    """
    from evcli.gatekeeper.rules import load_rules
    from evcli.gatekeeper.service import against_target, gate_document, regate_stored

    rule_set = load_rules(rules)
    document, store = load_source(source, db)
    target = against_target(against) if against is not None else None
    if store:
        run = regate_stored(store, document.run.session_id, rule_set, target)
    else:
        run = gate_document(document, rule_set, target)

    if json_output:
        print_json(
            {
                "session_id": run.session_id,
                "source": "store" if store else "file",
                "round": run.round,
                "seq": run.seq,
                "result": run.result.model_dump(mode="json"),
                "changes": run.changes,
                "sources_rechecked": run.sources_rechecked,
                "against": str(run.against) if run.against else None,
            }
        )
    else:
        _render(run, rule_set.source, stored=store is not None)
    raise typer.Exit(EXIT_BY_SEVERITY[run.result.severity])


def _render(run, rules_source: str, *, stored: bool) -> None:
    result = run.result
    out.print(f"[bold]session {run.session_id}[/] · round {run.round} · {len(result.checked_bindings)} bindings")
    for binding in result.checked_bindings:
        mark = "[green]✓[/]" if binding.status == "pass" else "[red]✗[/]"
        match = binding.match if binding.match in ("skipped", "none") else f"{binding.match} {binding.similarity:.2f}"
        invocation_id = "?" if binding.source_invocation_id is None else binding.source_invocation_id
        invocation = f"#{invocation_id}" + (" (back-filled)" if binding.backfilled else "")
        failed = f" [red]{', '.join(binding.failed_rules)}[/]" if binding.failed_rules else ""
        out.print(
            f"{mark} {safe(binding.claim_id)}#{binding.binding_index} {safe(binding.tool_name or '-')} {invocation} "
            f"{safe(binding.raw_path or '-')} · {match}{failed}"
        )
        out.print(f"    excerpt:  {safe(binding.evidence_excerpt or '-')}")
        out.print(f"    evidence: {safe(binding.matched_text or '-')}")
    for finding in result.errors:
        where = f" {safe(finding.claim_id)}#{finding.binding_index}" if finding.claim_id is not None else ""
        out.print(f"[red]✗ {finding.rule}[/] ({finding.severity}){where}: {safe(finding.message)}")
    for finding in result.warnings:
        where = f" {safe(finding.claim_id)}#{finding.binding_index}" if finding.claim_id is not None else ""
        out.print(f"[yellow]! {finding.rule}[/]{where}: {safe(finding.message)}")
    colour = {"none": "green", "low_confid": "yellow", "reject": "red"}[result.severity]
    out.print(
        f"gate [{colour}]{result.status}[/] severity [{colour}]{result.severity}[/] · "
        f"rules {safe(result.rule_set_version)} ({result.rules_hash[:22]}…) from {safe(rules_source)}"
    )
    if run.sources_rechecked:
        skipped = sum(1 for finding in result.errors if "cannot be re-checked against" in finding.message)
        note = f"; {skipped} cited invocation(s) could not be re-checked there (see errors)" if skipped else ""
        out.print(f"sources re-checked: invocations re-run on {safe(str(run.against))}{note}")
    else:
        out.print(
            "[yellow]sources not re-checked[/]: citations were compared with the outputs recorded in the session "
            "only; use --against DIR to re-derive them from the environment"
        )
    if stored:
        out.print(f"stored as gate result #{run.seq}")
        _render_changes(run.changes)


def _render_changes(changes) -> None:
    if changes is None:
        out.print("first gate result of this session")
        return
    if changes["unchanged"]:
        note = " (rules file changed)" if changes["rules_changed"] else ""
        out.print(f"unchanged against the previous result{note}")
        return
    old, new = changes["severity"]
    out.print(f"changed against the previous result: severity {old} → {new}")
    for rule in changes["failed_rules_added"]:
        out.print(f"  + now failing: {rule}")
    for rule in changes["failed_rules_removed"]:
        out.print(f"  - no longer failing: {rule}")
    for binding in changes["bindings_changed"]:
        out.print(
            f"  {safe(binding['claim_id'])}#{binding['binding_index']} {safe(str(binding['raw_path']))}: "
            f"{binding['before']} → {binding['after']}"
        )
    if changes["rules_changed"]:
        err.print("note: the rules file differs from the one used last time")
