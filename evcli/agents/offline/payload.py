"""Reading a stage's payload and writing the engine's reply.

The offline engine reads only the structured payload a stage builds, never the
prompt text; a call is compared by its validated parameters, defaults filled
in, exactly as the store records it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from evcli.agents.engine import EngineReply, Usage
from evcli.agents.intent import Intent
from evcli.canonical import canonical_json
from evcli.errors import BadInput
from evcli.tools.params import validate_params

MODEL = "offline"


def reply(document: dict[str, Any]) -> EngineReply:
    return EngineReply(text=json.dumps(document, ensure_ascii=False), usage=Usage(), model=MODEL)


def intent_of(payload: dict[str, Any]) -> Intent:
    """The pipeline's intent of the question; an alert-driven run takes service and alert from the alert."""
    raw = payload.get("intent") or {}
    services, alertnames = (
        tuple(raw.get("services") or ()),
        tuple(raw.get("alertnames") or ()),
    )
    alert = payload.get("aiops_alert")
    if isinstance(alert, dict):  # alert-driven run: the alert names what the question may not
        labels: dict[str, Any] = alert["labels"] if isinstance(alert.get("labels"), dict) else alert
        services = services or tuple(str(labels[key]) for key in ("service",) if labels.get(key))
        alertnames = alertnames or tuple(str(labels[key]) for key in ("alertname",) if labels.get(key))
    return Intent(
        language=payload.get("language") or "en",
        narrow=payload.get("task_scope") == "narrow",
        services=services,
        alertnames=alertnames,
        terms=tuple(raw.get("terms") or ()),
        window=raw.get("window"),
    )


@dataclass(frozen=True)
class Call:
    name: str
    arguments: dict[str, Any]

    @property
    def key(self) -> str:
        return call_key(self.name, self.arguments)

    def signature(self) -> str:
        params = ", ".join(f"{key}={value!r}" for key, value in self.arguments.items())
        return f"{self.name}({params})"


def call_key(name: str, arguments: dict[str, Any]) -> str:
    """Calls compare by their validated parameters, defaults filled in, as the store records them."""
    try:
        arguments = validate_params(name, arguments).model_dump(exclude_none=True)
    except BadInput:
        pass
    return name + canonical_json(arguments)
