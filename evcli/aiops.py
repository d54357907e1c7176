"""Alert-driven diagnosis: each firing alert of a payload goes through the same evidence chain.

Accepted payloads, detected by shape: an Alertmanager webhook (version 4), an
Alertmanager `GET /api/v2/alerts` list, or a Prometheus `GET /api/v1/alerts`
response. Every report is the cited answer of `ask` for that alert, plus the
alert itself (labels and annotations masked like any tool output, before they
become the question) and the AIOps rule evaluation of the seed (a report exists, it
stays on the input alert, a backend evidence tool and a runbook (knowledge) tool
were called, no other active alert became the main subject), which is stored in
`self_evaluation.aiops_rule_evaluation`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from evcli.backends.alerts import alertmanager_state
from evcli.core.errors import BadInput
from evcli.core.redaction import Redactor
from evcli.tools import registry

if TYPE_CHECKING:
    from evcli.pipeline import AskResult

EXPECTED_SHAPES = (
    'an Alertmanager webhook payload ({"version": "4", "alerts": [...]}), '
    "an Alertmanager /api/v2/alerts list ([{labels, annotations, startsAt, status}]) "
    'or a Prometheus /api/v1/alerts response ({"status": "success", "data": {"alerts": [...]}})'
)


@dataclass(frozen=True)
class AlertInput:
    alertname: str
    service: str | None
    state: str  # firing | pending | resolved | suppressed (silenced or inhibited: never diagnosed as firing)
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    starts_at: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _service(labels: dict[str, str]) -> str | None:
    return labels.get("service") or labels.get("job") or labels.get("app") or labels.get("instance")


def _alert(labels: Any, annotations: Any, state: str, starts_at: Any, where: str) -> AlertInput:
    if not isinstance(labels, dict) or not labels.get("alertname"):
        raise BadInput(f"{where}: an alert without labels.alertname; expected {EXPECTED_SHAPES}")
    # Labels and annotations become the question, the config, tool parameters and printed output: mask them here.
    redactor = Redactor.from_env()
    labels = redactor.mask({str(k): str(v) for k, v in labels.items()})
    annotations = (
        redactor.mask({str(k): str(v) for k, v in annotations.items()}) if isinstance(annotations, dict) else {}
    )
    return AlertInput(labels["alertname"], _service(labels), state, labels, annotations, starts_at)


def parse_alert_payload(data: Any, source: str = "payload") -> list[AlertInput]:
    """The alerts of any accepted payload shape; anything else is a BadInput naming the shapes."""
    if isinstance(data, dict) and isinstance(data.get("alerts"), list) and "version" in data:
        return [
            _alert(
                a.get("labels"),
                a.get("annotations"),
                "firing" if a.get("status") == "firing" else "resolved",
                a.get("startsAt"),
                f"{source} alert #{n}",
            )
            for n, a in enumerate(data["alerts"], start=1)
            if isinstance(a, dict)
        ]
    if isinstance(data, dict) and isinstance(data.get("data"), dict) and isinstance(data["data"].get("alerts"), list):
        return [
            _alert(
                a.get("labels"),
                a.get("annotations"),
                str(a.get("state") or "firing"),
                a.get("activeAt"),
                f"{source} alert #{n}",
            )
            for n, a in enumerate(data["data"]["alerts"], start=1)
            if isinstance(a, dict)
        ]
    if isinstance(data, list) and all(isinstance(a, dict) and "labels" in a for a in data):
        return [
            _alert(
                a.get("labels"),
                a.get("annotations"),
                alertmanager_state(a.get("status"))[0] or "resolved",
                a.get("startsAt"),
                f"{source} alert #{n}",
            )
            for n, a in enumerate(data, start=1)
        ]
    raise BadInput(f"{source} is not an alert payload; expected {EXPECTED_SHAPES}")


def alert_question(alert: AlertInput) -> str:
    summary = alert.annotations.get("summary") or alert.annotations.get("description") or ""
    on = f" on {alert.service}" if alert.service else ""
    return f"Diagnose the alert {alert.alertname}{on}" + (f": {summary}" if summary else "")


def diagnose_payload(pipeline, payload: Any, *, source: str = "payload") -> list[dict[str, Any]]:
    """One cited report per firing alert of the payload (every alert if none is firing)."""
    alerts = parse_alert_payload(payload, source)
    if not alerts:
        raise BadInput(f"{source} holds no alerts")
    chosen = [alert for alert in alerts if alert.state == "firing"] or alerts
    return [diagnose_alert(pipeline, alert) for alert in chosen]


def diagnose_alert(pipeline, alert: AlertInput, on_session: Callable[[str], None] | None = None) -> dict[str, Any]:
    result = pipeline.ask(alert_question(alert), mode="aiops", aiops_alert=alert.as_dict(), on_session=on_session)
    document = pipeline.store.load(result.session_id)
    active = [a for a in document.run.config.environment.alerts if a.get("state") == "firing"]
    evaluation = rule_evaluation(alert, result, document, active)
    pipeline.store.update_run(
        result.session_id, self_evaluation={**document.run.self_evaluation, "aiops_rule_evaluation": evaluation}
    )
    return {**result.model_dump(mode="json"), "alert": alert.as_dict(), "aiops_rule_evaluation": evaluation}


def rule_evaluation(alert: AlertInput, result: AskResult, document, active_alerts: list[dict]) -> dict[str, Any]:
    """The seed's AIOps checks, computed from what was recorded."""
    answer = result.answer
    text = f"{answer.answer_summary}\n{answer.user_facing_answer}".lower()
    tools = {invocation.tool_name for invocation in document.invocations}
    subject = (answer.answer_summary + " " + (result.claims[0].claim_text if result.claims else "")).lower()
    others = sorted(
        {
            a["alertname"]
            for a in active_alerts
            if a.get("alertname") and a["alertname"] != alert.alertname and a.get("service") != alert.service
        }
    )
    promoted = [name for name in others if name.lower() in subject]
    checks = {
        "report_exists": bool(answer.user_facing_answer.strip()),
        "stays_on_input_alert": alert.alertname.lower() in text
        or bool(alert.service and alert.service.lower() in text),
        "evidence_tools_called": bool(tools & set(registry.names("backend"))),
        "knowledge_consulted": bool(tools & set(registry.names("runbooks"))),
        "no_other_alert_promoted": not promoted,
    }
    return {
        **checks,
        "passed": all(checks.values()),
        "tools_called": sorted(tools),
        "other_active_alerts": others,
        "promoted_alerts": promoted,
    }


def pull_alerts(alertmanager_url: str, filters: list[str]) -> list[dict[str, Any]]:
    """The active alerts of an Alertmanager as its `/api/v2/alerts` list, filtered by label=value.

    Read by the Alertmanager backend, which escapes the filter values; its errors are `BackendError`s.
    """
    from evcli.backends.alertmanager import AlertmanagerBackend

    wanted: dict[str, str] = {}
    for item in filters:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise BadInput(f"--filter must look like label=value, got {item!r}")
        wanted[name.strip()] = value.strip()
    return AlertmanagerBackend(alertmanager_url).raw_alerts(wanted)
