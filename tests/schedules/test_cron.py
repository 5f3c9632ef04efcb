"""Cron expressions in a time zone: what is refused (naming the field), the next fire times
across a change of daylight saving time, the latest fire time, and what a fire message does
(firing.fire_decision) at a given now."""
from datetime import UTC, datetime, timedelta

import pytest

from schedules.cron import CronError, describe, fires_after, latest_fire, parse_cron, time_zone
from schedules.firing import Action, fire_decision

BERLIN = time_zone("Europe/Berlin")


def local(times, zone=BERLIN):
    return [time.astimezone(zone).strftime("%Y-%m-%d %H:%M %Z") for time in times]


def test_it_gives_the_next_five_times_at_the_same_wall_clock_time_across_a_change_to_summer_time():
    times = fires_after(parse_cron("0 9 * * *"), BERLIN, datetime(2026, 3, 27, 12, tzinfo=UTC), 5)
    assert local(times) == ["2026-03-28 09:00 CET", "2026-03-29 09:00 CEST", "2026-03-30 09:00 CEST",
                            "2026-03-31 09:00 CEST", "2026-04-01 09:00 CEST"]
    assert [time.hour for time in times] == [8, 7, 7, 7, 7]  # in UTC: an hour earlier from the change on


def test_a_time_the_clock_skips_fires_an_hour_later_and_a_time_it_passes_twice_fires_once():
    skipped = fires_after(parse_cron("30 2 * * *"), BERLIN, datetime(2026, 3, 27, 12, tzinfo=UTC), 3)
    assert local(skipped) == ["2026-03-28 02:30 CET", "2026-03-29 03:30 CEST", "2026-03-30 02:30 CEST"]
    repeated = fires_after(parse_cron("30 2 * * *"), BERLIN, datetime(2026, 10, 24, 12, tzinfo=UTC), 2)
    assert local(repeated) == ["2026-10-25 02:30 CEST", "2026-10-26 02:30 CET"]
    # Every quarter hour through the change back: the repeated hour's second pass fires nothing.
    quarters = fires_after(parse_cron("*/15 * * * *"), BERLIN, datetime(2026, 10, 25, 0, 20, tzinfo=UTC), 4)
    assert local(quarters) == ["2026-10-25 02:30 CEST", "2026-10-25 02:45 CEST", "2026-10-25 03:00 CET",
                               "2026-10-25 03:15 CET"]


def test_it_finds_the_latest_fire_time_at_or_before_now_however_rare():
    now = datetime(2026, 5, 1, 10, 0, tzinfo=UTC)
    assert latest_fire(parse_cron("0 * * * *"), BERLIN, now) == now
    assert latest_fire(parse_cron("0 * * * *"), BERLIN, now - timedelta(seconds=1)) == now - timedelta(hours=1)
    # 29 February that is a Monday: 2016.
    assert local([latest_fire(parse_cron("0 0 29 2 mon"), BERLIN, now)]) == ["2016-02-29 00:00 CET"]


def test_it_puts_the_expression_in_words():
    assert describe("0 9 * * mon-fri") == "At 09:00, Monday through Friday"
    assert describe("*/15 * * * *") == "Every 15 minutes"


@pytest.mark.parametrize(("text", "said"), [
    ("", "five fields"),
    ("0 9 * *", "has 4"),
    ("60 * * * *", "its minute field '60' is not valid"),
    ("a * * * *", "its minute field 'a' is not valid: it takes numbers"),
    ("0 24 * * *", "its hour field '24'"),
    ("0 0 0 * *", "its day of month field '0'"),
    ("0 0 * 13 *", "its month field '13'"),
    ("0 0 * * 8", "its day of week field '8'"),
    ("0 0 31 2 *", "matches no date"),
])
def test_it_refuses_a_bad_expression_naming_the_cron_field(text, said):
    with pytest.raises(CronError, match=said) as refused:
        parse_cron(text)
    assert refused.value.where == "cron"


def test_it_refuses_a_zone_that_is_not_an_iana_name():
    for name in ("Mars/Olympus", "", "CEST", "../etc/passwd"):
        with pytest.raises(CronError, match="is not an IANA time zone name") as refused:
            time_zone(name)
        assert refused.value.where == "timezone"
    assert str(time_zone("America/New_York")) == "America/New_York"


def decide(now, *, catch_up, active_since=datetime(2026, 1, 1, tzinfo=UTC)):
    return fire_decision(cron="0 * * * *", zone="UTC", now=now, active_since=active_since, catch_up=catch_up,
                         missed_after=timedelta(seconds=60))


def test_a_fire_on_time_starts_a_run_and_one_after_a_gap_is_caught_up_once_or_skipped():
    on_time = decide(datetime(2026, 5, 1, 10, 0, 5, tzinfo=UTC), catch_up=False)
    assert (on_time.action, on_time.fire_time, on_time.late) == (Action.START, datetime(2026, 5, 1, 10, tzinfo=UTC), False)
    # The beat was down from 06:30 to 10:40: the one fire it sends at recovery is for 10:00.
    recovered = datetime(2026, 5, 1, 10, 40, tzinfo=UTC)
    caught_up = decide(recovered, catch_up=True)
    assert (caught_up.action, caught_up.fire_time, caught_up.late) == (Action.START, datetime(2026, 5, 1, 10, tzinfo=UTC), True)
    skipped = decide(recovered, catch_up=False)
    assert (skipped.action, skipped.fire_time) == (Action.SKIP, datetime(2026, 5, 1, 10, tzinfo=UTC))
    assert decide(datetime(2026, 5, 1, 11, 0, 1, tzinfo=UTC), catch_up=False).action is Action.START  # the next, on time


def test_a_fire_time_before_the_schedule_was_made_or_resumed_is_not_its_own():
    resumed = datetime(2026, 5, 1, 10, 30, tzinfo=UTC)
    assert decide(datetime(2026, 5, 1, 10, 40, tzinfo=UTC), catch_up=True, active_since=resumed).action is Action.NOTHING
    assert decide(datetime(2026, 5, 1, 11, 0, 2, tzinfo=UTC), catch_up=True, active_since=resumed).action is Action.START
