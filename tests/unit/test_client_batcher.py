"""app.client.batcher: a batch is due after 100 ms (10 ms after a quiet spell), at 100
lines or at 256 KiB."""
from app.client.batcher import Batcher


class FakeClock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def chunk(seq, data="x"):
    return {"seq": seq, "stream": "stdout", "data": data}


def test_a_line_after_a_quiet_spell_is_due_after_10_ms():
    clock = FakeClock()
    batcher = Batcher(clock)
    assert batcher.wait_time() is None and not batcher.due()
    batcher.add(chunk(0))  # the first line of all
    clock.now += 0.004
    batcher.add(chunk(1))  # printed with it: joins it
    assert not batcher.due() and abs(batcher.wait_time() - 0.006) < 1e-9
    clock.now += 0.006
    assert batcher.due()
    assert batcher.take() == [chunk(0), chunk(1)]
    clock.now += 0.25  # quiet again
    batcher.add(chunk(2))
    clock.now += 0.01
    assert batcher.take() == [chunk(2)]


def test_lines_that_keep_coming_wait_100_ms():
    clock = FakeClock()
    batcher = Batcher(clock)
    batcher.add(chunk(0))
    clock.now += 0.01
    batcher.take()
    clock.now += 0.05  # the agent prints on, 60 ms after its last line
    batcher.add(chunk(1))
    clock.now += 0.06
    assert not batcher.due() and abs(batcher.wait_time() - 0.04) < 1e-9
    clock.now += 0.04
    assert batcher.due()
    assert batcher.take() == [chunk(1)]
    assert len(batcher) == 0


def test_a_quiet_spell_is_counted_from_the_last_line_not_the_last_post():
    clock = FakeClock()
    batcher = Batcher(clock)
    batcher.add(chunk(0))
    clock.now += 0.09
    batcher.add(chunk(1))
    clock.now += 0.2  # the post took long
    batcher.take()
    batcher.add(chunk(2))  # 200 ms after line 1: quiet
    assert abs(batcher.wait_time() - 0.01) < 1e-9


def test_100_lines_are_due_at_once_and_go_out_as_one_batch():
    clock = FakeClock()
    batcher = Batcher(clock)
    for seq in range(99):
        batcher.add(chunk(seq))
    assert not batcher.due()
    batcher.add(chunk(99))
    batcher.add(chunk(100))
    assert batcher.due()
    assert [c["seq"] for c in batcher.take()] == list(range(100))
    assert not batcher.due()  # the 101st line has its own 100 ms


def test_256_kib_is_due_at_once_and_a_batch_stays_under_it():
    clock = FakeClock()
    batcher = Batcher(clock)
    line = "\u00e9" * 50_000  # 100,000 bytes of UTF-8
    batcher.add(chunk(0, line))
    batcher.add(chunk(1, line))
    assert not batcher.due()
    batcher.add(chunk(2, line))
    assert batcher.due()
    assert [c["seq"] for c in batcher.take()] == [0, 1]
    assert [c["seq"] for c in batcher.take()] == [2]


def test_a_line_bigger_than_a_batch_still_goes_out_alone():
    batcher = Batcher(FakeClock())
    batcher.add(chunk(0, "y" * (300 * 1024)))
    batcher.add(chunk(1))
    assert batcher.due()
    assert [c["seq"] for c in batcher.take()] == [0]


def test_lines_left_after_a_batch_keep_their_own_arrival_times():
    clock = FakeClock()
    batcher = Batcher(clock, max_lines=2)
    batcher.add(chunk(0))
    clock.now += 0.09
    batcher.add(chunk(1))
    batcher.add(chunk(2))
    batcher.take()
    assert not batcher.due()
    clock.now += 0.1
    assert batcher.due()
