"""The session header's figures and heading (app/ui/figures.py)."""
from app.core.records import AgentSession
from app.ui.figures import TOKEN_SOURCES
from app.ui.figures import cost_text
from app.ui.figures import header_figures
from app.ui.figures import heading
from app.ui.figures import token_figure
from app.ui.titles import SessionTitle


def session(**fields):
    base = {"session_id": "sid-1", "user_id": "alice", "session_type": "agent", "context": {},
            "status": "running", "provider": "claude", "exit_code": None, "message_count": 2,
            "request_count": 0, "total_tokens": 0, "total_input_tokens": 0,
            "total_output_tokens": 0, "next_event_index": 5,
            "created_at": "2026-12-02T16:49:41.000000Z",
            "updated_at": "2026-12-02T16:50:00.000000Z", "conversation_turn_count": 1}
    return AgentSession(**{**base, **fields})


def test_a_reported_cost_is_shown_to_a_hundredth_of_a_cent():
    assert cost_text(0.01234) == "$0.0123"


def test_no_reported_cost_is_not_shown_as_free():
    assert cost_text(0) == "n/a"
    assert cost_text(0.0) == "n/a"


def test_the_token_figure_is_the_usage_reports_count_when_any_came():
    reported = session(total_tokens=900, transcript_input_tokens=3, transcript_output_tokens=7,
                       transcript_cache_read_tokens=5000)
    assert token_figure(reported) == (900, "reported")


def test_without_usage_reports_the_token_figure_is_what_the_turns_reported():
    demo = session(transcript_input_tokens=30, transcript_output_tokens=12,
                   transcript_cache_read_tokens=5000, transcript_cache_creation_tokens=7)
    assert token_figure(demo) == (5049, "transcript")  # cache reads and writes are input
    assert token_figure(session()) == (0, "transcript")


def test_the_header_figures_carry_one_token_figure_its_source_and_the_cost():
    figures = header_figures(session(transcript_input_tokens=30, transcript_output_tokens=12,
                                     transcript_cost_usd=0.5))
    assert figures == {"message_count": 2, "conversation_turn_count": 1, "tokens": 42,
                       "tokens_title": TOKEN_SOURCES["transcript"], "cost": "$0.5000",
                       "updated_at": "2026-12-02T16:50:00.000000Z"}
    assert header_figures(session())["cost"] == "n/a"


def test_the_heading_is_the_title_then_id_model_and_cwd():
    titled = heading(session(), SessionTitle("Fix the tests", "opus", "/repo"))
    assert titled == {"title": "Fix the tests", "untitled": False,
                      "meta": [["session-id", "sid-1"], ["model", "opus"], ["cwd", "/repo"]]}


def test_a_session_that_said_nothing_is_headed_by_its_id_alone():
    assert heading(session(), SessionTitle("", None, None)) == {
        "title": "sid-1", "untitled": True, "meta": []}
    assert heading(session(), SessionTitle("", "opus", None))["meta"] == [["model", "opus"]]
