"""The session page's evidence panel: its totals line and the links to each command."""
from app.core.records import Evidence
from app.ui.evidence_panel import evidence_panel
from app.ui.evidence_panel import summary_line


def item(n, turn_id="turn:a", summary=None, exit_code=None, is_error=False, command=None):
    return Evidence(id=n, session_id="s1", evidence_id=f"toolu_{n}", turn_id=turn_id,
                    command=command or f"cmd {n}", exit_code=exit_code, is_error=is_error,
                    event_range=[n, n], output_head="", output_tail="", output_bytes=0,
                    test_summary=summary, created_at="t")


def pytest_run(passed, failed, errors=0):
    return {"framework": "pytest", "passed": passed, "failed": failed, "skipped": 0,
            "errors": errors}


def test_the_totals_add_up_every_test_run_and_leave_out_zero_counts():
    items = [item(1, summary=pytest_run(40, 1)), item(2), item(3, summary=pytest_run(1, 0, 1))]
    assert summary_line(items) == "3 commands, tests: 41 passed, 1 failed, 1 error"
    assert summary_line(items[1:2]) == "1 command"
    assert summary_line(items[1:2], more=True) == "1+ commands"


def test_each_command_links_to_its_tool_call_in_the_row_its_turn_wrote():
    panel = evidence_panel([item(1), item(2, turn_id="turn:no-row", exit_code=2,
                                         is_error=True)], {"turn:a": 7})
    assert [row.href for row in panel.rows] == ["#tool-7-toolu_1", None]
    assert panel.rows[1].exit_code == 2 and panel.rows[1].is_error


def test_a_session_that_ran_no_command_has_no_panel():
    assert evidence_panel([], {}) is None



def test_a_test_command_run_again_counts_by_its_latest_run_only():
    runs = [item(1, summary=pytest_run(46, 1), command="python -m pytest -q"),
            item(2, command="sed -i s/a/b/ x.py"),
            item(3, summary=pytest_run(47, 0), command="python  -m pytest  -q")]
    assert summary_line(runs) == "3 commands, tests: 47 passed (latest of 2 runs)"
    panel = evidence_panel(runs, {})
    assert [row.superseded for row in panel.rows] == [True, False, False]


def test_different_test_commands_each_count_by_their_latest_run():
    runs = [item(1, summary=pytest_run(10, 2), command="pytest a"),
            item(2, summary=pytest_run(5, 0), command="pytest b"),
            item(3, summary=pytest_run(12, 0), command="pytest a")]
    assert summary_line(runs) == "3 commands, tests: 17 passed (latest of 3 runs)"
