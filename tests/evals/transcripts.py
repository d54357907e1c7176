"""Recorded model transcripts, replayed over real HTTP by the scripted server (tests/agents/scripted_server.py).

A transcript (`transcripts/<case id>.json`) is what a capable model answered to evcli's current
prompts and tools for one packaged question, role by role, in order:

    {"case": "<case id>", "question": "<the question, as the suite asks it>", "about": "...",
     "replies": {"planner": [REPLY], "executor": [REPLY, ...], "verifier": [REPLY], "composer": [REPLY]}}

A REPLY is a scripted-server spec with the usage the provider reported (`{"tool_calls": [...],
"content": "text said with the calls", "usage": {...}}`), or `{"document": {...}, "usage": {...}}`
for a role's JSON answer, sent as its text. `Replay` answers each request with the next reply of
its question and role, whatever order the questions come in; a request past the end of a
transcript gets an HTTP 500 naming it, so a chain that asks more than was recorded fails loudly.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.agents.scripted_server import Spec, error, role_of

TRANSCRIPTS = Path(__file__).resolve().parent / "transcripts"


@dataclass(frozen=True)
class Transcript:
    case: str
    question: str
    replies: dict[str, list[Spec]]

    def usage(self, role: str) -> tuple[int, int]:
        """(prompt, completion) tokens of the role's replies, as recorded."""
        replies = self.replies.get(role, [])
        return (
            sum(reply["usage"]["prompt_tokens"] for reply in replies),
            sum(reply["usage"]["completion_tokens"] for reply in replies),
        )


def load(case: str) -> Transcript:
    raw = json.loads((TRANSCRIPTS / f"{case}.json").read_text(encoding="utf-8"))
    replies = {role: [_spec(reply) for reply in specs] for role, specs in raw["replies"].items()}
    return Transcript(case=raw["case"], question=raw["question"], replies=replies)


def _spec(reply: dict[str, Any]) -> Spec:
    if "document" in reply:
        rest = {key: value for key, value in reply.items() if key != "document"}
        return {"content": json.dumps(reply["document"], ensure_ascii=False), **rest}
    return dict(reply)


def question_of(body: dict[str, Any]) -> str | None:
    """The question a request is about: the input document's `question` (planner, executor) or `original_query`."""
    user = next((m.get("content") for m in body.get("messages") or [] if m.get("role") == "user"), None)
    if not isinstance(user, str) or "\n" not in user:
        return None
    payload = json.loads(user.split("\n", 1)[1])
    return payload.get("question") or payload.get("original_query")


class Replay:
    """A ScriptedServer script: each request gets the next recorded reply of its question and role."""

    def __init__(self, transcripts: list[Transcript]) -> None:
        self.transcripts = {transcript.question: transcript for transcript in transcripts}
        self.used: dict[tuple[str, str], int] = {}
        self._lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> Spec:
        role, question = role_of(body), question_of(body)
        transcript = self.transcripts.get(question or "")
        if role is None or transcript is None:
            return error(500, f"no transcript for role {role} of question {question!r}")
        with self._lock:
            position = self.used.get((transcript.case, role), 0)
            self.used[(transcript.case, role)] = position + 1
        replies = transcript.replies.get(role, [])
        if position >= len(replies):
            return error(500, f"transcript {transcript.case} has {len(replies)} {role} replies; asked for one more")
        return replies[position]

    def unused(self) -> dict[tuple[str, str], int]:
        """Recorded replies no request asked for, per (case, role): empty when the chain asked for exactly them."""
        left = {
            (transcript.case, role): len(replies) - self.used.get((transcript.case, role), 0)
            for transcript in self.transcripts.values()
            for role, replies in transcript.replies.items()
        }
        return {key: count for key, count in left.items() if count}
