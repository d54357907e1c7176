"""The session list page (`GET /`): newest first, with the filters of `evcli sessions` as a GET form.

Invariants as in the HTML report: inline CSS only, a Content-Security-Policy that forbids every fetch and
every script, and every stored value through `html.escape`.
"""

from __future__ import annotations

from html import escape
from typing import Any
from urllib.parse import quote

POLICY = "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'"
FILTERS = (
    ("q", "question contains"),
    ("env", "environment"),
    ("verdict", "verdict"),
    ("status", "status"),
    ("mode", "mode"),
    ("since", "since (7d, 12h, a time)"),
)
_STYLE = """
:root{color-scheme:light dark}body{margin:0 auto;max-width:75rem;padding:1.2rem;
font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif}
table{border-collapse:collapse;width:100%}th,td{border-bottom:1px solid #8884;padding:.3rem .4rem;text-align:left;
vertical-align:top}.mono{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:.85rem}
form{display:flex;flex-wrap:wrap;gap:.5rem;margin:.8rem 0}label{display:flex;flex-direction:column;font-size:.8rem}
.PASS{color:#1a7f37}.LOW_CONFID{color:#9a6700}.REJECT{color:#cf222e}.muted{color:#6e7781}
"""


def session_list(rows: list[dict[str, Any]], alerts: dict[str, dict[str, Any]], filters: dict[str, str]) -> str:
    """The page: a filter form and one row per session (its alert and resolution when a delivery made it)."""
    fields = "".join(
        f'<label>{escape(label)}<input name="{name}" value="{escape(filters.get(name, ""))}"></label>'
        for name, label in FILTERS
    )
    body = "".join(_row(row, alerts.get(row["session_id"])) for row in rows)
    empty = '<p class="muted">no session matches</p>' if not rows else ""
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{POLICY}">'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        f"<title>evcli sessions</title><style>{_STYLE}</style></head><body><h1>evcli sessions</h1>"
        f'<form method="get" action="/">{fields}<button type="submit">filter</button></form>'
        "<table><thead><tr><th>session</th><th>created</th><th>env</th><th>status</th><th>verdict</th>"
        f"<th>alert</th><th>question</th></tr></thead><tbody>{body}</tbody></table>{empty}</body></html>\n"
    )


def _row(row: dict[str, Any], alert: dict[str, Any] | None) -> str:
    session = escape(row["session_id"])
    link = quote(row["session_id"], safe="")
    verdict = row["verdict"] or "-"
    return (
        f'<tr><td class="mono"><a href="/sessions/{link}">{session}</a> '
        f'<a class="muted" href="/sessions/{link}.json">json</a></td>'
        f'<td class="mono">{escape(row["created_at"][:19].replace("T", " "))}</td>'
        f"<td>{escape(row['environment'])}</td><td>{escape(row['status'])}</td>"
        f'<td class="{escape(verdict)}">{escape(verdict)}</td><td>{_alert(alert)}</td>'
        f"<td>{escape(row['question'] or '')}</td></tr>"
    )


def _alert(alert: dict[str, Any] | None) -> str:
    if alert is None:
        return '<span class="muted">-</span>'
    resolved = alert.get("resolved_at")
    state = f"resolved {escape(resolved[:19].replace('T', ' '))}" if resolved else "firing"
    return f'{escape(alert["alertname"])} <span class="muted">({state})</span>'
