"""Where an incident begins when the question names no time (pure).

Each series' single change point (the CUSUM estimate, evcli.diagnosis.robust.changepoint) is
judged as a baseline before it against the points after it; of the series whose change scores
at least ONSET_SHARE of the strongest (and at least MIN_SCORE), the earliest change point is the
incident's start: a cause changes first, its effects after it. A snapshot without a changed
series has no incident start (None), and the caller says so.
"""

from __future__ import annotations

import numpy as np

from evcli.backends.snapshot_changes import SeriesPoints
from evcli.diagnosis import robust, signals

ONSET_SHARE = 0.5
MIN_SCORE = 5.0


def step_of(series: list[SeriesPoints]) -> float:
    """The typical spacing of the points (seconds), 60 when no series has two points."""
    gaps = [np.diff(points.times[:51]) for points in series if points.times.size > 1]
    joined = np.concatenate(gaps) if gaps else np.empty(0)
    joined = joined[joined > 0]
    return float(np.median(joined)) if joined.size else 60.0


def incident_start(series: list[SeriesPoints]) -> float | None:
    candidates: list[tuple[float, float]] = []  # (score, time of the change point)
    for points in series:
        index = robust.changepoint(points.values)
        if index is None:
            continue
        base = robust.baseline_of(points.values[:index])
        shift = robust.shift_of(base, points.values[index:]) if base else None
        if shift is None:
            continue
        klass = signals.of_metric(points.metric)
        candidates.append((shift.score * klass.weight, float(points.times[index + shift.onset_index])))
    if not candidates:
        return None
    strongest = max(score for score, _ in candidates)
    if strongest < MIN_SCORE:
        return None
    return min(moment for score, moment in candidates if score >= ONSET_SHARE * strongest)
