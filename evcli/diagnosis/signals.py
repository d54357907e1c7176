"""Signal classes (signals.toml): what a metric or a log template says about a fault.

A metric name is compared in a normal form (lower case; camel humps, spaces and punctuation as
`_`, with `_` at both ends) so `PodLatencyP90`, `latency_p90` and `latency-p90` read alike; a log
template is compared in lower case. The first class whose words occur wins; a signal no class
claims is `other` (weight OTHER_WEIGHT, it travels, it points at no fault kind).
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path

TABLE = Path(__file__).with_name("signals.toml")
OTHER_WEIGHT = 0.3
_HUMP = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_SEPARATORS = re.compile(r"[^a-z0-9]+")


@dataclass(frozen=True)
class SignalClass:
    name: str
    fault: str | None
    cause: bool
    bad: str
    weight: float
    words: tuple[str, ...]
    as_rate: bool = False  # a cumulative counter of it is judged as its rate
    text: bool = True  # its words are read in log templates too (else metric names only)
    events: bool = False  # its series counts discrete events (judged by how many happened)

    def is_bad(self, direction: str) -> bool:
        return self.bad in ("both", direction)


OTHER = SignalClass("other", None, False, "both", OTHER_WEIGHT, ())


@cache
def classes() -> tuple[SignalClass, ...]:
    rows = tomllib.loads(TABLE.read_text(encoding="utf-8"))["classes"]
    return tuple(
        SignalClass(
            name=row["name"],
            fault=row.get("fault"),
            cause=bool(row["cause"]),
            bad=row["bad"],
            weight=float(row["weight"]),
            words=tuple(row["words"]),
            as_rate=bool(row.get("rate", False)),
            text=bool(row.get("text", True)),
            events=bool(row.get("events", False)),
        )
        for row in rows
    )


def metric_key(name: str) -> str:
    """`PodLatencyP90` → `_pod_latency_p90_`."""
    return "_" + _SEPARATORS.sub("_", _HUMP.sub("_", name).lower()).strip("_") + "_"


@cache
def of_metric(name: str) -> SignalClass:
    key = metric_key(name)
    return next((row for row in classes() if any(word in key for word in row.words)), OTHER)


def of_text(text: str) -> SignalClass:
    """The class of a log template (its words as written, lower case)."""
    lowered = text.lower()
    return next((row for row in classes() if row.text and any(word in lowered for word in row.words)), OTHER)


def by_name(name: str) -> SignalClass:
    return next((row for row in classes() if row.name == name), OTHER)
