"""Where an incident begins when the question names no time (pure).

Each series' single change point (the CUSUM estimate, evcli.diagnosis.robust.changepoint; a
counter's of its rate; a count of events where its first event happened; a log's ERROR lines per
step, as counts) is judged as a baseline
before it against the points after it. A fault changes many series within a short time (its own,
then its callers' as the effect travels); an unrelated blip or drift changes one. So the start is
the change point that opens the CLUSTER_STEPS-long stretch holding the most change score (changes
scoring at least MIN_SCORE), the earliest such on a tie. A snapshot without a changed series has
no incident start (None), and the caller says so.
"""

from __future__ import annotations

import numpy as np

from evcli.backends.snapshot_changes import SeriesPoints
from evcli.diagnosis import robust, signals
from evcli.diagnosis.changes import EVENT_SCORE, event_quantum, judged_view

MIN_SCORE = 3.0
CLUSTER_STEPS = 10
MIN_TAIL = 2 * robust.RUN


def step_of(series: list[SeriesPoints]) -> float:
    """The typical spacing of the points (seconds), 60 when no series has two points."""
    gaps = [np.diff(points.times[:51]) for points in series if points.times.size > 1]
    joined = np.concatenate(gaps) if gaps else np.empty(0)
    joined = joined[joined > 0]
    return float(np.median(joined)) if joined.size else 60.0


def incident_start(series: list[SeriesPoints], step: float = 60.0) -> float | None:
    """The start of the densest cluster of change points (see the module docstring)."""
    candidates: list[tuple[float, float]] = []  # (score, time of the change point)
    for points in series:
        klass = signals.of_metric(points.metric)
        times, values = points.times, points.values
        if klass.events:  # a count of events: where the first one happened, scored by how many
            steps = np.diff(values)
            rises = np.where(steps >= 0, steps, values[1:])
            if rises.size and rises.max() > 0:
                score = min(robust.Z_CAP, EVENT_SCORE * float(rises.sum()))
                candidates.append((score * klass.weight, float(times[1 + int(np.argmax(rises > 0))])))
            continue
        view = judged_view(points)  # judged as the change finder judges it (a counter's rate, a share's failing part)
        times, values = view.times, view.judged
        index = robust.changepoint(values)
        if index is None or values.size - index < MIN_TAIL:
            continue  # a change point in the last few points cannot be told from a blip
        quantum = view.quantum if view.shortfall else (event_quantum(times) if klass.as_rate else 0.0)
        quantum = 1.0 if points.unit == "lines" else quantum
        base = robust.baseline_of(values[:index], quantum, view.ceiling)
        shift = robust.shift_of(base, values[index:], view.ceiling) if base else None
        if shift is None or shift.points < robust.RUN:
            continue  # an onset in the last few points: a blip as far as anyone can tell yet
        candidates.append((shift.score * klass.weight, float(times[index + shift.onset_index])))
    strong = [(score, moment) for score, moment in candidates if score >= MIN_SCORE]
    if not strong:
        return None
    span = CLUSTER_STEPS * step
    masses = [(sum(s for s, m in strong if moment <= m <= moment + span), -moment) for _, moment in strong]
    return -max(masses)[1]
