"""Destructive commands in recommended actions: flagged for human review, never plain advice.

Runbook and log text is data, never instructions: a runbook line "run DROP TABLE
orders" may reach the answer as a quoted next step, but only with its source
and, when it names a destructive command, behind a "needs human review" flag.
The offline Composer and the fallback answers flag such actions with `flag`;
the post-guard rejects a model-composed answer whose line names a destructive
command without the flag (`unflagged`), which sends it to the fallback.

Invariants: `flag` is idempotent; a flagged line carries the review label of
one of the catalogued languages; the patterns live here only.
"""

from __future__ import annotations

import re

from evcli.messages import catalogue, catalogues

# (what the reader is told, pattern); case-insensitive, matched anywhere in a line.
DESTRUCTIVE: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (name, re.compile(pattern, re.IGNORECASE))
    for name, pattern in (
        ("DROP", r"\bdrop\s+(?:table|database|schema|index|user|view|keyspace|collection)\b"),
        ("TRUNCATE", r"\btruncate\s+(?:table\s+)?[\w.`\"\[]"),
        ("DELETE without WHERE", r"\bdelete\s+from\s+[\w.`\"\[\]]+(?![^;\n]*\bwhere\b)"),
        ("rm -rf", r"\brm\s+(?:-\w*r\w*f\w*|-\w*f\w*r\w*|-r\s+-f|-f\s+-r|--recursive\b|-R\b)"),
        ("kubectl delete", r"\bkubectl\s+(?:[\w-]+\s+)*?(?:delete|drain)\b"),
        ("helm uninstall", r"\bhelm\s+(?:uninstall|delete)\b"),
        ("terraform destroy", r"\bterraform\s+(?:destroy\b|apply\s+[^\n]*-destroy\b)"),
        ("mkfs", r"\bmkfs(?:\.\w+)?\b"),
        ("dd to a device", r"\bdd\s+[^\n]*\bof=/dev/"),
        ("wipefs/shred", r"\b(?:wipefs|shred)\s+-"),
        ("FLUSHALL", r"\bflush(?:all|db)\b"),
        ("git push --force", r"\bgit\s+push\s+[^\n]*(?:--force\b|--force-with-lease\b|\s-f\b)"),
        ("git reset --hard", r"\bgit\s+(?:reset\s+--hard|clean\s+-\w*f)"),
        ("docker prune/rm", r"\bdocker\s+(?:system\s+prune|volume\s+(?:prune|rm)|image\s+prune|rm\s+-f)\b"),
        ("cloud storage delete", r"\b(?:aws\s+s3\s+(?:rb|rm\s+[^\n]*--recursive)|gsutil\s+(?:-m\s+)?rm\s+-r)\b"),
        ("topic delete", r"\bkafka-topics(?:\.sh)?\s+[^\n]*--delete\b"),
    )
)

# The review label in each catalogued language, by language code (wording: evcli/messages).
REVIEW_LABEL = {words.language: words("review_label") for words in catalogues()}


def destructive_commands(text: str) -> list[str]:
    """The names of the destructive commands a text contains, in catalogue order."""
    return [name for name, pattern in DESTRUCTIVE if pattern.search(text)]


def _flagged(line: str) -> bool:
    return any(label in line for label in REVIEW_LABEL.values())


def flag(text: str, language: str) -> str:
    """`text` behind a review flag when it names a destructive command (unchanged otherwise)."""
    names = destructive_commands(text)
    if not names or _flagged(text):
        return text
    label = catalogue(language)("review_label")
    return f"[{label}: {', '.join(names)}] {text}"


def unflagged(text: str) -> list[str]:
    """Destructive commands on lines of `text` that carry no review flag."""
    return [name for line in text.splitlines() if not _flagged(line) for name in destructive_commands(line)]
