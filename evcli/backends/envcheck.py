"""What a snapshot directory contains, and everything wrong with it (`evcli env check`).

Reads every file with the same rules as `SnapshotBackend`, but never stops at
the first bad file: each problem is reported with the file it is in, and every
file the backend would not read is listed as ignored with the reason. Files
are opened through `evcli.backends.files`, so a symlink leading out of the
directory or a special file (FIFO, device, socket) is an error, never read.
"""

from __future__ import annotations

import csv
from collections import Counter
from collections.abc import Iterable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, computed_field

from evcli.backends.base import BackendError
from evcli.backends.files import LIMITS, Lines, RefusedFile, contained, file_kind, open_text, read_text, walk
from evcli.backends.alerts import iso_utc
from evcli.backends.snapshot import (
    ALERT_SHAPES,
    ALERTS_FILE,
    ENV_FILE,
    LOG_SUFFIXES,
    LOGS_DIR,
    METRIC_SUFFIX,
    METRICS_DIR,
    RUNBOOKS_DIR,
    EnvConfig,
    LogRecord,
    SnapshotBackend,
    Timebase,
    alert_state_at,
    iter_log_records,
    load_env_config,
    metric_number,
    parse_json_line,
    parse_log_line,
    read_alerts,
    read_metric_file,
)
from evcli.errors import BadInput
from evcli.kb.frontmatter import split_front_matter

_SHOWN_PER_FILE = 5  # bad lines named one by one before "and N more"
_LAYOUT = f"{ENV_FILE}, {ALERTS_FILE}, {LOGS_DIR}/, {METRICS_DIR}/, {RUNBOOKS_DIR}/"


class Problem(BaseModel):
    severity: Literal["error", "warning"]
    path: str  # relative to the snapshot directory; "." for the directory itself
    message: str


class IgnoredFile(BaseModel):
    path: str
    reason: str


class ClockInfo(BaseModel):
    now: str | None
    source: str
    timezone: str


class ServiceInfo(BaseModel):
    name: str
    aliases: list[str] = Field(default_factory=list)
    sources: list[str] = Field(default_factory=list)  # env.toml, logs, metrics, alerts


class AlertInfo(BaseModel):
    alertname: str
    service: str
    state: str  # at the snapshot's clock


class AlertsInfo(BaseModel):
    path: str
    shape: str  # prometheus, alertmanager-v2 or alertmanager-webhook
    shape_description: str
    count: int
    firing: int
    alerts: list[AlertInfo]


class LogFileInfo(BaseModel):
    path: str
    service: str
    lines: int  # non-blank lines
    timestamped_share: float  # lines with a timestamp of their own, 0..1
    continuation_lines: int  # lines that took the timestamp of the line before (stack traces)
    first: str | None
    last: str | None
    levels: dict[str, int]  # per event line; NONE when no level was recognised


class MetricColumnInfo(BaseModel):
    name: str
    unit: str


class MetricFileInfo(BaseModel):
    path: str
    service: str
    rows: int
    metrics: list[MetricColumnInfo]
    first: str | None
    last: str | None


class RunbookInfo(BaseModel):
    path: str
    title: str | None
    front_matter_keys: list[str]


class EnvReport(BaseModel):
    directory: str
    name: str
    clock: ClockInfo
    services: list[ServiceInfo] = Field(default_factory=list)
    alerts: AlertsInfo | None = None
    log_files: list[LogFileInfo] = Field(default_factory=list)
    metric_files: list[MetricFileInfo] = Field(default_factory=list)
    runbooks: list[RunbookInfo] = Field(default_factory=list)
    ignored: list[IgnoredFile] = Field(default_factory=list)
    problems: list[Problem] = Field(default_factory=list)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def ok(self) -> bool:
        return not any(problem.severity == "error" for problem in self.problems)

    def as_dict(self) -> dict:
        return self.model_dump(mode="json")


def check_env(directory: Path) -> EnvReport:
    """Inventory and problems of a snapshot directory; never raises for bad content."""
    directory = Path(directory)
    if not directory.is_dir():
        return EnvReport(
            directory=str(directory),
            name=directory.name,
            clock=ClockInfo(now=None, source="unknown", timezone="UTC"),
            problems=[Problem(severity="error", path=".", message="the snapshot directory does not exist")],
        )
    check = _Check(directory)
    return check.run()


class _Check:
    """One pass over a snapshot directory, collecting the inventory and the problems."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.problems: list[Problem] = []
        self.ignored: list[IgnoredFile] = []
        try:
            config = load_env_config(directory / ENV_FILE)
        except BackendError as error:
            self.problem("error", ENV_FILE, _without_prefix(str(error), ENV_FILE))
            config = EnvConfig()  # go on with the defaults, so the other files are still checked
        for warning in config.warnings:
            # an unknown key is most likely a misspelt one (timzone = ...) whose value is silently unused
            self.problem("error", ENV_FILE, warning)
        self.config = config
        self.backend = SnapshotBackend(directory, config=config)

    def problem(self, severity: Literal["error", "warning"], path: str, message: str) -> None:
        self.problems.append(Problem(severity=severity, path=path, message=message))

    def errors(self, path: str, messages: list[str], more: str) -> None:
        """The first few messages one by one, then how many more `more` there are."""
        for message in messages[:_SHOWN_PER_FILE]:
            self.problem("error", path, message)
        if len(messages) > _SHOWN_PER_FILE:
            self.problem("error", path, f"and {len(messages) - _SHOWN_PER_FILE} more {more}")

    def ignore(self, path: Path, reason: str) -> None:
        relative = self.backend.relative(path)
        self.ignored.append(IgnoredFile(path=relative, reason=reason))
        self.problem("warning", relative, f"ignored: {reason}")

    def run(self) -> EnvReport:
        self._scan_top_level()
        clock, now = self._clock()
        alerts = self._alerts(now)
        log_files = self._log_files(now)
        metric_files = self._metric_files()
        runbooks = self._runbooks()
        if alerts is None and not log_files and not metric_files:
            self.problem("error", ".", f"no evidence: the snapshot has no {ALERTS_FILE}, logs or metrics")
        return EnvReport(
            directory=str(self.directory),
            name=self.config.name or self.directory.name,
            clock=clock,
            services=self._services(alerts, log_files, metric_files),
            alerts=alerts,
            log_files=log_files,
            metric_files=metric_files,
            runbooks=runbooks,
            ignored=self.ignored,
            problems=self.problems,
        )

    # layout

    def _scan_top_level(self) -> None:
        for path in sorted(self.directory.iterdir()):
            if path.name in (ENV_FILE, ALERTS_FILE, LOGS_DIR, METRICS_DIR, RUNBOOKS_DIR) and path.is_symlink():
                try:
                    contained(path, self.directory)
                except RefusedFile as error:
                    self.problem("error", path.name, str(error))
                    continue
            if path.name in (LOGS_DIR, METRICS_DIR, RUNBOOKS_DIR):
                if not path.is_dir():
                    self.problem("error", path.name, "must be a directory")
            elif path.name in (ENV_FILE, ALERTS_FILE):
                if path.is_dir():
                    self.problem("error", path.name, "must be a file")
                elif not path.is_file():
                    kind = file_kind(path.stat().st_mode) if path.exists() else "a dangling symlink"
                    self.problem("error", path.name, f"refused: not a regular file ({kind})")
            else:
                self.ignore(path, f"not part of the snapshot layout ({_LAYOUT})")

    def _entries(self, folder: str, suffixes: tuple[str, ...]) -> list[Path]:
        """The files of a folder the backend reads; everything else there is reported as ignored."""
        root = self.directory / folder
        if not root.is_dir():
            return []
        kinds = " or ".join(suffixes)
        wanted = self.backend.files(folder, suffixes)
        for path in sorted(root.iterdir()):
            if path in wanted:
                continue
            if path.is_dir():
                self.ignore(path, f"a subdirectory; only {kinds} files directly in {folder}/ are read")
            elif path.name.startswith("."):
                self.ignore(path, "a hidden file")
            else:
                self.ignore(path, f"not a {kinds} file")
        if not wanted:
            self.problem("warning", f"{folder}/", f"contains no {kinds} files")
        return wanted

    # clock and services

    def _clock(self) -> tuple[ClockInfo, datetime | None]:
        if self.config.now is not None:
            now, source = self.config.now, f"{ENV_FILE} now"
        else:
            newest, _ = self.backend.newest_timestamp()  # unreadable files are reported per file
            now, source = newest or (None, "")
            source = f"newest timestamp ({source})"
        if now is None:
            self.problem(
                "warning",
                ".",
                f"no timestamps anywhere and no now in {ENV_FILE}: the clock is the wall clock",
            )
            source = "wall clock"
        info = ClockInfo(now=iso_utc(now) if now else None, source=source, timezone=self.config.timezone_name)
        return info, now

    def _services(
        self, alerts: AlertsInfo | None, log_files: list[LogFileInfo], metric_files: list[MetricFileInfo]
    ) -> list[ServiceInfo]:
        sources: dict[str, list[str]] = {name: [ENV_FILE] for name in self.config.services}
        for source, names in (
            ("logs", [info.service for info in log_files]),
            ("metrics", [info.service for info in metric_files]),
            ("alerts", [info.service for info in alerts.alerts] if alerts else []),
        ):
            for name in names:
                if name and source not in sources.setdefault(name, []):
                    sources[name].append(source)
        for name, found in sources.items():
            if found == [ENV_FILE]:
                self.problem("warning", ENV_FILE, f"service {name} has no logs, metrics or alerts")
        return [
            ServiceInfo(name=name, aliases=list(self.config.services.get(name, ())), sources=found)
            for name, found in sorted(sources.items())
        ]

    # alerts

    def _alerts(self, now: datetime | None) -> AlertsInfo | None:
        path = self.directory / ALERTS_FILE
        if not path.is_file():
            return None
        try:
            alerts_file = read_alerts(path, self.config.timezone)
        except BackendError as error:
            self.problem("error", ALERTS_FILE, _without_prefix(str(error), ALERTS_FILE))
            return None
        for problem in alerts_file.problems:
            self.problem("error", ALERTS_FILE, problem)
        items = []
        for alert in alerts_file.alerts:
            name, service = alert.labels["alertname"], self.backend.alert_service(alert.labels)
            if not service:
                self.problem("warning", ALERTS_FILE, f"alert {name} has no service, job or app label")
            state = alert_state_at(alert, now) if now else alert.state
            items.append(AlertInfo(alertname=name, service=service, state=state))
        return AlertsInfo(
            path=ALERTS_FILE,
            shape=alerts_file.shape,
            shape_description=ALERT_SHAPES[alerts_file.shape],
            count=len(items),
            firing=sum(item.state == "firing" for item in items),
            alerts=items,
        )

    # logs

    def _log_files(self, now: datetime | None) -> list[LogFileInfo]:
        infos = []
        for path in self._entries(LOGS_DIR, LOG_SUFFIXES):
            relative = self.backend.relative(path)
            try:
                infos.append(self._log_file(path, relative, now))
            except OSError as error:
                self.problem("error", relative, f"cannot read: {error.strerror or error}")
        return infos

    def _log_file(self, path: Path, relative: str, now: datetime | None) -> LogFileInfo:
        timebase = self.backend.timebase_for(path)
        lines = stamped = continuation = later = undecodable = 0
        first = last = None
        levels: Counter[str] = Counter()
        bad_lines: list[int] = []
        with open_text(path, self.directory) as handle:
            bounded = Lines(handle)
            if path.suffix == ".jsonl":
                records = _jsonl_records(bounded, timebase, bad_lines)
            else:
                records = iter_log_records(bounded, timebase)
            for record, own_stamp in records:
                lines += 1
                undecodable += "\ufffd" in record.message
                moment = record.timestamp
                if not own_stamp:
                    if moment is not None:  # a stack trace line: part of the event before it
                        continuation += 1
                        continue
                elif moment is not None:
                    stamped += 1
                    first = moment if first is None else min(first, moment)
                    last = moment if last is None else max(last, moment)
                    later += now is not None and moment > now
                levels[record.level or "NONE"] += 1
        self.errors(relative, [f"line {number} is not a JSON object" for number in bad_lines], "such lines")
        self._cut_lines(relative, bounded.cut)
        if lines == 0:
            self.problem("warning", relative, "the file is empty")
        elif stamped == 0:
            self.problem(
                "warning",
                relative,
                "no line has a recognised timestamp, so no query window ever includes its lines",
            )
        if later:
            self.problem(
                "warning",
                relative,
                f"{later} lines are later than the snapshot clock and never match a query",
            )
        if undecodable:
            self.problem("warning", relative, f"{undecodable} lines hold bytes that are not UTF-8 (read as \ufffd)")
        return LogFileInfo(
            path=relative,
            service=self.backend.service_of_file(path),
            lines=lines,
            timestamped_share=round(stamped / lines, 4) if lines else 0.0,
            continuation_lines=continuation,
            first=iso_utc(first) if first else None,
            last=iso_utc(last) if last else None,
            levels=dict(sorted(levels.items())),
        )

    # metrics

    def _metric_files(self) -> list[MetricFileInfo]:
        infos = []
        for path in self._entries(METRICS_DIR, (METRIC_SUFFIX,)):
            relative = self.backend.relative(path)
            try:
                info = self._metric_file(path, relative)
            except OSError as error:
                self.problem("error", relative, f"cannot read: {error.strerror or error}")
            except csv.Error as error:
                self.problem("error", relative, f"invalid CSV: {error}")
            else:
                if info is not None:
                    infos.append(info)
        return infos

    def _metric_file(self, path: Path, relative: str) -> MetricFileInfo | None:
        bad_stamps: list[tuple[int, str]] = []
        bad_cells: list[str] = []
        count = 0
        first = last = None
        with open_text(path, self.directory) as handle:
            bounded = Lines(handle)
            columns, rows = read_metric_file(bounded, self.backend.timebase_for(path))
            if not columns:
                self.problem("error", relative, "no metric columns: expected a timestamp column, then one per metric")
                return None
            names = [column.name.lower() for column in columns]
            for column in columns:
                if not column.name:
                    self.problem("error", relative, f"column {column.header!r} has no metric name")
                elif names.count(column.name.lower()) > 1:
                    self.problem("error", relative, f"metric {column.name} appears in more than one column")
            for row in rows:
                count += 1
                if row.timestamp is None:
                    bad_stamps.append((row.line, row.raw_timestamp))
                else:
                    first = row.timestamp if first is None else min(first, row.timestamp)
                    last = row.timestamp if last is None else max(last, row.timestamp)
                if len(row.cells) > len(columns):
                    bad_cells.append(f"line {row.line} has {len(row.cells) + 1} cells, the header {len(columns) + 1}")
                for column, cell in zip(columns, row.cells, strict=False):
                    try:
                        metric_number(cell)
                    except ValueError:
                        bad_cells.append(f"line {row.line}: {column.header} value {cell!r} is not a number")
        self._cut_lines(relative, bounded.cut)
        if count == 0:
            self.problem("warning", relative, "no rows after the header")
        elif len(bad_stamps) == count:
            line, raw = bad_stamps[0]
            self.problem(
                "error",
                relative,
                f"no timestamp column: the first column is not a time (line {line}: {raw!r})",
            )
        else:
            self.errors(
                relative,
                [f"line {line}: {raw!r} is not a timestamp" for line, raw in bad_stamps],
                "such rows",
            )
        self.errors(relative, bad_cells, "such cells")
        return MetricFileInfo(
            path=relative,
            service=self.backend.service_of_file(path),
            rows=count,
            metrics=[MetricColumnInfo(name=column.name, unit=column.unit) for column in columns],
            first=iso_utc(first) if first else None,
            last=iso_utc(last) if last else None,
        )

    def _cut_lines(self, relative: str, cut: int) -> None:
        if cut:
            self.problem(
                "warning",
                relative,
                f"{cut} lines are longer than {LIMITS.max_line_chars} characters: only that much of each is read",
            )

    # runbooks

    def _runbooks(self) -> list[RunbookInfo]:
        root = self.directory / RUNBOOKS_DIR
        if not root.is_dir():
            return []
        try:
            found = walk(root, within=self.directory, suffix=".md")
        except BadInput as error:
            self.problem("error", f"{RUNBOOKS_DIR}/", f"not read: {error.message}")
            return []
        for path in found.others:
            self.ignore(path, "not a .md file")
        for path, reason in found.refused:
            self.problem("error", self.backend.relative(path), reason)
        infos = []
        for path in found.files:
            relative = self.backend.relative(path)
            try:
                text = read_text(path, self.directory)
            except (OSError, UnicodeDecodeError) as error:
                self.problem("error", relative, f"cannot read: {error}")
                continue
            infos.append(self._runbook(relative, text))
        if not infos:
            self.problem("warning", f"{RUNBOOKS_DIR}/", "contains no .md files")
        return infos

    def _runbook(self, relative: str, text: str) -> RunbookInfo:
        """Title and front matter keys, read the way the knowledge index reads them."""
        normalised = text.replace("\r\n", "\n")
        front_matter, body = split_front_matter(normalised)
        if body == normalised and normalised.lstrip("\ufeff").startswith("---\n"):
            self.problem("error", relative, "front matter starts with --- but is never closed")
        heading = next((line[2:].strip() for line in body.splitlines() if line.startswith("# ")), None)
        title = str(front_matter.get("title") or "").strip() or heading
        if not body.strip():
            self.problem("warning", relative, "the runbook has no text")
        if not title:
            self.problem("warning", relative, "no title (front matter title: or a # heading)")
        return RunbookInfo(path=relative, title=title, front_matter_keys=list(front_matter))


def _jsonl_records(handle: Iterable[str], timebase: Timebase, bad_lines: list[int]) -> Iterator[tuple[LogRecord, bool]]:
    """Records of a .jsonl file and whether each has a time; a line that is not a JSON object is
    noted in `bad_lines` and read as a raw line, as a query reads it."""
    for number, line in enumerate(handle, 1):
        if not line.strip():
            continue
        record = parse_json_line(line, timebase)
        if record is None:
            bad_lines.append(number)
            record = parse_log_line(line, timebase)[0]
        yield record, record.timestamp is not None


def _without_prefix(message: str, name: str) -> str:
    return message.removeprefix(f"{name}: ")
