"""An environment snapshot directory as an evidence backend (DESIGN §5).

```
DIR/env.toml          name, timezone, now, [services.NAME] aliases
DIR/alerts.json       Prometheus /api/v1/alerts, Alertmanager /api/v2/alerts or webhook payload
DIR/logs/NAME.log     raw lines; NAME.jsonl one JSON object a line
DIR/metrics/NAME.csv  timestamp column, then one column per metric (`cpu_usage[%]`)
DIR/runbooks/**/*.md  knowledge documents (indexed by evcli.kb, not read here)
```

The snapshot has its own clock (`now`): env.toml's `now`, else the newest
timestamp in the snapshot, so an old incident answers as it would have then.
Log files are streamed: a query keeps only the newest `limit` matches.
Every file is read through `evcli.backends.files`: only regular files inside
the directory, lines of bounded length, and a tool call's deadline checked as
lines are read.
The parsing helpers are public because `envcheck` reports on the same files
with the same rules.
"""

from __future__ import annotations

import csv
import difflib
import json
import math
import re
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, timezone, tzinfo
from functools import cached_property
from pathlib import Path
from typing import Any, NamedTuple
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from evcli.backends.alerts import (
    STATE_FILTERS,
    active_in,
    alert_record,
    alertmanager_state,
    iso_utc,
    service_of,
)
from evcli.backends.base import (
    BackendError,
    LogQuery,
    LogResult,
    MetricsResult,
    TimeWindow,
)
from evcli.backends.files import Lines, open_text, read_text
from evcli.backends.logformats import ParseContext
from evcli.backends.snapshot_metrics import (
    MetricColumn,
    MetricFileError,
    close_names,
    find_columns,
    read_metric_file,
    summarise,
)
from evcli.timerange import TimeRange

ENV_FILE = "env.toml"
ALERTS_FILE = "alerts.json"
LOGS_DIR = "logs"
METRICS_DIR = "metrics"
RUNBOOKS_DIR = "runbooks"
LOG_SUFFIXES = (".log", ".jsonl")
METRIC_SUFFIX = ".csv"
ENV_KEYS = frozenset({"name", "timezone", "now", "services"})
SERVICE_KEYS = frozenset({"aliases"})

ALERT_SHAPES = {
    "prometheus": 'Prometheus GET /api/v1/alerts response ({"status": "success", "data": {"alerts": [...]}})',
    "alertmanager-v2": "Alertmanager GET /api/v2/alerts list ([{labels, annotations, startsAt, ...}])",
    "alertmanager-webhook": 'Alertmanager webhook payload ({"version": "4", "alerts": [...]})',
}

_MONTHS = {
    name: number
    for number, name in enumerate(
        ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"), 1
    )
}

# A timestamp at the start of a line, optionally in brackets: ISO-8601 (T or space,
# `.`/`,` fraction, Z or offset), `YYYY/MM/DD HH:MM:SS`, or syslog `Jul 08 23:05:28`.
_STAMP = re.compile(
    r"\[?(?:"
    r"(?P<y>\d{4})-(?P<mo>\d\d)-(?P<d>\d\d)[Tt ](?P<h>\d\d):(?P<mi>\d\d):(?P<s>\d\d)"
    r"(?:[.,](?P<frac>\d{1,9}))?(?P<off>[Zz](?![A-Za-z0-9])|\s?[+-]\d\d:?\d\d(?![\d:]))?"
    r"|(?P<sy>\d{4})/(?P<smo>\d\d)/(?P<sd>\d\d) (?P<sh>\d\d):(?P<smi>\d\d):(?P<ss>\d\d)"
    r"|(?P<mon>(?i:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)) +(?P<md>\d{1,2})"
    r" (?P<mh>\d\d):(?P<mmi>\d\d):(?P<ms>\d\d)"
    r")\]?"
)
_EPOCH = re.compile(r"^\d{9,13}(?:\.\d+)?$")
_VALUE_WITH_UNIT = re.compile(r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*(%|[A-Za-z/]+)?\s*$")


def demo_env_dir() -> Path:
    """The packaged demo environment (`evcli/demo/`), installed or checked out."""
    return Path(__file__).resolve().parent.parent / "demo"


# --- env.toml ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class EnvConfig:
    name: str | None = None
    timezone_name: str = "UTC"
    timezone: tzinfo = UTC
    now: datetime | None = None
    services: dict[str, tuple[str, ...]] = field(default_factory=dict)  # service -> aliases
    warnings: tuple[str, ...] = ()  # unknown keys: readable, but probably a typo


def load_env_config(path: Path) -> EnvConfig:
    """env.toml as a config; a missing file is the default. Raises BackendError when unusable."""
    if not path.exists():
        return EnvConfig()
    try:
        data = tomllib.loads(read_text(path, path.parent))
    except (OSError, UnicodeDecodeError) as error:
        raise BackendError(f"{ENV_FILE}: cannot read: {error}") from error
    except tomllib.TOMLDecodeError as error:
        raise BackendError(f"{ENV_FILE}: invalid TOML: {error}") from error

    warnings = [f"unknown key {key!r} (expected {', '.join(sorted(ENV_KEYS))})" for key in data if key not in ENV_KEYS]
    name = data.get("name")
    if name is not None and not isinstance(name, str):
        raise BackendError(f"{ENV_FILE}: name must be a string")
    zone_name = data.get("timezone", "UTC")
    try:
        zone: tzinfo = UTC if zone_name == "UTC" else ZoneInfo(zone_name)
    except (ZoneInfoNotFoundError, ValueError, TypeError) as error:
        raise BackendError(f"{ENV_FILE}: unknown timezone {zone_name!r} (use an IANA name)") from error
    now = _config_now(data.get("now"), zone)
    services = _config_services(data.get("services", {}), warnings)
    return EnvConfig(name, zone_name, zone, now, services, tuple(warnings))


def _config_now(raw: Any, zone: tzinfo) -> datetime | None:
    if raw is None:
        return None
    if isinstance(raw, datetime):
        return (raw if raw.tzinfo else raw.replace(tzinfo=zone)).astimezone(UTC)
    moment = parse_timestamp(raw, Timebase.of(zone)) if isinstance(raw, str) else None
    if moment is None:
        raise BackendError(f"{ENV_FILE}: now must be an ISO-8601 date and time, got {raw!r}")
    return moment


def _config_services(raw: Any, warnings: list[str]) -> dict[str, tuple[str, ...]]:
    if not isinstance(raw, dict):
        raise BackendError(f"{ENV_FILE}: services must be a table of [services.NAME] tables")
    services: dict[str, tuple[str, ...]] = {}
    owner: dict[str, str] = {name.lower(): name for name in raw}
    for service, table in raw.items():
        if not isinstance(table, dict):
            raise BackendError(f"{ENV_FILE}: services.{service} must be a table")
        warnings.extend(
            f"unknown key {key!r} in services.{service} (expected aliases)" for key in table if key not in SERVICE_KEYS
        )
        aliases = table.get("aliases", [])
        if not isinstance(aliases, list) or not all(isinstance(alias, str) and alias.strip() for alias in aliases):
            raise BackendError(f"{ENV_FILE}: services.{service}.aliases must be a list of names")
        for alias in aliases:
            claimed = owner.setdefault(alias.lower(), service)
            if claimed != service:
                raise BackendError(
                    f"{ENV_FILE}: alias {alias!r} of {service} is already the name or an alias of {claimed}"
                )
        services[service] = tuple(aliases)
    return services


# --- timestamps ----------------------------------------------------------------------------------


class Timebase(NamedTuple):
    """How to complete a timestamp: the zone of naive ones, the year of syslog ones."""

    zone: tzinfo
    anchor: datetime | None  # snapshot time near which syslog dates fall
    fallback_year: int

    @classmethod
    def of(cls, zone: tzinfo) -> Timebase:
        """For values that are not log lines: syslog dates (rare there) fall in the current year."""
        return cls(zone, None, datetime.now(UTC).year)

    def syslog(self, month: int, day: int, hour: int, minute: int, second: int) -> datetime:
        year = self.anchor.astimezone(self.zone).year if self.anchor else self.fallback_year
        moment = datetime(year, month, day, hour, minute, second, tzinfo=self.zone).astimezone(UTC)
        if self.anchor and moment - self.anchor > timedelta(days=2):  # December lines in a January snapshot
            moment = datetime(year - 1, month, day, hour, minute, second, tzinfo=self.zone).astimezone(UTC)
        return moment


def stamp_time(match: re.Match[str], timebase: Timebase) -> datetime | None:
    """The UTC datetime of a `_STAMP` match, or None when its fields are out of range."""
    try:
        if match["y"]:
            fraction = (match["frac"] or "").ljust(6, "0")[:6]
            offset = match["off"]
            naive = datetime(
                int(match["y"]), int(match["mo"]), int(match["d"]),
                int(match["h"]), int(match["mi"]), int(match["s"]), int(fraction),
            )  # fmt: skip
            return naive.replace(tzinfo=_offset_zone(offset.strip()) if offset else timebase.zone).astimezone(UTC)
        if match["sy"]:
            naive = datetime(
                int(match["sy"]), int(match["smo"]), int(match["sd"]),
                int(match["sh"]), int(match["smi"]), int(match["ss"]),
            )  # fmt: skip
            return naive.replace(tzinfo=timebase.zone).astimezone(UTC)
        return timebase.syslog(
            _MONTHS[match["mon"].lower()],
            int(match["md"]),
            int(match["mh"]),
            int(match["mmi"]),
            int(match["ms"]),
        )
    except ValueError:
        return None


def _offset_zone(offset: str) -> tzinfo:
    if offset in ("Z", "z"):
        return UTC
    digits = offset[1:].replace(":", "")
    delta = timedelta(hours=int(digits[:2]), minutes=int(digits[2:]))
    return timezone(-delta if offset[0] == "-" else delta)


def parse_timestamp(value: Any, timebase: Timebase) -> datetime | None:
    """A whole value as a UTC time: an ISO-8601/log-style string or epoch seconds/milliseconds."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return _epoch(float(value))
    if not isinstance(value, str):
        return None
    text = value.strip()
    if _EPOCH.match(text):
        return _epoch(float(text))
    match = _STAMP.match(text)
    if match is None or match.end() != len(text):
        return None
    return stamp_time(match, timebase)


def _epoch(seconds: float) -> datetime | None:
    if not math.isfinite(seconds):
        return None
    if seconds > 1e11:  # milliseconds
        seconds /= 1000
    try:
        return datetime.fromtimestamp(seconds, UTC)
    except (OverflowError, OSError, ValueError):
        return None


# --- alerts --------------------------------------------------------------------------------------


class AlertItemError(ValueError):
    """One alert of alerts.json that cannot be read (the others still can)."""


@dataclass(frozen=True)
class SnapshotAlert:
    labels: dict[str, str]
    annotations: dict[str, str]
    state: str  # firing / pending / resolved / suppressed, as the file states it
    active_at: datetime | None
    ends_at: datetime | None
    value: str | None  # Prometheus' sample value, or an Alertmanager annotation value/current
    silenced_by: tuple[str, ...] = ()  # Alertmanager silence ids
    inhibited_by: tuple[str, ...] = ()  # fingerprints of the inhibiting alerts


@dataclass
class AlertsFile:
    shape: str  # a key of ALERT_SHAPES
    alerts: list[SnapshotAlert]
    problems: list[str]  # items that could not be read, "alerts[3]: ..."


def read_alerts(path: Path, zone: tzinfo = UTC) -> AlertsFile:
    """alerts.json in any of the three shapes. Raises BackendError when the file is unusable;
    unusable items are reported in `problems` and left out."""
    try:
        data = json.loads(read_text(path, path.parent))
    except (OSError, UnicodeDecodeError) as error:
        raise BackendError(f"{ALERTS_FILE}: cannot read: {error}") from error
    except ValueError as error:
        raise BackendError(f"{ALERTS_FILE}: invalid JSON: {error}") from error
    shape, items = _alerts_shape(data)
    alerts, problems = [], []
    for index, item in enumerate(items):
        try:
            alerts.append(_snapshot_alert(shape, item, zone))
        except AlertItemError as error:
            problems.append(f"alerts[{index}]: {error}")
    return AlertsFile(shape, alerts, problems)


def _alerts_shape(data: Any) -> tuple[str, list[Any]]:
    if isinstance(data, list):
        return "alertmanager-v2", data
    if isinstance(data, dict):
        inner = data.get("data")
        if isinstance(inner, dict) and isinstance(inner.get("alerts"), list):
            if data.get("status", "success") != "success":
                raise BackendError(f"{ALERTS_FILE}: Prometheus reported status {data.get('status')!r}")
            return "prometheus", inner["alerts"]
        if isinstance(data.get("alerts"), list):
            return "alertmanager-webhook", data["alerts"]
    expected = "; ".join(ALERT_SHAPES.values())
    raise BackendError(f"{ALERTS_FILE}: unknown alerts shape; expected one of: {expected}")


def _snapshot_alert(shape: str, item: Any, zone: tzinfo) -> SnapshotAlert:
    if not isinstance(item, dict):
        raise AlertItemError("not an object")
    labels, annotations = item.get("labels"), item.get("annotations") or {}
    if not isinstance(labels, dict) or not labels.get("alertname"):
        raise AlertItemError("labels.alertname is missing")
    if not isinstance(annotations, dict):
        raise AlertItemError("annotations is not an object")
    labels = {str(key): str(value) for key, value in labels.items()}
    annotations = {str(key): str(value) for key, value in annotations.items()}
    if shape == "prometheus":
        state = {"firing": "firing", "pending": "pending", "inactive": "resolved"}.get(item.get("state", ""))
        started, ended, value = item.get("activeAt"), None, item.get("value")
    else:
        if shape == "alertmanager-v2":
            status = item.get("status") or {}  # hand-written snapshots may omit it: active
            if not isinstance(status, dict):
                raise AlertItemError(f"status of {labels['alertname']} is not an object")
            state, silenced, inhibited = alertmanager_state(status)
        else:
            state = {"firing": "firing", "resolved": "resolved"}.get(item.get("status", ""))
        started, ended = item.get("startsAt"), item.get("endsAt")
        value = annotations.get("value", annotations.get("current"))
    if state is None:
        raise AlertItemError(f"unknown state in {labels['alertname']}")
    active_at = _alert_time(started, zone, "activeAt" if shape == "prometheus" else "startsAt")
    ends_at = _alert_time(ended, zone, "endsAt")
    suppression = (tuple(silenced), tuple(inhibited)) if shape == "alertmanager-v2" else ((), ())
    return SnapshotAlert(
        labels, annotations, state, active_at, ends_at, None if value is None else str(value), *suppression
    )


def _alert_time(raw: Any, zone: tzinfo, name: str) -> datetime | None:
    if raw in (None, "") or (isinstance(raw, str) and raw.startswith("0001-01-01")):
        return None
    moment = parse_timestamp(raw, Timebase.of(zone))
    if moment is None:
        raise AlertItemError(f"{name} {raw!r} is not an ISO-8601 time")
    return moment


def alert_state_at(alert: SnapshotAlert, now: datetime) -> str:
    """The alert's state at `now`: an alert whose endsAt has passed is resolved."""
    if alert.state != "resolved" and alert.ends_at is not None and alert.ends_at <= now:
        return "resolved"
    return alert.state


def split_value(raw: str | None) -> tuple[float | None, str]:
    """`"92"` → (92.0, ""), `"92%"` → (92.0, "%"), `"4.2s"` → (4.2, "s"); NaN or text → (None, "")."""
    match = _VALUE_WITH_UNIT.match(raw or "")
    if not match:
        return None, ""
    number = float(match.group(1))
    return (number, match.group(2) or "") if math.isfinite(number) else (None, "")


def _unknown_metric(metric: str, name: str, columns: list[MetricColumn]) -> str:
    """`no metric 'cpu' in metrics/x.csv; close: cpu_usage (has cpu_usage, heap_used)`."""
    close = close_names(columns, metric)
    hint = f"; close: {', '.join(close)}" if close else ""
    available = ", ".join(column.header for column in columns)
    return f"no metric {metric!r} in {name}{hint} (has {available})"


# --- the backend ---------------------------------------------------------------------------------


class SnapshotBackend:
    """Alerts, metric series and logs read from an environment snapshot directory."""

    def __init__(self, directory: Path, *, config: EnvConfig | None = None) -> None:
        """`config` replaces env.toml (env check goes on with defaults when env.toml is broken)."""
        self.directory = Path(directory)
        if not self.directory.is_dir():
            raise BackendError(f"snapshot directory {self.directory} does not exist or is not a directory")
        if config is not None:
            self.config = config

    # configuration and files

    @cached_property
    def config(self) -> EnvConfig:
        return load_env_config(self.directory / ENV_FILE)

    @cached_property
    def name(self) -> str:
        try:
            return self.config.name or self.directory.name
        except BackendError:
            return self.directory.name  # the config error surfaces on the first query

    def files(self, folder: str, suffixes: tuple[str, ...]) -> list[Path]:
        """Entries directly in `folder` named `*<suffix>`, sorted, hidden files left out. A directory
        named like a file is included, so that reading it fails loudly instead of being skipped."""
        root = self.directory / folder
        if not root.is_dir():
            return []
        return sorted(path for path in root.iterdir() if path.suffix in suffixes and not path.name.startswith("."))

    def service_of_file(self, path: Path) -> str:
        return self._alias_target(path.stem) or path.stem

    def log_files(self, service: str | None = None) -> list[Path]:
        """The `.log`/`.jsonl` files of a (resolved) service, or of every service."""
        paths = self.files(LOGS_DIR, LOG_SUFFIXES)
        return [path for path in paths if service is None or self.service_of_file(path) == service]

    def metric_files(self, service: str | None = None) -> list[Path]:
        paths = self.files(METRICS_DIR, (METRIC_SUFFIX,))
        return [path for path in paths if service is None or self.service_of_file(path) == service]

    def relative(self, path: Path) -> str:
        return path.relative_to(self.directory).as_posix()

    # services

    @cached_property
    def _aliases(self) -> dict[str, str]:
        """Lower-cased alias or service name → declared service."""
        table: dict[str, str] = {}
        for service, aliases in self.config.services.items():
            table[service.lower()] = service
            for alias in aliases:
                table[alias.lower()] = service
        return table

    def _alias_target(self, name: str) -> str | None:
        return self._aliases.get(name.strip().lower())

    def service_aliases(self) -> dict[str, list[str]]:
        """Declared services and their aliases (env.toml)."""
        return {service: list(aliases) for service, aliases in self.config.services.items()}

    @cached_property
    def _file_services(self) -> list[str]:
        """Services named by env.toml and by log and metric file names."""
        names = dict.fromkeys(self.config.services)
        for path in self.files(LOGS_DIR, LOG_SUFFIXES) + self.files(METRICS_DIR, (METRIC_SUFFIX,)):
            names.setdefault(self.service_of_file(path))
        return list(names)

    @cached_property
    def _alert_services(self) -> list[str]:
        names = (self.alert_service(alert.labels) for alert in self._alerts.alerts)
        return list(dict.fromkeys(name for name in names if name))

    def alert_service(self, labels: dict[str, str]) -> str:
        label = service_of(labels)
        return (self._alias_target(label) or label) if label else ""

    def known_services(self) -> list[str]:
        """env.toml services, log/metric file names and alert service labels (BackendError when
        alerts.json cannot be read)."""
        return sorted(set(self._file_services) | set(self._alert_services))

    def resolve_service(self, name: str) -> str | None:
        """The service a name or alias denotes (case-insensitive), or None when unknown.

        Names found in env.toml and file names resolve without reading alerts.json, so a broken
        alerts file does not stop log queries for a service that is otherwise known."""
        key = name.strip().lower()
        target = self._alias_target(key)
        if target:
            return target
        for service in self._file_services:
            if service.lower() == key:
                return service
        for service in self._alert_services:
            if service.lower() == key:
                return service
        return None

    def close_matches(self, name: str) -> list[str]:
        """Known services whose name or an alias looks like `name`: difflib ratio ≥ 0.8 (a shared
        `-service` suffix alone scores about 0.7), or one name containing the other."""
        key = name.strip().lower()
        candidates = {service.lower(): service for service in self.known_services()}
        candidates.update({alias: service for alias, service in self._aliases.items()})
        close = difflib.get_close_matches(key, list(candidates), n=5, cutoff=0.8)
        close += [candidate for candidate in candidates if key and (key in candidate or candidate in key)]
        return list(dict.fromkeys(candidates[candidate] for candidate in close))

    def unknown_service_message(self, name: str) -> str:
        similar = self.close_matches(name)
        if similar:
            return f"unknown service {name!r}; known services with similar names: {', '.join(similar)}"
        known = self.known_services()
        if known:
            return f"unknown service {name!r}; known services: {', '.join(known)}"
        return f"unknown service {name!r}; this snapshot has no services"

    # clock

    def now(self) -> datetime:
        return self.clock[0]

    @cached_property
    def clock(self) -> tuple[datetime, str]:
        """(now, where it came from): env.toml `now`, else the newest timestamp in the snapshot."""
        if self.config.now is not None:
            return self.config.now, f"{ENV_FILE} now"
        newest, errors = self.newest_timestamp()
        if errors:
            raise BackendError(f"cannot tell the snapshot's time: {errors[0]}")
        if newest is None:
            return datetime.now(UTC).replace(microsecond=0), "wall clock (the snapshot has no timestamps)"
        return newest[0], f"newest timestamp ({newest[1]})"

    def newest_timestamp(self) -> tuple[tuple[datetime, str] | None, list[str]]:
        """The newest (timestamp, file) among alert starts, metric rows and log lines, and the
        errors of the files that could not be read."""
        spans, errors = self._structured_times
        candidates, errors = [(last, source) for _, last, source in spans], list(errors)
        for path, (_, last, error) in self._log_edges.items():
            if error:
                errors.append(error)
            elif last is not None:
                candidates.append((last, self.relative(path)))
        return (max(candidates) if candidates else None), errors

    @cached_property
    def _structured_times(self) -> tuple[list[tuple[datetime, datetime, str]], list[str]]:
        """(oldest, newest, file) of alerts.json (alert starts) and of each metric file, and the
        errors of the files that failed."""
        spans: list[tuple[datetime, datetime, str]] = []
        errors: list[str] = []
        try:
            starts = [alert.active_at for alert in self._alerts.alerts if alert.active_at]
        except BackendError as error:
            errors.append(str(error))
        else:
            if starts:
                spans.append((min(starts), max(starts), ALERTS_FILE))
        for path in self.files(METRICS_DIR, (METRIC_SUFFIX,)):
            try:
                with self._reading(path) as handle:
                    _, rows = read_metric_file(handle, self.config.timezone)
                    stamps = [row.timestamp for row in rows if row.timestamp]
            except BackendError as error:
                errors.append(str(error))
                continue
            except csv.Error as error:
                errors.append(f"{self.relative(path)}: invalid CSV: {error}")
                continue
            if stamps:
                spans.append((min(stamps), max(stamps), self.relative(path)))
        return spans, errors

    @cached_property
    def span(self) -> TimeRange | None:
        """The whole snapshot: its oldest timestamp (alert starts, metric rows, log files) to its
        clock, or to a newer timestamp of its files. It is the same for every service, so two
        queries of the whole snapshot state one range; None when nothing in it has a time.
        Files that cannot be read are left out (a query of them reports the error)."""
        spans, _ = self._structured_times
        firsts = [first for first, _, _ in spans]
        lasts = [last for _, last, _ in spans]
        for first, last, _ in self._log_edges.values():
            firsts += [first] if first is not None else []
            lasts += [last] if last is not None else []
        if not firsts:
            return None
        return TimeRange(min(firsts), max([*lasts, self.now()]))

    @cached_property
    def _syslog_anchor(self) -> datetime | None:
        """Where syslog dates (no year) are placed: env.toml now, else the newest alert/metric time."""
        if self.config.now is not None:
            return self.config.now
        spans, _ = self._structured_times  # a year guess; broken files are reported elsewhere
        return max(last for _, last, _ in spans) if spans else None

    def timebase_for(self, path: Path) -> Timebase:
        """How timestamps of one file are completed. Metric files, which place the syslog anchor
        themselves, only use env.toml's now."""
        try:
            fallback = datetime.fromtimestamp(path.stat().st_mtime, UTC).year
        except OSError:
            fallback = datetime.now(UTC).year
        anchor = self._syslog_anchor if path.suffix != METRIC_SUFFIX else self.config.now
        return Timebase(self.config.timezone, anchor, fallback)

    def parse_context(self, path: Path) -> ParseContext:
        """What completes a log file's timestamps: the environment zone, and the clock that places
        syslog/glog lines without a year (env.toml now, else the newest alert/metric time, else
        the file's modification time)."""
        clock = self._syslog_anchor
        if clock is None:
            try:
                clock = datetime.fromtimestamp(path.stat().st_mtime, UTC)
            except OSError:
                clock = datetime.now(UTC)
        return ParseContext(clock=clock, tz=self.config.timezone)

    @cached_property
    def _log_edges(self) -> dict[Path, tuple[datetime | None, datetime | None, str]]:
        """(oldest, newest, error) of each log file, from its head and tail: the clock and the span
        must not cost a full scan. A file that cannot be read has its error and no times."""
        from evcli.backends.snapshot_logs import edge_timestamps

        edges: dict[Path, tuple[datetime | None, datetime | None, str]] = {}
        for path in self.files(LOGS_DIR, LOG_SUFFIXES):
            try:
                edges[path] = (*edge_timestamps(path, self.directory, self.parse_context(path)), "")
            except OSError as error:
                edges[path] = (None, None, f"{self.relative(path)}: cannot read: {error}")
            except BackendError as error:
                edges[path] = (None, None, str(error))
        return edges

    @contextmanager
    def _reading(self, path: Path) -> Iterator[Lines]:
        """The bounded lines of a snapshot file; any read error (a refused file too) becomes a
        BackendError naming the file."""
        try:
            with open_text(path, self.directory) as handle:
                yield Lines(handle)
        except OSError as error:
            raise BackendError(f"{self.relative(path)}: cannot read: {error}") from error

    # alerts and metrics

    @cached_property
    def _alerts(self) -> AlertsFile:
        path = self.directory / ALERTS_FILE
        if not path.exists():
            return AlertsFile("none", [], [])
        alerts_file = read_alerts(path, self.config.timezone)
        if alerts_file.problems:
            raise BackendError(f"{ALERTS_FILE}: {alerts_file.problems[0]}")
        return alerts_file

    def query_metrics(
        self,
        *,
        service: str | None,
        alertname: str | None,
        metric: str | None,
        window: TimeWindow | None = None,
        range: TimeRange | None = None,
        state: str = "active",
    ) -> MetricsResult:
        """Alerts in `state` (a STATE_FILTERS key) active in the range, and metric series summaries.
        The range is `range`, else the window's, else the whole snapshot (None)."""
        searched = range if range is not None else (None if window is None else TimeRange(window.start, window.end))
        label = window.label if range is None and window is not None else None
        resolved = None
        if service is not None:
            resolved = self.resolve_service(service)
            if resolved is None:
                return MetricsResult(message=self.unknown_service_message(service))
        alerts_file = self._alerts
        now = self.now()
        named = [
            alert
            for alert in alerts_file.alerts
            if (resolved is None or self.alert_service(alert.labels).lower() == resolved.lower())
            and (alertname is None or alert.labels["alertname"].lower() == alertname.strip().lower())
            and self._alert_in_range(alert, now, searched)
        ]
        items = (self._alert_item(alert, now) for alert in named)
        alerts = [item for item in items if item["state"] in STATE_FILTERS[state]]
        notes: list[str] = []
        if len(alerts) < len(named):
            hidden = sorted({alert_state_at(alert, now) for alert in named} - STATE_FILTERS[state])
            notes.append(f"{len(named) - len(alerts)} {'/'.join(hidden)} alert(s) not shown (state={state})")
        series: list[dict[str, Any]] = []
        if resolved is not None or metric is not None:
            paths = self.metric_files(resolved)
            if resolved is not None and not paths:
                notes.append(f"no {METRICS_DIR}/ file for {resolved}")
            for path in paths:
                series += self._series(path, metric, searched, label, notes)
        counts = f"{len(alerts)} alert{'s' * (len(alerts) != 1)}, {len(series)} series"
        return MetricsResult(
            alerts=alerts, series=series, message="; ".join([counts, *notes]), searched_range=self._stated(searched)
        )

    def _stated(self, searched: TimeRange | None) -> str:
        """The absolute range a query searched: open ends (all of them for no range) are the whole snapshot's."""
        zone, span = self.config.timezone, self.span
        if span is None or span.start is None or span.end is None:
            return "" if searched is None else searched.text(zone)
        return (searched or TimeRange(None, None)).bounded(span.start, span.end).text(zone)

    @staticmethod
    def _alert_in_range(alert: SnapshotAlert, now: datetime, searched: TimeRange | None) -> bool:
        """Whether the alert was active at some instant of the range: from its start to its end
        when resolved, else to `now`. Alerts raised after now do not exist yet."""
        if alert.active_at is not None and alert.active_at > now:
            return False
        ended = alert.ends_at if alert_state_at(alert, now) == "resolved" else now
        return active_in(alert.active_at, ended, searched)

    def _alert_item(self, alert: SnapshotAlert, now: datetime) -> dict[str, Any]:
        value, value_unit = split_value(alert.value)
        state = alert_state_at(alert, now)
        item = alert_record(
            labels=alert.labels,
            annotations=alert.annotations,
            state=state,
            active_at=iso_utc(alert.active_at) if alert.active_at else None,
            value=value,
            now=now,
            ends_at=iso_utc(alert.ends_at) if alert.ends_at else None,
            silenced_by=list(alert.silenced_by),
            inhibited_by=list(alert.inhibited_by),
        )
        item["service"] = self.alert_service(alert.labels)
        item["unit"] = alert.annotations.get("unit") or alert.labels.get("unit") or value_unit
        return item

    def _series(
        self,
        path: Path,
        metric: str | None,
        searched: TimeRange | None,
        window_label: str | None,
        notes: list[str],
    ) -> list[dict[str, Any]]:
        """Points, min/max/last and their times of each wanted column of one metric file over the
        rows inside `searched` (the whole file when None)."""
        name, zone = self.relative(path), self.config.timezone
        with self._reading(path) as handle:
            columns, rows = read_metric_file(handle, zone)
            wanted = find_columns(columns, metric)
            if not wanted:
                if metric is not None and columns:
                    notes.append(_unknown_metric(metric, name, columns))
                return []
            try:
                found = summarise(rows, columns, wanted, searched)
            except MetricFileError as error:
                raise BackendError(f"{name} {error}") from None
            except csv.Error as error:
                raise BackendError(f"{name}: invalid CSV: {error}") from error
        whole = TimeRange(found.first, found.last) if found.first and found.last else None
        stated = searched if searched is not None else whole
        if not found.summaries or stated is None:
            where = f"inside {stated.text(zone)}" if stated is not None else "with a timestamp"
            notes.append(f"no points of {name} {where}")
            return []
        items = []
        for index, summary in sorted(found.summaries.items()):
            column = columns[index]
            item = summary.item(self.service_of_file(path), column.name, column.unit, stated, zone)
            if window_label is not None:
                item["window"] = window_label
            items.append(item)
        return items

    # logs

    def query_logs(self, query: LogQuery) -> LogResult:
        """Through each file's persistent index (`evcli.backends.snapshot_logs`)."""
        from evcli.backends.snapshot_logs import query_logs

        service = None
        if query.service is not None:
            service = self.resolve_service(query.service)
            if service is None:
                return LogResult([], 0, False, message=self.unknown_service_message(query.service))
        if not self.log_files(service):
            return LogResult([], 0, False, message=f"no log files for service {service!r} in this snapshot")
        return query_logs(self, query, service)
