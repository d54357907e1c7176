"""Robust statistics of a series against its baseline: median, MAD, the band, the onset, the score.

Invariants:
  - a baseline's centre is its median and its spread 1.4826 × MAD (the standard deviation of
    normal noise), floored so that a constant series is not infinitely surprising: at least
    SPREAD_FLOOR of the median's size, and never 0;
  - the incident value is the median of the window's points from the onset on (a level shift is
    judged by where it sits, not by one point), the peak its extreme in the change's direction;
  - the onset is the first window point outside the band (CENTRE ± BAND × spread) in the
    change's direction that starts a run in which most points stay outside;
  - no fixed thresholds on values: every judgement is relative to the baseline's own variation.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

MAD_SCALE = 1.4826
SPREAD_FLOOR = 0.05  # of |median|: a quiet series' spread is at least 5% of its level
ABSOLUTE_FLOOR = 1e-9
BAND = 3.0  # spreads from the centre: a point outside is unusual
RUN = 4  # an onset starts a run of RUN points ...
RUN_OUTSIDE = 3  # ... of which at least RUN_OUTSIDE are outside the band (a single blip is no onset)
Z_CAP = 50.0  # a score saturates: a 50-spread change is as sure as a 5000-spread one
RELATIVE_FULL = 0.5  # a change of half the baseline's level (or more) counts fully


@dataclass(frozen=True)
class Baseline:
    centre: float
    spread: float  # what changes are judged against (floored)
    points: int
    mad_spread: float = 0.0  # 1.4826 × MAD as measured (what the evidence states)


@dataclass(frozen=True)
class Shift:
    """A change of a series in a window against its baseline."""

    direction: str  # "up" or "down"
    onset_index: int  # index into the window's points
    value: float  # median from the onset on
    peak: float  # the extreme from the onset on, in the direction
    points: int  # window points from the onset on
    outside: int  # of them, outside the band
    z: float  # (value - centre) / spread, signed
    score: float


def median(points: np.ndarray) -> float:
    """np.median of a 1-D array without NaN, by partition: the change finder takes thousands of
    medians of short arrays, where np.median's general machinery costs more than the work."""
    count = points.size
    middle = count // 2
    if count % 2:
        return float(np.partition(points, middle)[middle])
    low, high = np.partition(points, (middle - 1, middle))[middle - 1 : middle + 1]
    return float((low + high) / 2)


def baseline_of(
    values: Sequence[float] | np.ndarray, quantum: float = 0.0, ceiling: float | None = None
) -> Baseline | None:
    """The baseline's centre and spread; None for fewer than 3 points (no variation can be judged).
    `quantum`: the smallest step the series can take (a counter's one event per interval): a series
    is never judged finer than that. `ceiling`: the bound of a bounded quantity (100 %): its spread
    floor is a share of the room left below it when that is smaller than its level (a disk at 80 %
    has 20 points to fill, not 80)."""
    points = np.asarray(values, dtype=float)
    if points.size < 3:
        return None
    centre = median(points)
    mad = median(np.abs(points - centre))
    level = abs(centre) if ceiling is None or ceiling <= centre else min(abs(centre), ceiling - centre)
    spread = max(MAD_SCALE * mad, SPREAD_FLOOR * level, quantum, ABSOLUTE_FLOOR)
    return Baseline(centre, spread, int(points.size), MAD_SCALE * mad)


def score_of(z: float, change: float, centre: float, spread: float, ceiling: float | None = None) -> float:
    """How sure and how large a change is: |z| (capped) weighed by its size relative to the level, or,
    for a bounded quantity rising towards its `ceiling` (100 %, a ratio's 1), to the room it had left."""
    level = max(abs(centre), spread)
    relative = abs(change) / level
    if ceiling is not None and change > 0 and ceiling > centre:
        relative = max(relative, change / (ceiling - centre))
    relative = min(1.0, relative / RELATIVE_FULL)
    return round(min(abs(z), Z_CAP) * relative, 3)


def shift_of(base: Baseline, window: Sequence[float] | np.ndarray, ceiling: float | None = None) -> Shift | None:
    """The change of `window` against `base`, None when no sustained run leaves the band (`ceiling`: see
    score_of)."""
    points = np.asarray(window, dtype=float)
    if not points.size:
        return None
    outside = (points - base.centre) / base.spread
    best: Shift | None = None
    for direction, sign in (("up", 1.0), ("down", -1.0)):
        flags = sign * outside > BAND
        onset = _onset(flags)
        if onset is None:
            continue
        tail = points[onset:]
        value = median(tail)
        z = (value - base.centre) / base.spread
        if sign * z <= BAND:
            continue  # the run did not hold: the points after the onset sit inside the band
        found = Shift(
            direction=direction,
            onset_index=onset,
            value=value,
            peak=float(tail.max() if sign > 0 else tail.min()),
            points=int(tail.size),
            outside=int(flags[onset:].sum()),
            z=z,
            score=score_of(z, value - base.centre, base.centre, base.spread, ceiling),
        )
        if best is None or found.score > best.score:
            best = found
    return best


def sustained(base: Baseline, points: np.ndarray, direction: str) -> bool:
    """Whether a run outside the band in `direction` starts at the first of `points`."""
    sign = 1.0 if direction == "up" else -1.0
    return _onset(sign * (points - base.centre) / base.spread > BAND) == 0


def _onset(flags: np.ndarray) -> int | None:
    """The first index that is outside and starts a run of RUN points with RUN_OUTSIDE outside
    (near the window's end, where fewer than RUN points are left: all of the rest outside)."""
    count = flags.size
    if not count or not flags.any():
        return None
    within = np.convolve(flags.astype(np.int64), np.ones(RUN, dtype=np.int64))[RUN - 1 :]  # flags[i:i+RUN] sums
    left = np.minimum(RUN, count - np.arange(count))
    starts = flags & (within >= np.minimum(RUN_OUTSIDE, left)) & ((left >= RUN) | (within == left))
    return int(np.argmax(starts)) if starts.any() else None


def changepoint(values: Sequence[float] | np.ndarray) -> int | None:
    """The index where the mean of `values` shifts most (the CUSUM estimate of one change point),
    None for fewer than 2 × RUN points or a constant series."""
    points = np.asarray(values, dtype=float)
    count = points.size
    if count < 2 * RUN:
        return None
    running = np.abs(np.cumsum(points - points.mean())[RUN - 1 : count - RUN])  # split after index RUN-1 ..
    if not running.size or float(running.max()) <= ABSOLUTE_FLOOR * count:
        return None
    return int(np.argmax(running)) + RUN
