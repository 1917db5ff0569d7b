"""The replay window against the plain model it stands for: one string of keys,
each key appended and the string cut to its last `size` keys, searched on key
boundaries."""
import random

from app.transcript.recent_keys import RecentKeys

WIDTH = 4
SIZE = 8


def model_holds(window, key):
    at = window.find(key)
    while at != -1:
        if at % WIDTH == 0:
            return True
        at = window.find(key, at + 1)
    return False


def test_the_window_answers_and_stores_as_the_string_it_stands_for():
    rng = random.Random(3)
    names = [f"k{n:03d}" for n in range(20)]  # few names: keys come back after leaving
    stored = ""
    for _ in range(200):  # one request each, restored from what the last one stored
        window, model = RecentKeys(stored, WIDTH, SIZE), stored
        for _ in range(rng.randint(0, 2 * SIZE)):
            key = rng.choice(names)
            assert (key in window) == model_holds(model, key)
            if key not in window:
                window.add(key)
                model = (model + key)[-SIZE * WIDTH:]
        stored = window.stored()
        assert stored == model


def test_a_key_straddling_two_stored_keys_is_no_match():
    window = RecentKeys("abcdefgh", WIDTH, SIZE)
    assert "abcd" in window and "efgh" in window
    assert "cdef" not in window


def test_stored_keys_pushed_out_by_new_ones_leave_the_window():
    window = RecentKeys("old1old2", WIDTH, 2)
    window.add("new1")
    assert "old2" in window and "old1" not in window
    window.add("new2")
    assert "old2" not in window
    assert window.stored() == "new1new2"
