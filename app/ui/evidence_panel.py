"""The session page's evidence panel: the commands the agent ran, each linked to the
turn that ran it, under one line of totals ("12 commands, tests: 41 passed, 1 failed").
Pure: no Flask."""
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
    rows = []
    for item in items:
        message_id = rows_of_turn.get(item.turn_id)
        rows.append(EvidenceRow(
            command=item.command, exit_code=item.exit_code, is_error=item.is_error,
            tests=_tests_line(item.test_summary),
            href=f"#{anchor(message_id, item.evidence_id)}" if message_id is not None else None))
    return EvidencePanel(summary=summary_line(items, more), rows=rows, more=more)


def summary_line(items, more=False):
    """"12 commands, tests: 41 passed, 1 failed": only the test counts that are not zero."""
    count = f"{len(items)}{'+' if more else ''} command{'' if len(items) == 1 and not more else 's'}"
    totals = {key: 0 for key in TEST_COUNTS}
    summaries = [item.test_summary for item in items if item.test_summary]
    for summary in summaries:
        for key in TEST_COUNTS:
            totals[key] += summary.get(key, 0)
    if not summaries:
        return count
    return f"{count}, tests: {_counts(totals)}"


def _tests_line(summary):
    return f"{summary['framework']}: {_counts(summary)}" if summary else ""


def _counts(counts):
    shown = [f"{counts[key]} {key if key != 'errors' or counts[key] != 1 else 'error'}"
             for key in TEST_COUNTS if counts.get(key)]
    return ", ".join(shown) or "no tests ran"
