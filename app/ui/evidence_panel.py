"""The session page's evidence panel: the commands the agent ran, each linked to the
turn that ran it, under one line of totals ("12 commands, tests: 41 passed, 1 failed").
A test command run again (fail, fix, run again) counts by its latest run only: the
totals are the sum of each test command's latest result, never of every run; the
earlier runs stay in the list, marked. Pure: no Flask."""
from dataclasses import dataclass

from app.ui.transcript import anchor

TEST_COUNTS = ("passed", "failed", "skipped", "errors")


@dataclass(frozen=True)
class EvidenceRow:
    command: str
    exit_code: int | None
    is_error: bool
    tests: str  # "pytest: 41 passed, 1 failed" or ""
    href: str | None  # the tool call in its turn's bubble (None: the turn wrote no row)
    superseded: bool = False  # a test run of this command that a later run replaced


@dataclass(frozen=True)
class EvidencePanel:
    summary: str
    rows: list
    more: bool  # more commands than the panel shows


def evidence_panel(items, rows_of_turn, more=False):
    """The panel for `items` (Evidence, in run order), `rows_of_turn` ({turn id: message
    id}) naming the bubble of each turn that wrote a row; None when no command ran."""
    if not items:
        return None
    latest = _latest_test_runs(items)
    rows = []
    for item in items:
        message_id = rows_of_turn.get(item.turn_id)
        rows.append(EvidenceRow(
            command=item.command, exit_code=item.exit_code, is_error=item.is_error,
            tests=_tests_line(item.test_summary),
            href=f"#{anchor(message_id, item.evidence_id)}" if message_id is not None else None,
            superseded=bool(item.test_summary) and latest[_command_key(item)] is not item))
    return EvidencePanel(summary=summary_line(items, more), rows=rows, more=more)


def summary_line(items, more=False):
    """"12 commands, tests: 41 passed, 1 failed": the latest result of each test command
    summed, only the counts that are not zero; "(latest of 3 runs)" when a test command
    ran more than once."""
    count = f"{len(items)}{'+' if more else ''} command{'' if len(items) == 1 and not more else 's'}"
    latest = _latest_test_runs(items)
    if not latest:
        return count
    totals = {key: 0 for key in TEST_COUNTS}
    for item in latest.values():
        for key in TEST_COUNTS:
            totals[key] += item.test_summary.get(key, 0)
    runs = sum(1 for item in items if item.test_summary)
    rerun = f" (latest of {runs} runs)" if runs > len(latest) else ""
    return f"{count}, tests: {_counts(totals)}{rerun}"


def _latest_test_runs(items):
    """{command key: its last item with a test summary}, items in run order."""
    latest = {}
    for item in items:
        if item.test_summary:
            latest[_command_key(item)] = item
    return latest


def _command_key(item):
    """The same test command however it is spaced."""
    return " ".join(item.command.split())


def _tests_line(summary):
    return f"{summary['framework']}: {_counts(summary)}" if summary else ""


def _counts(counts):
    shown = [f"{counts[key]} {key if key != 'errors' or counts[key] != 1 else 'error'}"
             for key in TEST_COUNTS if counts.get(key)]
    return ", ".join(shown) or "no tests ran"
