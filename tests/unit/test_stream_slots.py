"""The process's stream places (MAX_STREAMS_PER_PROCESS): counted per app, freed once."""
import pytest

from app.core.errors import TooManyStreams
from app.streaming.live import StreamSlots


def test_a_full_count_refuses_until_a_place_is_freed():
    slots = StreamSlots()
    free = slots.take(limit=1, retry_after=5)
    with pytest.raises(TooManyStreams) as refused:
        slots.take(limit=1, retry_after=5)
    assert refused.value.details == {"limit": 1, "open_streams": 1, "scope": "process"}
    free()
    slots.take(limit=1, retry_after=5)
    assert slots.open == 1


def test_freeing_twice_gives_back_one_place():
    slots = StreamSlots()
    first = slots.take(limit=0, retry_after=5)
    slots.take(limit=0, retry_after=5)
    first()
    first()
    assert slots.open == 1

