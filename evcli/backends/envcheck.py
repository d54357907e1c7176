"""What a snapshot directory contains, and everything wrong with it (`evcli env check`).

Reads every file with the same rules as `SnapshotBackend`, but never stops at
the first bad file: each problem is reported with the file it is in, and every
file the backend would not read is listed as ignored with the reason. Files
are opened through `evcli.core.files`, so a symlink leading out of the
directory or a special file (FIFO, device, socket) is an error, never read.
"""

from __future__ import annotations

import csv
import io
import json
import os
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from itertools import chain, islice
from pathlib import Path
from typing import BinaryIO, Literal

from pydantic import BaseModel, Field, computed_field

from evcli.backends.alerts import iso_utc
from evcli.backends.envcheck_traces import TraceFileInfo, check_traces
from evcli.backends.logformats import (
    SAMPLE_LINES,
    LineKind,
    LineReader,
    LogFormat,
    ParseContext,
    detect,
    format_named,
    known_formats,
)
from evcli.backends.snapshot import (
    LOG_SUFFIXES,
    LOGS_DIR,
    METRIC_SUFFIX,
    METRICS_DIR,
    RUNBOOKS_DIR,
    SnapshotBackend,
)
from evcli.backends.snapshot_alerts import ALERT_SHAPES, ALERTS_FILE, alert_state_at, read_alerts
from evcli.backends.snapshot_config import ENV_FILE, EnvConfig, load_env_config
from evcli.backends.snapshot_k8s import K8S_DIR, KubernetesInfo
from evcli.backends.snapshot_metrics import MetricFileError, metric_number, read_metric_file
from evcli.backends.snapshot_traces import TRACES_DIR
from evcli.core.errors import BackendError, BadInput
from evcli.core.files import (
    LIMITS,
    Lines,
    RefusedFile,
    contained,
    file_kind,
    non_blank_lines,
    open_binary,
    open_text,
    read_text,
    walk,
)
from evcli.core.redaction import Redactor
from evcli.core.time import localize
from evcli.kb.frontmatter import split_front_matter

MAX_TEXT_SHARE_OF_JSONL = 0.01  # text lines in a .jsonl file a warning, not an error: banners, not a wrong format
_SHOWN_PER_FILE = 5  # bad lines named one by one before "and N more"
MIN_TIMESTAMP_SHARE = 0.9  # below this share of event lines with a recognised timestamp a log file is an error
FULL_PASS_BYTES = 16 << 20  # a log file up to this size is read whole; a larger one is sampled
SAMPLE_BLOCKS = 20  # blocks spread over a larger file ...
SAMPLE_BLOCK_LINES = 1_000  # ... of this many lines each
_EXAMPLE_CHARS = 300  # of an unrecognised line shown
_TAIL_BYTES = 128 << 10  # the last sample block: the end of the file
_NO_EVIDENCE = f"no evidence: the snapshot has no {ALERTS_FILE}, logs, metrics, {K8S_DIR}/ or {TRACES_DIR}/"
_FOLDERS = (LOGS_DIR, METRICS_DIR, RUNBOOKS_DIR, K8S_DIR, TRACES_DIR)
_LAYOUT = f"{ENV_FILE}, {ALERTS_FILE}, {LOGS_DIR}/, {METRICS_DIR}/, {RUNBOOKS_DIR}/, {K8S_DIR}/, {TRACES_DIR}/"


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
    format: str | None  # detected from the first SAMPLE_LINES lines; None when no known format reads them
    lines: int  # non-blank lines of the whole file
    sampled_lines: int | None  # None: every line was read; else how many non-blank lines the shares come from
    continuation_lines: int  # lines that belong to the event before them (stack traces), among those read
    unrecognised_lines: int  # lines no format reads, among those read
    timestamp_share: float  # event lines (all but continuation) with a recognised timestamp, 0..1
    level_share: float  # event lines with a level (written, or derived from an access log status), 0..1
    example_unrecognised: str | None  # the first unrecognised line, masked and cut
    first: str | None
    last: str | None
    levels: dict[str, int]  # per event line; NONE when no level was recognised


class MetricColumnInfo(BaseModel):
    name: str
    unit: str


class MetricFileInfo(BaseModel):
    path: str
    service: str
    timestamp_column: str  # the header of the first column
    rows: int
    metrics: list[MetricColumnInfo]
    parseable_share: float  # metric cells that are a number or an empty/NaN cell, 0..1
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
    kubernetes: KubernetesInfo | None = None  # k8s/ (evcli.backends.snapshot_k8s)
    trace_files: list[TraceFileInfo] = Field(default_factory=list)  # traces/ (evcli.backends.envcheck_traces)
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
        self.trace_files: list[TraceFileInfo] = []  # traces/, read after the other files
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
        runbooks, kubernetes = self._runbooks(), self.backend.kubernetes.check(self.problem, self.ignore)
        self.trace_files = check_traces(self.backend, self.problem, self._entries)
        if alerts is None and not log_files and not metric_files and kubernetes is None and not self.trace_files:
            self.problem("error", ".", _NO_EVIDENCE)
        return EnvReport(
            directory=str(self.directory),
            name=self.config.name or self.directory.name,
            clock=clock,
            services=self._services(alerts, log_files, metric_files),
            alerts=alerts,
            log_files=log_files,
            metric_files=metric_files,
            runbooks=runbooks,
            kubernetes=kubernetes,
            trace_files=self.trace_files,
            ignored=self.ignored,
            problems=self.problems,
        )

    # layout

    def _scan_top_level(self) -> None:
        for path in sorted(self.directory.iterdir()):
            if path.name in (ENV_FILE, ALERTS_FILE, *_FOLDERS) and path.is_symlink():
                try:
                    contained(path, self.directory)
                except RefusedFile as error:
                    self.problem("error", path.name, str(error))
                    continue
            if path.name in _FOLDERS:
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
        now: datetime | None
        if self.config.now is not None:
            now, source = self.config.now, f"{ENV_FILE} now"
        else:
            newest, _ = self.backend.newest_timestamp()  # unreadable files are reported per file
            now, source = newest or (None, "")
            source = f"newest timestamp ({source})"
        if now is None:
            self.problem(
                "warning", ".", f"no timestamps anywhere and no now in {ENV_FILE}: the clock is the wall clock"
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
            ("traces", [name for info in self.trace_files for name in info.services]),
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
        context = ParseContext(clock=now or datetime.now(UTC), tz=self.config.timezone)
        with open_binary(path, self.directory) as handle:
            scan = _LogScan.of(handle, context, jsonl=path.suffix == ".jsonl")
        events = scan.read - scan.continuation
        self._log_problems(relative, scan, events, now)
        return LogFileInfo(
            path=relative,
            service=self.backend.service_of_file(path),
            format=scan.format,
            lines=scan.lines,
            sampled_lines=scan.read if scan.sampled else None,
            continuation_lines=scan.continuation,
            unrecognised_lines=scan.unrecognised,
            timestamp_share=_share(scan.stamped, events),
            level_share=_share(scan.levelled, events),
            example_unrecognised=scan.example,
            first=iso_utc(scan.first) if scan.first else None,
            last=iso_utc(scan.last) if scan.last else None,
            levels=dict(sorted(scan.levels.items())),
        )

    def _log_problems(self, relative: str, scan: _LogScan, events: int, now: datetime | None) -> None:
        where = f" (in a sample of {scan.read} of {scan.lines} lines)" if scan.sampled else ""
        bad = len(scan.bad_json) + scan.bad_json_unnumbered
        if bad and bad <= scan.read * MAX_TEXT_SHARE_OF_JSONL:
            # a program's own banner between its JSON lines (npm's `> app@1.0 start`): read as text lines
            numbers = ", ".join(str(number) for number in scan.bad_json[:_SHOWN_PER_FILE])
            listed = f" (lines {numbers}{', …' if bad > _SHOWN_PER_FILE else ''})" if numbers else ""
            self.problem(
                "warning", relative, f"{bad} lines are not JSON objects{listed}{where}; they are read as text lines"
            )
        else:
            self.errors(relative, [f"line {number} is not a JSON object" for number in scan.bad_json], "such lines")
            if scan.bad_json_unnumbered:
                self.problem("error", relative, f"{scan.bad_json_unnumbered} lines are not JSON objects{where}")
        self._cut_lines(relative, scan.cut)
        if scan.lines == 0:
            self.problem("warning", relative, "the file is empty")
        elif _share(scan.stamped, events) < MIN_TIMESTAMP_SHARE:
            self.problem("error", relative, _unrecognised_message(scan, events, where))
        if scan.later:
            self.problem(
                "warning",
                relative,
                f"{scan.later} lines{where} are later than the snapshot clock and never match a query",
            )
        if scan.undecodable:
            self.problem(
                "warning", relative, f"{scan.undecodable} lines{where} hold bytes that are not UTF-8 (read as \ufffd)"
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
            except MetricFileError as error:
                self.problem("error", relative, str(error))
            else:
                if info is not None:
                    infos.append(info)
        return infos

    def _metric_file(self, path: Path, relative: str) -> MetricFileInfo | None:
        bad_stamps: list[tuple[int, str]] = []
        bad_cells: list[str] = []
        count = cells = unparseable = 0
        first = last = None
        with open_text(path, self.directory) as handle:
            bounded = Lines(handle)
            header = next(iter(bounded), "")
            columns, rows = read_metric_file(chain([header], bounded), self.config.timezone)
            if not columns:
                self.problem("error", relative, "no metric columns: expected a timestamp column, then one per metric")
                return None
            uses = Counter(column.name.lower() for column in columns)
            for column in columns:
                if not column.name:
                    self.problem("error", relative, f"column {column.header!r} has no metric name")
                elif uses[column.name.lower()] > 1:
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
                    cells += 1
                    try:
                        metric_number(cell)
                    except ValueError:
                        unparseable += 1
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
            timestamp_column=next(csv.reader([header]), [""])[0].strip(),
            rows=count,
            metrics=[MetricColumnInfo(name=column.name, unit=column.unit) for column in columns],
            parseable_share=_share(cells - unparseable, cells) if cells else 1.0,
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


def _share(part: int, whole: int) -> float:
    return round(part / whole, 4) if whole else 0.0


def _unrecognised_message(scan: _LogScan, events: int, where: str) -> str:
    share = _share(scan.stamped, events)
    found = f"the detected format is {scan.format}" if scan.format else "no known format reads its first lines"
    example = f"; e.g. {scan.example!r}" if scan.example else ""
    return (
        f"only {share:.0%} of the event lines{where} have a recognised timestamp (at least "
        f"{MIN_TIMESTAMP_SHARE:.0%} are needed; {found}){example}; known formats: {', '.join(known_formats())}"
    )


@dataclass
class _LogScan:
    """One log file read for env check: the format detected from its first lines, then every line
    read with it (`sampled` False), or for a file over FULL_PASS_BYTES, SAMPLE_BLOCKS - 1 blocks of
    SAMPLE_BLOCK_LINES lines spread over it and its last _TAIL_BYTES (`sampled` True; `lines`
    still counts the whole file, exactly)."""

    reader: LineReader
    jsonl: bool
    format: str | None = None
    lines: int = 0  # non-blank lines of the file
    read: int = 0  # non-blank lines read
    sampled: bool = False
    stamped: int = 0
    levelled: int = 0
    continuation: int = 0
    unrecognised: int = 0
    later: int = 0
    undecodable: int = 0
    cut: int = 0
    example: str | None = None
    first: datetime | None = None
    last: datetime | None = None
    levels: Counter[str] = field(default_factory=Counter)
    bad_json: list[int] = field(default_factory=list)
    bad_json_unnumbered: int = 0

    @classmethod
    def of(cls, handle: BinaryIO, context: ParseContext, *, jsonl: bool) -> _LogScan:
        head = list(islice(_decoded(handle), SAMPLE_LINES))
        detection = detect(head, context)
        scan = cls(LineReader(_format(detection.format), context), jsonl, detection.format)
        size = os.fstat(handle.fileno()).st_size
        handle.seek(0)
        if size <= FULL_PASS_BYTES:
            lines = Lines(io.TextIOWrapper(handle, encoding="utf-8", errors="replace", newline="\n"))
            scan.tally(enumerate(lines, 1))
            scan.lines, scan.cut = scan.read, lines.cut
            return scan
        scan.sampled = True
        read_to = 0  # blocks never overlap: each starts at or after the end of the one before
        for block in range(SAMPLE_BLOCKS - 1):
            start = max(size * block // (SAMPLE_BLOCKS - 1), read_to)
            if start >= size - _TAIL_BYTES:
                break
            scan.tally(_block(handle, start, numbered=block == 0, skip_partial=start > read_to))
            read_to = handle.tell()
        # the last block is the end of the file, so `last` is the file's last time
        start = max(size - _TAIL_BYTES, read_to)
        scan.tally(_block(handle, start, numbered=False, skip_partial=start > read_to, lines=None))
        handle.seek(0)
        scan.lines = non_blank_lines(handle)
        scan.sampled = scan.read < scan.lines  # the blocks may have covered the whole file
        return scan

    def tally(self, numbered: Iterable[tuple[int | None, str]]) -> None:
        context, redactor = self.reader.context, None
        for number, raw in numbered:
            line = raw.rstrip("\r\n")
            if not line.strip():
                continue
            self.read += 1
            self.undecodable += "\ufffd" in line
            if self.jsonl and not _json_object(line):
                if number is None:
                    self.bad_json_unnumbered += 1
                else:
                    self.bad_json.append(number)
            kind, _, parsed = self.reader.read(line)
            if kind is LineKind.CONTINUATION:
                self.continuation += 1
                continue
            if parsed is None:
                self.unrecognised += 1
                self.levels["NONE"] += 1
                if self.example is None:
                    redactor = redactor or Redactor.from_env()
                    self.example = redactor.mask_line(line[:_EXAMPLE_CHARS])
                continue
            self.levels[parsed.level or "NONE"] += 1
            self.levelled += parsed.level is not None
            if parsed.timestamp is not None:
                moment = localize(parsed.timestamp, context.tz)
                self.stamped += 1
                self.first = moment if self.first is None else min(self.first, moment)
                self.last = moment if self.last is None else max(self.last, moment)
                self.later += moment > context.clock


def _format(name: str | None) -> LogFormat | None:
    return None if name is None else format_named(name)


def _block(
    handle: BinaryIO, start: int, *, numbered: bool, skip_partial: bool, lines: int | None = SAMPLE_BLOCK_LINES
) -> Iterator[tuple[int | None, str]]:
    """Up to `lines` lines from byte `start` (all to the end for None), after the rest of a line
    cut by the seek when `skip_partial`; numbered from 1 when reading from the file's start."""
    handle.seek(start)
    if skip_partial:
        handle.readline(LIMITS.max_line_chars)
    decoded = _decoded(handle)
    pairs = enumerate(decoded, 1) if numbered else ((None, line) for line in decoded)
    return islice(pairs, lines)


def _decoded(handle: BinaryIO) -> Iterator[str]:
    """Lines of a binary handle as text, each cut at the line limit."""
    while raw := handle.readline(LIMITS.max_line_chars):
        yield raw.decode("utf-8", errors="replace")


def _json_object(line: str) -> bool:
    try:
        return isinstance(json.loads(line), dict)
    except (ValueError, RecursionError):
        return False


def _without_prefix(message: str, name: str) -> str:
    return message.removeprefix(f"{name}: ")
