"""An environment snapshot directory as an evidence backend (DESIGN §5).

```
DIR/env.toml          name, timezone, now, [services.NAME] aliases
DIR/alerts.json       Prometheus /api/v1/alerts, Alertmanager /api/v2/alerts or webhook payload
DIR/logs/NAME.log     raw lines; NAME.jsonl one JSON object a line
DIR/metrics/NAME.csv  timestamp column, then one column per metric (`cpu_usage[%]`)
DIR/runbooks/**/*.md  knowledge documents (indexed by evcli.kb, not read here)
DIR/k8s/              kubectl get -o json, describe and logs output (evcli.backends.snapshot_k8s)
DIR/traces/           OTLP, Jaeger, Zipkin or CSV span files (evcli.backends.snapshot_traces)
```

The snapshot has its own clock (`now`): env.toml's `now`, else the newest
timestamp in the snapshot, so an old incident answers as it would have then.
Log files are streamed: a query keeps only the newest `limit` matches.
Every file is read through `evcli.core.files`: only regular files inside
the directory, lines of bounded length, and a tool call's deadline checked as
lines are read.
Parsing lives beside it, one module per concern: `snapshot_config` (env.toml),
`snapshot_time` (timestamps), `snapshot_alerts` (alerts.json), `snapshot_metrics`
and `snapshot_logs`; their helpers are public because `envcheck` reports on the
same files with the same rules.
"""

from __future__ import annotations

import csv
import difflib
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evcli.backends.alerts import (
    STATE_FILTERS,
    active_in,
    alert_record,
    iso_utc,
    service_of,
)
from evcli.backends.base import LogQuery, LogResult, MetricsResult, SeriesQuery, TimeWindow
from evcli.backends.k8s_objects import pod_service
from evcli.backends.logformats import ParseContext
from evcli.backends.series import relative_range
from evcli.backends.snapshot_alerts import (
    ALERTS_FILE,
    AlertsFile,
    SnapshotAlert,
    alert_state_at,
    read_alerts,
    split_value,
)
from evcli.backends.snapshot_config import ENV_FILE, EnvConfig, load_env_config
from evcli.backends.snapshot_metrics import (
    FileSummary,
    MetricColumn,
    MetricFileError,
    close_names,
    find_columns,
    read_metric_file,
    summarise,
)
from evcli.backends.snapshot_time import Timebase
from evcli.core.errors import BackendError
from evcli.core.files import Lines, open_text
from evcli.core.time import TimeRange

if TYPE_CHECKING:
    from evcli.backends.snapshot_k8s import SnapshotKubernetes
    from evcli.backends.snapshot_traces import SnapshotTraces

# Metric files together this large are read through their cached arrays (evcli.backends.metric_arrays, which
# loads NumPy, ~0.1 s) when only their times are needed; smaller ones are read as text, which costs less.
CACHED_METRICS_BYTES = 1 << 20
LOGS_DIR = "logs"
METRICS_DIR = "metrics"
RUNBOOKS_DIR = "runbooks"
LOG_SUFFIXES = (".log", ".jsonl")
METRIC_SUFFIX = ".csv"


def demo_env_dir() -> Path:
    """The packaged demo environment (`evcli/demo/`), installed or checked out."""
    return Path(__file__).resolve().parent.parent / "demo"


_LISTED_COLUMNS = 50  # series named when an asked one is not there; a wide file says how many more it has


def _unknown_metric(metric: str, name: str, columns: list[MetricColumn]) -> str:
    """`no metric 'cpu' in metrics/x.csv; close: cpu_usage (has cpu_usage, heap_used)`."""
    close = close_names(columns, metric)
    hint = f"; close: {', '.join(close)}" if close else ""
    available = ", ".join(column.header for column in columns[:_LISTED_COLUMNS])
    more = f" and {len(columns) - _LISTED_COLUMNS:,} more" if len(columns) > _LISTED_COLUMNS else ""
    return f"no metric {metric!r} in {name}{hint} (has {available}{more})"


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
    def kubernetes(self) -> SnapshotKubernetes:
        """The k8s/ directory: what kubectl wrote about the cluster (evcli.backends.snapshot_k8s)."""
        from evcli.backends.snapshot_k8s import SnapshotKubernetes

        return SnapshotKubernetes(self.directory)

    @cached_property
    def traces(self) -> SnapshotTraces:
        """The traces/ directory: span files (evcli.backends.snapshot_traces)."""
        from evcli.backends.snapshot_traces import SnapshotTraces

        return SnapshotTraces(self.directory, self.service_named, self.config.timezone)

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
        """The service a file belongs to: the name or alias it is named by, else the Deployment of a
        Kubernetes pod name (`checkout-7c9f6d8b5-x2k4q` → checkout), else its own name."""
        return self.service_named(path.stem)

    def service_named(self, name: str) -> str:
        """The service a name in the data denotes: a name or alias, else a pod's Deployment, else itself."""
        return self._alias_target(name) or pod_service(name) or name

    def instance_of_file(self, path: Path) -> str | None:
        """The pod a file is named after (None when it is named after its service)."""
        return path.stem if self.service_of_file(path) != path.stem else None

    def log_files(self, service: str | None = None) -> list[Path]:
        """The `.log`/`.jsonl` files of a (resolved) service, or of every service."""
        paths = self.files(LOGS_DIR, LOG_SUFFIXES)
        return [path for path in paths if service is None or self.service_of_file(path) == service]

    def metric_files(self, service: str | None = None) -> list[Path]:
        paths = self.files(METRICS_DIR, (METRIC_SUFFIX,))
        return [path for path in paths if service is None or self.service_of_file(path) == service]

    def capabilities(self) -> list[str]:
        """What the directory holds (Capability values): alerts (alerts.json), metrics (metrics/ files),
        logs (logs/ files); knowledge is always listed (the runbooks backend says what it finds);
        changes (find_changes: metrics or logs to compare with a baseline), kubernetes (a k8s/ directory),
        traces (traces/ span files)."""
        metrics, logs = bool(self.files(METRICS_DIR, (METRIC_SUFFIX,))), bool(self.files(LOGS_DIR, LOG_SUFFIXES))
        held = {
            "alerts": (self.directory / ALERTS_FILE).exists(),
            "metrics": metrics,
            "logs": logs,
            "knowledge": True,
            "changes": metrics or logs,
            "kubernetes": self.kubernetes.present,
            "traces": self.traces.present,
        }
        return [name for name, present in held.items() if present]

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
        """Services named by env.toml, by log and metric file names, by k8s/ workloads (Deployments) and by the
        spans of traces/."""
        names = dict.fromkeys(self.config.services)
        for path in self.files(LOGS_DIR, LOG_SUFFIXES) + self.files(METRICS_DIR, (METRIC_SUFFIX,)):
            names.setdefault(self.service_of_file(path))
        for workload in self.kubernetes.workloads():
            names.setdefault(self._alias_target(workload) or workload)
        if self.traces.present:  # spans name their services (pods mapped to their deployment)
            for service in self.traces.services():
                names.setdefault(service)
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
        try:  # k8s/: event and container start/termination times
            if (kube := self.kubernetes.span()) is not None:
                spans.append(kube)
        except BackendError as error:
            errors.append(str(error))
        if (traced := self.traces.span()) is not None:  # traces/: span starts and ends
            spans.append(traced)
        paths = self.files(METRICS_DIR, (METRIC_SUFFIX,))
        cached = sum(path.stat().st_size for path in paths if path.is_file()) >= CACHED_METRICS_BYTES
        for path in paths:
            try:
                stamps = self._metric_stamps(path) if cached else self._read_metric_stamps(path)
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

    def _read_metric_stamps(self, path: Path) -> list[datetime]:
        with self._reading(path) as handle:
            _, rows = read_metric_file(handle, self.config.timezone)
            return [row.timestamp for row in rows if row.timestamp]

    def _metric_stamps(self, path: Path) -> list[datetime]:
        """The oldest and newest row time of a metric file, through its cached arrays (metric_arrays)."""
        from evcli.backends.metric_arrays import metric_arrays

        try:
            times = metric_arrays(path, self.directory, self.config.timezone, self._reading).times
        except OSError as error:
            raise BackendError(f"{self.relative(path)}: cannot read: {error}") from error
        if not times.size:
            return []
        return [datetime.fromtimestamp(float(times.min()), UTC), datetime.fromtimestamp(float(times.max()), UTC)]

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
        """The bounded lines of a snapshot file; any read error (a refused file too) and a metric file
        that cannot be read become a BackendError naming the file."""
        try:
            with open_text(path, self.directory) as handle:
                yield Lines(handle)
        except OSError as error:
            raise BackendError(f"{self.relative(path)}: cannot read: {error}") from error
        except MetricFileError as error:
            raise BackendError(f"{self.relative(path)}: {error}") from None

    # alerts and metrics

    def alert_snapshot_names(self) -> list[str]:
        """The name of every alert alerts.json holds, in any state."""
        return sorted({name for alert in self._alerts.alerts if (name := alert.labels.get("alertname"))})

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
        series: bool = True,
        query: SeriesQuery | None = None,
    ) -> MetricsResult:
        """Alerts in `state` (a STATE_FILTERS key) active in the range, and metric series summaries
        (none when `series` is False): of the service or metric asked, or, when neither nor an alert
        is named, of every series (those that moved most, relative to their size, first). The range
        is `range`, else the window's, else the whole snapshot (None). Label matchers and PromQL
        (`query`) are refused: a snapshot's series are CSV columns."""
        if query is not None:
            query.refuse_on("a snapshot, whose series are CSV columns without labels")
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
        # a range that ended before the clock asks what was in `state` then: an alert firing at its end that
        # resolved since is shown (in its state now), not hidden as resolved
        then = searched.end if searched is not None and searched.end is not None and searched.end < now else now
        alerts = [
            self._alert_item(alert, now)
            for alert in named
            if {alert_state_at(alert, now), alert_state_at(alert, then)} & STATE_FILTERS[state]
        ]
        notes: list[str] = []
        if len(alerts) < len(named):
            hidden = sorted({alert_state_at(alert, now) for alert in named} - STATE_FILTERS[state])
            notes.append(f"{len(named) - len(alerts)} {'/'.join(hidden)} alert(s) not shown (state={state})")
        summaries: list[dict[str, Any]] = []
        everything = series and resolved is None and metric is None and alertname is None
        if series and (resolved is not None or metric is not None or everything):
            paths = self.metric_files(resolved)
            if resolved is not None and not paths:
                notes.append(f"no {METRICS_DIR}/ file for {resolved}")
            for path in paths:
                summaries += self._series(path, metric, searched, label, notes)
        if everything:  # every series of the range, the ones that moved most first
            summaries.sort(key=lambda item: (-relative_range(item), item["service"], item["metric"]))
        counts = f"{len(alerts)} alert{'s' * (len(alerts) != 1)}, {len(summaries)} series"
        return MetricsResult(
            alerts=alerts, series=summaries, message="; ".join([counts, *notes]), searched_range=self._stated(searched)
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
        columns, found = self._summaries(path, metric, searched)
        if found is None:
            if metric is not None and columns:
                notes.append(_unknown_metric(metric, name, columns))
            return []
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

    def _summaries(
        self, path: Path, metric: str | None, searched: TimeRange | None
    ) -> tuple[list[MetricColumn], FileSummary | None]:
        """The file's columns and the summaries of the wanted ones (None when none is wanted): from its
        cached arrays (evcli.backends.metric_arrays), or, for a file with a row or cell that cannot be
        read, from the file itself, which names that line in the error."""
        from evcli.backends.metric_arrays import metric_arrays, summaries

        name, zone = self.relative(path), self.config.timezone
        try:
            arrays = metric_arrays(path, self.directory, zone, self._reading)
        except (csv.Error, OSError):  # an unwritable cache or a broken file: read it the plain way
            arrays = None
        if arrays is not None and not arrays.unread and not arrays.invalid:
            wanted = find_columns(arrays.columns, metric)
            return arrays.columns, (summaries(arrays, wanted, searched) if wanted else None)
        with self._reading(path) as handle:
            columns, rows = read_metric_file(handle, zone)
            wanted = find_columns(columns, metric)
            if not wanted:
                return columns, None
            try:
                return columns, summarise(rows, columns, wanted, searched)
            except MetricFileError as error:
                raise BackendError(f"{name} {error}") from None
            except csv.Error as error:
                raise BackendError(f"{name}: invalid CSV: {error}") from error

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
