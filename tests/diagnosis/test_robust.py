"""evcli.diagnosis.robust: baselines, shifts, onsets and change points judged against the data's own variation."""

import math
import random

from evcli.diagnosis import robust


def noisy(centre: float, spread: float, count: int, seed: int = 1) -> list[float]:
    rng = random.Random(seed)
    return [rng.gauss(centre, spread) for _ in range(count)]


def test_a_level_shift_is_found_with_its_onset_value_and_direction():
    base = robust.baseline_of(noisy(6.6, 0.4, 60))
    window = noisy(6.6, 0.4, 5, seed=2) + noisy(88.0, 2.0, 20, seed=3)
    shift = robust.shift_of(base, window)
    assert shift is not None and shift.direction == "up"
    assert shift.onset_index == 5
    assert 85 < shift.value < 91 and shift.peak >= shift.value
    assert shift.score == robust.Z_CAP  # far outside and more than half the level: fully sure


def test_a_drop_is_a_change_down():
    base = robust.baseline_of(noisy(99.5, 0.2, 40))
    shift = robust.shift_of(base, noisy(70.0, 1.0, 10, seed=4))
    assert shift is not None and shift.direction == "down"


def test_noise_and_a_single_blip_are_no_change():
    base = robust.baseline_of(noisy(120.0, 5.0, 60))
    window = noisy(120.0, 5.0, 30, seed=9)
    assert robust.shift_of(base, window) is None
    window[10] = 900.0  # one point far out: no sustained run
    assert robust.shift_of(base, window) is None


def test_a_constant_baseline_has_a_floor_and_a_constant_window_no_change():
    base = robust.baseline_of([0.0] * 20)
    assert base is not None and base.spread > 0 and base.mad_spread == 0
    assert robust.shift_of(base, [0.0] * 10) is None
    assert robust.shift_of(robust.baseline_of([5.0] * 20), [5.0] * 10) is None


def test_too_few_baseline_points_are_not_judged():
    assert robust.baseline_of([1.0, 2.0]) is None
    assert robust.shift_of(robust.baseline_of([1.0, 1.1, 0.9]), []) is None


def test_a_quiet_series_is_judged_against_a_share_of_its_level():
    base = robust.baseline_of(noisy(1000.0, 0.5, 60))
    # 6% of the level is 120 spreads of its noise, but within the floor (5% of the level): no change
    assert robust.shift_of(base, noisy(1060.0, 0.5, 20, seed=5)) is None
    shift = robust.shift_of(base, noisy(1200.0, 0.5, 20, seed=5))  # 20%: a change, not a full one
    assert shift is not None and 0 < shift.score < robust.Z_CAP / 2


def test_the_change_point_is_where_the_mean_shifts():
    values = noisy(10, 1, 100) + noisy(30, 1, 40, seed=6)
    index = robust.changepoint(values)
    assert index is not None and abs(index - 100) <= 2
    assert robust.changepoint([1.0] * 5) is None
    assert not math.isnan(robust.score_of(3.0, 1.0, 0.0, 1e-9))
