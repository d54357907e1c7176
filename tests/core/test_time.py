"""Time expressions and absolute ranges (evcli/core/time.py): forms, zones, DST, range arithmetic."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from evcli.core.errors import EXIT_USAGE, BadInput
from evcli.core.time import (
    TimeExpressionError,
    TimeRange,
    localize,
    parse_duration,
    parse_range_text,
    parse_time,
    zone_named,
)

SHANGHAI = ZoneInfo("Asia/Shanghai")
NEW_YORK = ZoneInfo("America/New_York")
BERLIN = ZoneInfo("Europe/Berlin")
LORD_HOWE = ZoneInfo("Australia/Lord_Howe")  # DST shift of 30 minutes
ZONES = [UTC, SHANGHAI, NEW_YORK, BERLIN, LORD_HOWE, timezone(timedelta(hours=-9, minutes=-30))]
CLOCK = datetime(2023, 1, 29, 2, 10, tzinfo=UTC)  # 10:10 in Shanghai


def at(text: str, tz=SHANGHAI, clock=CLOCK) -> datetime:
    return parse_time(text, clock=clock, tz=tz)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2023-01-29T10:03:00+08:00", datetime(2023, 1, 29, 2, 3, tzinfo=UTC)),
        ("2023-01-29T02:03Z", datetime(2023, 1, 29, 2, 3, tzinfo=UTC)),
        ("2023-01-29T10:03:00,5-05:00", datetime(2023, 1, 29, 15, 3, 0, 500000, tzinfo=UTC)),
        ("2023-01-29T10:03:00.123456789+0530", datetime(2023, 1, 29, 4, 33, 0, 123456, tzinfo=UTC)),
        ("2023-01-29 10:03", datetime(2023, 1, 29, 2, 3, tzinfo=UTC)),  # Shanghai wall time
        ("2023-01-29 10:03:11", datetime(2023, 1, 29, 2, 3, 11, tzinfo=UTC)),
        ("2023-01-29", datetime(2023, 1, 28, 16, 0, tzinfo=UTC)),  # midnight in Shanghai
        ("10:03", datetime(2023, 1, 29, 2, 3, tzinfo=UTC)),  # clock's date in Shanghai
        ("9:05:30.25", datetime(2023, 1, 29, 1, 5, 30, 250000, tzinfo=UTC)),
        ("-2h", CLOCK - timedelta(hours=2)),
        ("-30m", CLOCK - timedelta(minutes=30)),
        ("-1d", CLOCK - timedelta(days=1)),
        ("-90s", CLOCK - timedelta(seconds=90)),
        ("now", CLOCK),
        (" NOW ", CLOCK),
    ],
)
def test_every_accepted_form_reads_as_the_right_instant(text: str, expected: datetime) -> None:
    moment = at(text)
    assert moment == expected
    assert moment.utcoffset() is not None


def test_naive_times_take_the_environment_zone_and_keep_it() -> None:
    moment = at("2023-01-29 10:03")
    assert moment.tzinfo is SHANGHAI
    assert moment.isoformat() == "2023-01-29T10:03:00+08:00"


def test_time_of_day_uses_the_clocks_date_in_the_environment_zone() -> None:
    # 23:30 UTC on the 28th is already the 29th in Shanghai, still the 28th in New York
    clock = datetime(2023, 1, 28, 23, 30, tzinfo=UTC)
    assert at("08:00", SHANGHAI, clock).date().isoformat() == "2023-01-29"
    assert at("08:00", NEW_YORK, clock).date().isoformat() == "2023-01-28"


def test_a_zoned_iso_time_keeps_its_own_offset() -> None:
    assert at("2023-01-29T10:03:00-05:00").utcoffset() == timedelta(hours=-5)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "yesterday",
        "10:61",
        "25:00",
        "2023-02-30 10:00",
        "-2x",
        "-0h",
        "+2h",
        "2023-01-29T10:03:00+25:00",
        "10.03",
        "-99999999d",
        "2023/01/29 10:03",
    ],
)
def test_bad_time_is_a_one_line_usage_error_naming_the_forms(text: str) -> None:
    with pytest.raises(TimeExpressionError) as caught:
        at(text)
    error = caught.value
    assert isinstance(error, ValueError) and isinstance(error, BadInput)
    assert error.exit_code == EXIT_USAGE
    assert "\n" not in str(error)
    assert "2023-01-29" in str(error) or "window" in str(error)


def test_durations_and_their_limits() -> None:
    assert parse_duration("1h") == timedelta(hours=1)
    assert parse_duration("2w") == timedelta(weeks=2)
    for bad in ("0m", "1y", "h", "1.5h", "99999w"):
        with pytest.raises(TimeExpressionError):
            parse_duration(bad)


def test_zone_named() -> None:
    assert zone_named(None) is UTC and zone_named("UTC") is UTC and zone_named("") is UTC
    assert zone_named("Europe/Berlin") == BERLIN
    with pytest.raises(TimeExpressionError, match="IANA"):
        zone_named("Mars/Olympus")


# --- DST ---------------------------------------------------------------------------------


def test_nonexistent_wall_time_moves_past_the_gap() -> None:
    moment = localize(datetime(2023, 3, 12, 2, 30), NEW_YORK)  # clocks jump 02:00 -> 03:00
    assert moment.isoformat() == "2023-03-12T03:30:00-04:00"
    assert at("2023-03-12 02:30", NEW_YORK) == moment
    # Lord Howe jumps by 30 minutes: 02:00 -> 02:30
    assert localize(datetime(2023, 10, 1, 2, 15), LORD_HOWE).isoformat() == "2023-10-01T02:45:00+11:00"


def test_ambiguous_wall_time_takes_the_first_occurrence() -> None:
    moment = localize(datetime(2023, 10, 29, 2, 30), BERLIN)  # 02:30 happens twice
    assert moment.isoformat() == "2023-10-29T02:30:00+02:00"
    assert moment.astimezone(UTC) == datetime(2023, 10, 29, 0, 30, tzinfo=UTC)
    assert at("2023-11-05 01:30", NEW_YORK).utcoffset() == timedelta(hours=-4)


def test_time_of_day_in_a_dst_gap_does_not_crash() -> None:
    clock = datetime(2023, 3, 12, 12, 0, tzinfo=UTC)
    assert at("02:30", NEW_YORK, clock).isoformat() == "2023-03-12T03:30:00-04:00"


# --- ranges ------------------------------------------------------------------------------


def test_build_from_since_and_until() -> None:
    built = TimeRange.build(since="10:03", until="10:05", clock=CLOCK, tz=SHANGHAI)
    assert built is not None
    assert built.text() == "2023-01-29T10:03:00+08:00..2023-01-29T10:05:00+08:00"
    assert str(built) == built.text()
    assert built.text(UTC) == "2023-01-29T02:03:00+00:00..2023-01-29T02:05:00+00:00"


def test_build_from_a_window_ends_at_the_clock() -> None:
    built = TimeRange.build(window="30m", clock=CLOCK, tz=SHANGHAI)
    assert built == TimeRange(CLOCK - timedelta(minutes=30), CLOCK)
    assert built is not None and built.text() == "2023-01-29T09:40:00+08:00..2023-01-29T10:10:00+08:00"


def test_nothing_named_is_none_for_the_whole_snapshot() -> None:
    assert TimeRange.build(clock=CLOCK, tz=SHANGHAI) is None


def test_window_and_since_together_are_refused() -> None:
    with pytest.raises(TimeExpressionError, match="not both"):
        TimeRange.build(since="-2h", window="1h", clock=CLOCK, tz=UTC)


def test_since_after_until_is_refused() -> None:
    with pytest.raises(TimeExpressionError, match="after its end"):
        TimeRange.build(since="10:05", until="10:03", clock=CLOCK, tz=SHANGHAI)


def test_naive_ends_are_refused() -> None:
    with pytest.raises(TimeExpressionError, match="no zone"):
        TimeRange(datetime(2023, 1, 1), None)


def test_open_ends_are_bounded_by_the_callers_first_and_last_timestamp() -> None:
    first, last = datetime(2023, 1, 29, 1, 0, tzinfo=UTC), datetime(2023, 1, 29, 3, 0, tzinfo=UTC)
    since_only = TimeRange.build(since="10:03", clock=CLOCK, tz=SHANGHAI)
    assert since_only is not None and since_only.text() == "2023-01-29T10:03:00+08:00.."
    assert not since_only.is_bounded
    assert since_only.bounded(first, last) == TimeRange(datetime(2023, 1, 29, 2, 3, tzinfo=UTC), last)
    before_everything = TimeRange.build(until="2023-01-28 00:00", clock=CLOCK, tz=SHANGHAI)
    assert before_everything is not None
    empty = before_everything.bounded(first, last)
    assert empty.start == empty.end == before_everything.end
    assert not empty.contains(first)


def test_contains_overlaps_and_clip_by_hand() -> None:
    base = TimeRange(datetime(2023, 1, 1, 10, tzinfo=UTC), datetime(2023, 1, 1, 12, tzinfo=UTC))
    inner = TimeRange(datetime(2023, 1, 1, 19, tzinfo=SHANGHAI), datetime(2023, 1, 1, 20, tzinfo=SHANGHAI))
    later = TimeRange(datetime(2023, 1, 1, 12, tzinfo=UTC), None)
    assert base.contains(inner) and not inner.contains(base)
    assert base.contains(datetime(2023, 1, 1, 12, tzinfo=UTC)) and not base.contains(later)
    assert base.overlaps(later) and base.clip(later) == TimeRange(base.end, base.end)
    assert base.clip(TimeRange(datetime(2023, 1, 2, tzinfo=UTC), None)) is None
    assert TimeRange(None, None).contains(base) and TimeRange(None, None).text() == ".."


def test_a_range_across_the_fall_back_hour_is_ordered_by_instant() -> None:
    # 02:40 (+02:00, first pass) is before 02:30 (+01:00, second pass); wall-time order says the opposite
    first_pass = datetime(2023, 10, 29, 0, 40, tzinfo=UTC).astimezone(BERLIN)
    second_pass = datetime(2023, 10, 29, 1, 30, tzinfo=UTC).astimezone(BERLIN)
    across = TimeRange(first_pass, second_pass)
    assert across.text() == "2023-10-29T02:40:00+02:00..2023-10-29T02:30:00+01:00"
    assert across.contains(datetime(2023, 10, 29, 1, 0, tzinfo=UTC).astimezone(BERLIN))
    assert not across.contains(datetime(2023, 10, 29, 0, 35, tzinfo=UTC).astimezone(BERLIN))
    earlier = TimeRange(None, datetime(2023, 10, 29, 0, 50, tzinfo=UTC).astimezone(BERLIN))
    assert across.clip(earlier) == TimeRange(first_pass, earlier.end)
    with pytest.raises(TimeExpressionError, match="after its end"):
        TimeRange(second_pass, first_pass)


def test_an_ambiguous_end_keeps_its_offset_and_instant_through_the_text() -> None:
    second_pass = datetime(2052, 10, 27, 1, 0, tzinfo=UTC).astimezone(BERLIN)  # 02:00 the second time
    assert second_pass.fold == 1
    written = TimeRange(None, second_pass)
    assert written.text() == "..2052-10-27T02:00:00+01:00"
    back = parse_range_text(written.text())
    assert back == written and hash(back) == hash(written)
    assert back.end is not None and back.end.utcoffset() == timedelta(hours=1)
    assert back.end.astimezone(UTC) == datetime(2052, 10, 27, 1, 0, tzinfo=UTC)
    first_pass = datetime(2052, 10, 27, 0, 0, tzinfo=UTC).astimezone(BERLIN)  # same wall time, +02:00
    assert TimeRange(None, first_pass) != written


def test_comparing_with_a_naive_time_is_refused() -> None:
    with pytest.raises(TypeError, match="naive"):
        TimeRange(None, CLOCK).contains(datetime(2023, 1, 1))


def test_short_form_of_the_issue_is_read() -> None:
    short = parse_range_text("2023-01-29T10:03:00+08:00..10:05:00+08:00")
    assert short.text() == "2023-01-29T10:03:00+08:00..2023-01-29T10:05:00+08:00"


@pytest.mark.parametrize("text", ["2023-01-29T10:03:00+08:00", "2023-01-29T10:03:00..2023-01-29T10:05:00", "a..b"])
def test_bad_range_text(text: str) -> None:
    with pytest.raises(TimeExpressionError):
        parse_range_text(text)


# --- properties --------------------------------------------------------------------------
# Deterministic (derandomize: the same examples on every run, so CI never flakes) and bounded
# (the whole file runs in a few seconds). Random instants alone almost never land on a DST
# transition, so half the drawn instants are taken within two hours of one of a zone's
# transitions (fall-back folds and spring-forward gaps included), and the known failures are
# pinned with @example.

PROPERTIES = settings(derandomize=True, database=None, max_examples=150, deadline=None)


def _transitions(zone: ZoneInfo) -> list[datetime]:
    """The UTC instants in 1990-2060 at which `zone`'s offset changes (found day by day, then
    bisected to the minute), so the strategies can aim at them."""
    found = []
    day = datetime(1990, 1, 1, tzinfo=UTC)
    while day < datetime(2060, 1, 1, tzinfo=UTC):
        before, after = day, day + timedelta(days=1)
        if before.astimezone(zone).utcoffset() != after.astimezone(zone).utcoffset():
            while after - before > timedelta(minutes=1):
                middle = before + (after - before) / 2
                if middle.astimezone(zone).utcoffset() == before.astimezone(zone).utcoffset():
                    before = middle
                else:
                    after = middle
            found.append(after.replace(second=0, microsecond=0))
        day += timedelta(days=1)
    return found


TRANSITIONS = sorted(moment for zone in (NEW_YORK, BERLIN, LORD_HOWE) for moment in _transitions(zone))
near_transitions = st.builds(
    lambda moment, seconds: moment + timedelta(seconds=seconds),
    st.sampled_from(TRANSITIONS),
    st.integers(min_value=-7200, max_value=7200),
)
instants = st.one_of(
    st.datetimes(min_value=datetime(1990, 1, 1), max_value=datetime(2060, 1, 1), timezones=st.just(UTC)),
    near_transitions,
)
zones = st.sampled_from(ZONES)
maybe = st.one_of(st.none(), instants)


@st.composite
def ranges(draw: st.DrawFn) -> TimeRange:
    start, end = draw(maybe), draw(maybe)
    if start is not None and end is not None and start > end:
        start, end = end, start
    zone = draw(zones)
    return TimeRange(None if start is None else start.astimezone(zone), None if end is None else end.astimezone(zone))


def test_the_strategies_aim_at_real_transitions() -> None:
    # Berlin falls back at 01:00 UTC on the last Sunday of October: 2052-10-27 (the CI failure)
    assert datetime(2052, 10, 27, 1, 0, tzinfo=UTC) in TRANSITIONS
    # Lord Howe's 30-minute shift, found to the minute: 02:00 +10:30 on 2023-10-01 is 15:30 UTC
    assert datetime(2023, 9, 30, 15, 30, tzinfo=UTC) in TRANSITIONS
    assert len(TRANSITIONS) == 3 * 2 * 70  # three zones, two changes a year, 1990-2059


@PROPERTIES
@given(ranges())
@example(TimeRange(None, datetime(2052, 10, 27, 1, 0, tzinfo=UTC).astimezone(BERLIN)))  # CI failure: fold=1 end
@example(TimeRange(datetime(2023, 11, 5, 5, 30, tzinfo=UTC).astimezone(NEW_YORK), None))  # second 01:30
@example(
    TimeRange(
        datetime(2023, 10, 29, 0, 40, tzinfo=UTC).astimezone(BERLIN),  # 02:40+02:00
        datetime(2023, 10, 29, 1, 30, tzinfo=UTC).astimezone(BERLIN),  # 02:30+01:00, later
    )
)
def test_canonical_text_round_trips(time_range: TimeRange) -> None:
    back = parse_range_text(time_range.text())
    assert back == time_range and back.text() == time_range.text()
    for mine, theirs in ((back.start, time_range.start), (back.end, time_range.end)):
        assert (mine is None) == (theirs is None)
        if mine is not None and theirs is not None:
            assert mine.utcoffset() == theirs.utcoffset()
            assert mine.astimezone(UTC) == theirs.astimezone(UTC)


@PROPERTIES
@given(ranges(), ranges(), instants)
def test_contains_overlaps_and_clip_agree(left: TimeRange, right: TimeRange, moment: datetime) -> None:
    clipped = left.clip(right)
    assert left.overlaps(right) == right.overlaps(left) == (clipped is not None)
    if clipped is not None:
        assert left.contains(clipped) and right.contains(clipped)
        assert clipped == right.clip(left)
    assert (left.contains(moment) and right.contains(moment)) == (clipped is not None and clipped.contains(moment))
    if left.contains(right):
        assert left.overlaps(right) and left.clip(right) == right


@PROPERTIES
@given(ranges(), zones)
def test_range_arithmetic_does_not_depend_on_the_zone_it_is_written_in(time_range: TimeRange, zone) -> None:
    moved = TimeRange(*(None if end is None else end.astimezone(zone) for end in (time_range.start, time_range.end)))
    assert moved == time_range and hash(moved) == hash(time_range)
    for end in (time_range.start, time_range.end):
        if end is not None:
            assert moved.contains(end) and time_range.contains(end.astimezone(zone))
    assert parse_range_text(moved.text()) == parse_range_text(time_range.text(zone)) == time_range


@PROPERTIES
@given(st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2040, 1, 1)), zones)
def test_every_wall_time_localizes_to_a_real_wall_time(naive: datetime, zone) -> None:
    moment = localize(naive, zone)
    assert moment.utcoffset() is not None
    # the result is a real reading of the zone's clock: it round-trips through UTC unchanged
    assert moment.astimezone(UTC).astimezone(zone).replace(tzinfo=None) == moment.replace(tzinfo=None)
    # and it is the wall time asked for, or at most the DST gap later
    assert timedelta(0) <= moment.replace(tzinfo=None) - naive <= timedelta(hours=1)


def utc(moment: datetime) -> datetime:
    """The UTC reading: `==` and `-` on two datetimes of one ZoneInfo use wall time (fold ignored),
    and `==` calls an ambiguous time unequal to any other zone's reading of it (PEP 495)."""
    return moment.astimezone(UTC)


@PROPERTIES
@given(instants, zones, st.integers(min_value=1, max_value=60 * 24 * 40))
@example(datetime(1990, 3, 25, 1, 0, tzinfo=UTC), BERLIN, 1)  # 1m before 03:00 was 02:59 in the gap
@example(datetime(1990, 3, 3, 15, 0, tzinfo=UTC), LORD_HOWE, 1)  # ends on the second 01:30
def test_window_length_is_exact_across_dst(clock: datetime, zone, minutes: int) -> None:
    built = TimeRange.build(window=f"{minutes}m", clock=clock, tz=zone)
    assert built is not None and built.start is not None and built.end is not None
    assert utc(built.end) - utc(built.start) == timedelta(minutes=minutes)
    assert utc(built.end) == clock and built.contains(clock)
    assert utc(parse_time(f"-{minutes}m", clock=clock, tz=zone)) == utc(built.start)


@PROPERTIES
@given(instants, zones)
@example(datetime(1990, 3, 3, 14, 59, 59, tzinfo=UTC), LORD_HOWE)  # first 01:59:59 of a fall-back night
def test_iso_text_of_any_instant_reads_back(moment: datetime, zone) -> None:
    local = moment.astimezone(zone)
    assert utc(parse_time(local.isoformat(), clock=CLOCK, tz=UTC)) == moment
    naive_text = local.replace(tzinfo=None).isoformat(sep=" ")
    read_back = utc(parse_time(naive_text, clock=CLOCK, tz=zone))
    # the same instant, except the second occurrence of an ambiguous wall time reads as the first
    assert read_back == moment or (local.fold == 1 and timedelta(0) < moment - read_back <= timedelta(hours=1))
