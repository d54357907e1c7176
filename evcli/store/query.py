"""Which sessions `evcli sessions` (and `evcli serve`'s list) shows: SessionQuery builds the SQL filter
over `diagnosis_run r`; a run's environment is read from its stored config."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from evcli.store.ownership import ACTIVE_STATUSES, INTERRUPTED

# The environment of a run, read from its stored config: the snapshot directory, or live backends.
ENV_DIR_SQL = "json_extract(r.config, '$.env.env_dir')"
ENV_LIVE_SQL = "(SELECT count(*) FROM json_each(r.config, '$.env') e WHERE e.key NOT IN ('env_dir', 'runbooks'))"


def iso_utc(moment: datetime) -> str:
    """`moment` in the form `created_at` is stored in (UTC, microseconds, `Z`), so strings compare as times."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def environment_label(env_dir: str | None, live: bool) -> str:
    """What a session ran on, in one word: its snapshot directory's name (`demo`, `host`,
    `incident-0708`), `live` for backends only, `demo` when nothing was named."""
    if env_dir:
        return Path(env_dir).name or env_dir
    return "live" if live else "demo"


class SessionQuery(BaseModel):
    """Which sessions `evcli sessions` lists; every field given must match (AND)."""

    model_config = ConfigDict(frozen=True)

    env: str | None = None  # the environment label, or a snapshot directory's path
    verdict: str | None = None
    status: str | None = None
    mode: str | None = None
    since: datetime | None = None
    text: str | None = None  # a substring of the question, case-insensitive for ASCII

    def where(self) -> tuple[str, list[Any]]:
        """The SQL WHERE clause (possibly empty) over `diagnosis_run r` and its parameters."""
        clauses: list[str] = []
        params: list[Any] = []
        if self.verdict:
            clauses.append("upper(r.verdict) = upper(?)")
            params.append(self.verdict)
        if self.status and self.status not in (*ACTIVE_STATUSES, INTERRUPTED):
            clauses.append("r.status = ?")
            params.append(self.status)
        elif self.status:  # an active run may show as interrupted, an interrupted one is stored so
            clauses.append("r.status IN (?, ?, ?)")
            params += [*ACTIVE_STATUSES, INTERRUPTED]
        if self.mode:
            clauses.append("r.mode = ?")
            params.append(self.mode)
        if self.since:
            clauses.append("r.created_at >= ?")
            params.append(iso_utc(self.since))
        if self.text:  # instr, not LIKE: a LIKE pattern is limited to 50,000 bytes, a question is not
            clauses.append("instr(lower(r.question), lower(?)) > 0")
            params.append(self.text)
        if self.env:
            clauses.append(self._env_clause())
            params += self._env_params()
        return ("WHERE " + " AND ".join(clauses)) if clauses else "", params

    def _env_clause(self) -> str:
        named_demo = f"({ENV_DIR_SQL} IS NULL AND {ENV_LIVE_SQL} = 0 AND ? = 'demo')"
        named_live = f"({ENV_DIR_SQL} IS NULL AND {ENV_LIVE_SQL} > 0 AND ? = 'live')"
        by_dir = f"({ENV_DIR_SQL} = ? OR substr({ENV_DIR_SQL}, -length(?) - 1) = '/' || ?)"
        return f"({named_demo} OR {named_live} OR {by_dir})"

    def _env_params(self) -> list[Any]:
        env = str(self.env)
        given = Path(env).expanduser()
        full = str(given.resolve()) if given.is_dir() else env
        name = given.name or env
        return [env, env, full, name, name]


def since_moment(text: str | None) -> datetime | None:
    """`--since` of a session list: `7d` / `12h` back from now, else a time expression in the local zone."""
    if text is None:
        return None
    from evcli.core.time import TimeExpressionError, parse_duration, parse_time

    now = datetime.now(UTC).astimezone()
    try:
        return now - parse_duration(text)
    except TimeExpressionError:
        return parse_time(text, clock=now, tz=now.tzinfo or UTC)
