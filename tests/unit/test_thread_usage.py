"""A turn's own usage out of Codex exec's running total for its thread, and a turn's
own cost out of Claude's running cost of its session."""
import pytest

from app.core.thread_usage import COST_SESSIONS
from app.core.thread_usage import RunningCost
from app.core.thread_usage import ThreadUsage


def total(input_tokens, cached, output):
    return {"input_tokens": input_tokens, "cached_input_tokens": cached, "output_tokens": output}


def test_each_turn_takes_its_step_from_the_previous_total():
    thread = ThreadUsage()
    thread.begin_thread("t-1")
    steps = [thread.turn_usage(total(200, 0, 3)), thread.turn_usage(total(460, 150, 6))]
    assert steps == [total(200, 0, 3), total(260, 150, 3)]
    summed = {key: sum(step[key] for step in steps) for key in steps[0]}
    assert summed == total(460, 150, 6)  # the session's sum is the CLI's own last total


def test_a_total_below_the_last_adds_nothing_and_leaves_the_last_standing():
    thread = ThreadUsage()
    thread.turn_usage(total(200, 0, 3))
    thread.turn_usage(total(460, 150, 6))
    assert thread.turn_usage(total(200, 0, 3)) == {}  # a re-sent copy of the first turn's end
    assert thread.turn_usage(total(500, 150, 8)) == total(40, 0, 2)


def test_another_thread_starts_from_nothing_and_the_same_thread_goes_on():
    thread = ThreadUsage()
    thread.begin_thread("t-1")
    thread.turn_usage(total(460, 150, 6))
    thread.begin_thread("t-1")  # a resumed run announces its thread again
    assert thread.turn_usage(total(500, 150, 7)) == total(40, 0, 1)
    thread.begin_thread("t-2")
    assert thread.turn_usage(total(90, 10, 2)) == total(90, 10, 2)


def test_the_state_survives_being_stored():
    thread = ThreadUsage()
    assert thread.stored() is None  # nothing to keep for a provider without running totals
    thread.begin_thread("t-1")
    thread.turn_usage(total(200, 0, 3))
    again = ThreadUsage(thread.stored())
    assert again.turn_usage(total(260, 60, 5)) == total(60, 60, 2)


def test_counts_that_are_no_whole_token_counts_are_left_out():
    thread = ThreadUsage()
    assert thread.turn_usage({"input_tokens": 5, "output_tokens": True, "note": "x"}) == {
        "input_tokens": 5}


def test_the_first_thread_named_keeps_the_total_a_turn_stored_without_names_reached():
    thread = ThreadUsage({"total": total(200, 0, 3)})  # stored before totals named a thread
    thread.name_thread("t-1")
    assert thread.turn_usage(total(260, 60, 5)) == total(60, 60, 2)
    thread.name_thread("t-2")  # a copy of another thread's first line starts nothing over
    assert thread.turn_usage(total(300, 60, 6)) == total(40, 0, 1)


def test_each_claude_turn_costs_its_step_from_the_sessions_running_cost():
    cost = RunningCost()
    steps = [cost.turn_cost("s-1", 0.00086), cost.turn_cost("s-1", 0.00199)]
    assert steps == pytest.approx([0.00086, 0.00113])
    assert sum(steps) == pytest.approx(0.00199)  # Claude's own last total


def test_a_session_first_seen_with_a_total_takes_it_whole():
    cost = RunningCost()  # a resumed run: its first result carries the earlier runs' cost
    assert cost.turn_cost("s-1", 0.5) == 0.5
    assert cost.turn_cost("s-1", 0.75) == pytest.approx(0.25)


def test_a_resent_or_older_result_costs_nothing_and_the_last_total_stands():
    cost = RunningCost()
    cost.turn_cost("s-1", 0.2)
    cost.turn_cost("s-1", 0.3)
    assert cost.turn_cost("s-1", 0.3) == 0.0  # the same result again
    assert cost.turn_cost("s-1", 0.2) == 0.0  # a copy of the first
    assert cost.turn_cost("s-1", 0.35) == pytest.approx(0.05)


def test_each_agent_session_has_its_own_running_cost():
    cost = RunningCost()
    cost.turn_cost("s-1", 0.3)
    assert cost.turn_cost("s-2", 0.1) == 0.1  # another session starts from nothing
    assert cost.turn_cost("s-1", 0.4) == pytest.approx(0.1)  # and the first goes on
    assert cost.turn_cost(None, 0.05) == 0.05  # a result naming no session: one of its own
    assert cost.turn_cost(None, 0.07) == pytest.approx(0.02)


def test_a_result_without_a_cost_costs_nothing_and_changes_nothing():
    cost = RunningCost()
    for value in (None, True, -1.0, float("nan"), "0.1"):
        assert cost.turn_cost("s-1", value) is None
    assert cost.stored() is None


def test_the_running_costs_survive_being_stored_and_stay_few():
    cost = RunningCost()
    cost.turn_cost("s-1", 0.2)
    again = RunningCost(cost.stored())
    assert again.turn_cost("s-1", 0.5) == pytest.approx(0.3)
    for n in range(COST_SESSIONS + 3):
        again.turn_cost(f"other-{n}", 0.01)
    assert len(again.stored()) == COST_SESSIONS and "s-1" not in again.stored()
