"""evcli.diagnosis.changes: what a series' change is, judged by what the quantity is (counter, bounded share)."""

import numpy as np

from evcli.backends.snapshot_changes import SeriesPoints
from evcli.diagnosis import changes, robust

STEP = 30.0


def points(metric: str, unit: str, values: list[float]) -> SeriesPoints:
    times = np.arange(len(values), dtype=float) * STEP
    return SeriesPoints("svc", metric, unit, "metrics/svc.csv", None, times, np.asarray(values, dtype=float))


def judged(series: SeriesPoints, split: int) -> changes.Change:
    end = float(series.times[-1])
    found = changes.series_changes([series], (0.0, split * STEP), (split * STEP, end)).changes
    assert len(found) == 1
    return found[0]


def test_a_counter_falls_only_when_it_restarts_from_zero():
    assert changes.is_counter("http_requests_total", np.array([10.0, 20, 30, 2, 12, 22, 32]))
    # a success rate that sits at 100 and falls to 50 is a share, whatever its class's counters do
    assert not changes.is_counter("SuccessRate", np.array([100.0] * 240 + [100.02, 75.2] + [50.41] * 50))


def test_a_success_share_is_judged_by_the_share_that_fails():
    """99.9 % to 75 % is 0.1 % to 25 % failing: a change far outside any noise, stated in the series' own
    numbers and direction, not a quarter off a level of 99.9."""
    rng = np.random.default_rng(3)
    values = list(np.clip(99.9 + rng.normal(0, 0.05, 60), 0, 100)) + [75.0] * 20
    change = judged(points("SuccessRate", "%", values), 60)
    assert change.direction == "down" and change.value == 75.0
    assert 99.8 < change.baseline < 100.0
    assert change.score >= 20  # against the old level-relative judgement: 4.9 spreads, score ~2.4
    # a dip of a fraction of a point stays noise (the share is not judged finer than 1 % of 100 %)
    assert not changes.series_changes(
        [points("SuccessRate", "%", list(values[:60]) + [99.5] * 20)], (0.0, 60 * STEP), (60 * STEP, 79 * STEP)
    ).changes


def test_a_bounded_quantity_is_judged_against_the_room_left_below_its_ceiling():
    """A disk at 80 % that fills to 95 % used 15 of its 20 remaining points: surprising, not 3 % of 80."""
    rng = np.random.default_rng(4)
    values = list(80 + rng.normal(0, 0.2, 60)) + [95.5] * 20
    change = judged(points("disk_used", "%", values), 60)
    base = robust.baseline_of(np.asarray(values[:60]), 0.0, 100.0)
    assert base is not None and base.spread < robust.SPREAD_FLOOR * 80  # floored by the room (20), not the level
    assert change.direction == "up" and change.score >= 10


def test_an_alert_that_became_active_in_the_window_is_a_change_of_its_class():
    from evcli.backends.snapshot_changes import AlertStart

    alerts = [
        AlertStart("order", "HighMemoryUsage", "firing", 900.0, 91.0, "%"),
        AlertStart("order", "HighErrorRate", "pending", 950.0, 8.7, "%"),
        AlertStart("node", "DiskSpaceLow", "firing", 100.0, 94.0, "%"),  # active before the window: no change in it
    ]
    found = {c.signal: c for c in changes.alert_changes(alerts, (600.0, 1200.0))}
    assert set(found) == {"HighMemoryUsage", "HighErrorRate"}
    memory = found["HighMemoryUsage"]
    assert (memory.kind, memory.signal_class, memory.value, memory.onset, memory.state) == (
        "alert",
        "memory",
        91.0,
        900.0,
        "firing",
    )
    assert found["HighErrorRate"].signal_class == "errors"
    assert found["HighErrorRate"].score == changes.ALERT_SCORE * changes.PENDING_SHARE
