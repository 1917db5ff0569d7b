"""The command bell wakes a session's waiting runners, misses no ring between a read and
a wait, starts its listener with the first waiter and stops it a while after the last
(not at every read of a runner's stream, which set off a busy loop); and the
session GET's `controls` say what can be done and why not."""
import threading
from datetime import datetime
from datetime import timedelta
from datetime import timezone

from app.core.clock import to_iso
from app.core.records import AgentSession
from app.services import control
from app.services.commands import CommandBell
from app.services.commands import polling_listener

NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)


def test_a_ring_wakes_the_waiter_of_its_session_only():
    bell = CommandBell()
    woke = {}

    def wait(sid):
        woke[sid] = bell.wait(sid, bell.mark(sid), 5)

    waiters = [threading.Thread(target=wait, args=(sid,)) for sid in ("s1", "s2")]
    for waiter in waiters:
        waiter.start()
    while bell.waiting() < 2:
        threading.Event().wait(0.001)
    bell.ring("s1")
    waiters[0].join(5)
    assert woke == {"s1": True}
    bell.ring("s2")
    waiters[1].join(5)
    assert woke == {"s1": True, "s2": True} and bell.waiting() == 0


def test_a_ring_between_the_mark_and_the_wait_is_not_missed():
    bell = CommandBell()
    mark = bell.mark("s")  # the runner read nothing new after this...
    bell.ring("s")  # ...a command was committed before it began to wait
    assert bell.wait("s", mark, 5) is True  # at once, not after the timeout
    assert bell.wait("s", bell.mark("s"), 0.01) is False


def test_forgetting_old_counts_keeps_the_waiters_and_wakes_them():
    bell = CommandBell()
    for n in range(5000):
        bell.ring(f"other-{n}")
    mark = bell.mark("s")
    bell.ring("s")
    assert bell.wait("s", mark, 5) is True


def test_a_wait_without_a_ring_times_out():
    bell = CommandBell()
    assert bell.wait("s", bell.mark("s"), 0.01) is False
    assert bell.waiting() == 0


class FakeClock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def test_the_listener_runs_while_someone_waits_and_rings_the_bell():
    started = []

    def listen(on_notify, stop, on_listening=None):
        started.append(stop)
        on_notify("s")  # another instance queued a command for s

    clock = FakeClock()
    bell = CommandBell(listen=listen, start=lambda target: threading.Thread(target=target).start(),
                       linger_seconds=30, monotonic=clock)
    assert bell.wait("s", bell.mark("s"), 5) is True
    [stop] = started
    clock.now += 29
    assert stop() is False  # nobody waits, but a runner's stream waits again soon
    clock.now += 1
    assert stop() is True  # nobody waited for 30 s: the listener ends
    assert bell.wait("s", bell.mark("s"), 5) is True  # rung by a new listener:
    assert len(started) == 2  # the next waiter started one


def test_a_runner_that_reads_and_waits_again_keeps_one_listener():
    started, stops = [], threading.Event()

    def listen(on_notify, stop, on_listening=None):
        started.append(stop)
        on_listening()  # its first read: every waiter reads once more
        while not stop():
            threading.Event().wait(0.001)
        stops.set()

    bell = CommandBell(listen=listen, start=lambda target: threading.Thread(target=target, daemon=True).start(),
                       linger_seconds=0.5)
    woken = 0
    for _ in range(20):  # a runner's stream: read, wait, read, wait ...
        woken += bell.wait("s", bell.mark("s"), 0.01)
    assert len(started) == 1 and woken <= 1
    assert stops.wait(5)  # and it ends once nobody waits


def test_a_listener_that_starts_listening_wakes_the_marks_taken_before():
    listening = threading.Event()

    def listen(on_notify, stop, on_listening=None):
        listening.wait(5)  # its LISTEN takes a while; meanwhile a commit notified no one
        on_listening()

    bell = CommandBell(listen=listen, start=lambda target: threading.Thread(target=target).start())
    woke = {}
    mark = bell.mark("s")  # the runner read nothing...
    waiter = threading.Thread(target=lambda: woke.setdefault("s", bell.wait("s", mark, 30)))
    waiter.start()
    late = bell.mark("t")  # ...and another one, about to wait
    listening.set()
    waiter.join(5)
    assert woke == {"s": True}  # at once: it reads again, not after its 30 s
    assert bell.wait("t", late, 5) is True


def session(status="running"):
    stamp = to_iso(NOW)
    return AgentSession("s", "alice", "agent", {}, status, "claude", None, 0, 0, 0, 0, 0, 0,
                        stamp, stamp)


def test_controls_follow_the_attached_runner_and_say_why_not():
    settings = control.Settings(attached_seconds=30)
    fresh = to_iso(NOW - timedelta(seconds=5))
    view = control.controls_of(session(), (["send", "stop"], fresh, None), NOW, settings)
    assert view["runner_attached"] is True and view["runner_seen_at"] == fresh
    assert (view["send"], view["stop"], view["interrupt"], view["permissions"]) == (True, True, False, False)
    assert set(view["reasons"]) == {"interrupt", "permissions"}
    stale = to_iso(NOW - timedelta(seconds=31))
    gone = control.controls_of(session(), (["send"], stale, None), NOW, settings)
    assert gone["runner_attached"] is False and not any(gone[c] for c in control.CONTROLS)
    assert "no runner" in gone["reasons"]["send"]
    done = control.controls_of(session("completed"), (["send"], fresh, None), NOW, settings)
    assert done["send"] is False and "completed" in done["reasons"]["send"]


def test_the_polling_listener_rings_the_sessions_that_got_commands_since_its_last_read():
    reads = iter([(7, []), (9, ["s1", "s2"]), RuntimeError("database is locked"), (9, []),
                  (10, ["s2"])])
    asked, rung, sleeps = [], [], []

    def read_moved(after):
        asked.append(after)
        answer = next(reads)
        if isinstance(answer, Exception):
            raise answer
        return answer

    listening = []
    listen = polling_listener(read_moved, 0.05, sleep=sleeps.append)
    listen(rung.append, lambda: len(asked) == 5, on_listening=lambda: listening.append(len(asked)))
    # the first read only learns where the commands stand (then the waiters read once
    # more, as after a LISTEN); a failed read is tried again
    assert asked == [None, 7, 9, 9, 9] and rung == ["s1", "s2", "s2"] and listening == [1]
    assert sleeps == [0.05] * 5
