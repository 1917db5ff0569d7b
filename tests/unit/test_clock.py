"""Stored times: fixed-width ISO-8601 UTC text that sorts as time does."""
from datetime import datetime
from datetime import timedelta
from datetime import timezone

from app.core.clock import from_iso
from app.core.clock import iso_after
from app.core.clock import to_iso


def test_a_time_is_stored_in_utc_with_microseconds_and_a_z():
    moment = datetime(2026, 12, 5, 9, 30, 1, 42, tzinfo=timezone(timedelta(hours=2)))
    assert to_iso(moment) == "2026-12-05T07:30:01.000042Z"


def test_every_stamp_has_the_same_width_so_text_order_is_time_order():
    moments = [datetime(year, 1, 1, tzinfo=timezone.utc) for year in (1, 999, 2026)]
    moments.append(datetime(2026, 1, 1, 0, 0, 0, 1, tzinfo=timezone.utc))
    stamps = [to_iso(moment) for moment in moments]
    assert {len(stamp) for stamp in stamps} == {len("2026-01-01T00:00:00.000000Z")}
    assert sorted(stamps) == stamps


def test_a_stamp_reads_back_to_the_same_moment():
    moment = datetime(2026, 3, 4, 5, 6, 7, 890123, tzinfo=timezone.utc)
    assert from_iso(to_iso(moment)) == moment
    assert iso_after(moment, 90) == "2026-03-04T05:07:37.890123Z"
