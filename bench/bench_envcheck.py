#!/usr/bin/env python
"""`evcli env check` on a snapshot with one 1,000,000-line mixed-format log (issue 9 target: <= 3 s).

    python bench/bench_envcheck.py [lines]

Prints one JSON object: the wall time of `check_env` (a file this size is sampled, so the time
hardly grows with the file), the time of `grep -c ''` on the same file for scale, and what the
report says of the file (format, line count, sampled lines, shares).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from _common import as_installed

from evcli.backends.envcheck import check_env

START = datetime(2026, 7, 8, 12, 0, tzinfo=UTC)
LEVELS = ("INFO", "INFO", "INFO", "WARN", "ERROR", "DEBUG")
TARGET_S = 3.0


def _line(index: int) -> str:
    """Java lines with a stack trace after every 50th, and an ISO 8601 line every 97th."""
    moment = START + timedelta(milliseconds=index * 37)
    if index % 97 == 0:
        return f"{moment.isoformat(timespec='milliseconds')} INFO health check ok in {index % 90}ms"
    if index % 50 == 1:
        return "java.net.SocketTimeoutException: Read timed out\n\tat java.net.SocketInputStream.read(Unknown Source)"
    return (
        f"{moment:%Y-%m-%d %H:%M:%S}.{index % 1000:03d} [http-nio-8080-exec-{index % 9}] {LEVELS[index % 6]} "
        f"c.e.OrderService - order {index} placed for customer {index * 7 % 10007}"
    )


def write_snapshot(root: Path, lines: int) -> Path:
    (root / "logs").mkdir(parents=True)
    (root / "env.toml").write_text('now = "2026-07-09T23:00:00Z"\n', encoding="utf-8")
    path = root / "logs" / "big-service.log"
    with path.open("w", encoding="utf-8") as handle:
        written = 0
        while written < lines:
            text = _line(written)
            handle.write(text + "\n")
            written += text.count("\n") + 1
    return path


def main() -> None:
    as_installed()
    lines = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    with tempfile.TemporaryDirectory() as folder:
        path = write_snapshot(Path(folder) / "snap", lines)
        started = time.perf_counter()
        report = check_env(path.parent.parent)
        seconds = time.perf_counter() - started
        started = time.perf_counter()
        subprocess.run(["grep", "-c", "", str(path)], check=True, capture_output=True)
        grep_s = time.perf_counter() - started
        [info] = report.log_files
        print(
            json.dumps(
                {
                    "lines": lines,
                    "bytes": path.stat().st_size,
                    "env_check_s": round(seconds, 3),
                    "target_s": TARGET_S,
                    "ok": seconds <= TARGET_S,
                    "grep_c_s": round(grep_s, 3),
                    "ratio_to_grep": round(seconds / grep_s, 1),
                    "file": info.model_dump(mode="json"),
                    "problems": [problem.model_dump() for problem in report.problems],
                },
                indent=2,
            )
        )


if __name__ == "__main__":
    main()
