"""A turn's own usage out of Codex exec's running total for its thread."""
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
