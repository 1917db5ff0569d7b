"""The real CLIs' captures against the CLIs' own totals: issue 31's "Measured" report.

    .venv/bin/python bench/captures_report.py [--captures DIR] [--figures FILE]

For every capture folder (tests/fixtures/captures/<cli>-<version>, made by
tests/agents/capture.py): its files and lines, the line types seen (named as capture.py
names them: Claude's system subtype, the kind of a Codex item), and every file posted
whole through the API of a fresh app (a temporary SQLite, authentication off) under each
session kind a runner declares (chat, agent, terminal, workflow) and completed: the rows,
`message_count`, the turns and the transcript's usage, beside the CLI's own totals
(tests/agents/totals.py: Claude's `result.usage` per turn, the thread's last Codex
`turn.completed.usage`, Gemini's `result.stats` per run) and, for Claude, `modelUsage`
(the whole session, background sub-agents too) and the cost (the transcript's against
the session's running `total_cost_usd`, tests/agents/totals.py). Kinds that gave the same figures share a
line. Last, how many random splits tests/integration/test_ingest_batching.py draws per
provider with its settings (TURNLOG_SPLIT_EXAMPLES), and with --figures (the JSON file a
test run writes when TURNLOG_FIGURES_FILE names it) how many it checked.

Prints Markdown tables (docs/agents.md, "Measured"). Exit code 1 when a transcript's
token usage or cost differs from the CLI's own.
"""
import argparse
import json
import os
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app import create_app  # noqa: E402
from app import db  # noqa: E402
from app.extensions import db as sqla  # noqa: E402
from tests.agents import clis  # noqa: E402
from tests.agents.capture import OUT  # noqa: E402
from tests.agents.capture import line_type  # noqa: E402
from tests.agents.linetypes import cli_of  # noqa: E402
from tests.agents.totals import claude_cost  # noqa: E402
from tests.agents.totals import claude_model_usage  # noqa: E402
from tests.agents.totals import cli_totals  # noqa: E402

BATCHING = ROOT / "tests" / "integration" / "test_ingest_batching.py"
# Every session kind a runner declares (the batching test's KINDS).
KINDS = {"chat": {}, "agent": {}, "terminal": {}, "workflow": {"workflow_id": "wf-report"}}
SESSIONS = "/api/remote/sessions"
PINNED = json.loads((ROOT / ".ci" / "agents" / "package.json").read_text())["dependencies"]


def lines_of(path):
    return path.read_text(encoding="utf-8").splitlines()


def posted(client, provider, kind, lines):
    """The session (GET) of `kind` that got `lines` in one request, then completed."""
    made = client.post(SESSIONS, json={"session_type": kind, "context": dict(KINDS[kind]),
                                       "provider": provider})
    sid = made.get_json()["session"]["session_id"]
    chunks = [{"seq": seq, "stream": "stdout", "data": line} for seq, line in enumerate(lines)]
    for answer in (client.post(f"{SESSIONS}/{sid}/output", json={"chunks": chunks}),
                   client.post(f"{SESSIONS}/{sid}/complete", json={"exit_code": 0})):
        assert answer.status_code == 200, answer.get_json()
    return client.get(f"{SESSIONS}/{sid}").get_json()["session"]


def transcript_figures(session):
    """(rows, message_count, turns, (all input, cached, output), cost) of a session."""
    usage = session["transcript_usage"]
    tokens = (usage["input_tokens"] + usage["cache_read_input_tokens"]
              + usage["cache_creation_input_tokens"], usage["cache_read_input_tokens"],
              usage["output_tokens"])
    return len(session["messages"]), session["message_count"], \
        session["conversation_turn_count"], tokens, usage["total_cost_usd"]


def add(one, other):
    return tuple(add(a, b) if isinstance(a, tuple) else round(a + b, 9) for a, b in zip(one, other))


def measure_folder(client, folder):
    """What the report says of one capture folder."""
    cli = cli_of(folder)
    files = sorted(folder.glob("*.jsonl"))
    types, lines, own, model, cost = Counter(), 0, (0, 0, 0), None, None
    # [sums, files whose tokens agree, files whose cost agrees]
    by_kind = {kind: [(0, 0, 0, (0, 0, 0), 0.0), 0, 0] for kind in KINDS}
    for path in files:
        text = lines_of(path)
        objs = [json.loads(line) for line in text]
        lines += len(text)
        types.update(line_type(cli, obj) for obj in objs)
        totals = cli_totals(cli, objs)
        own = add(own, totals)
        own_cost = claude_cost(objs) if cli == "claude" else None
        if cli == "claude":
            model = add(model or (0, 0, 0), claude_model_usage(objs) or (0, 0, 0))
            cost = round((cost or 0.0) + (own_cost or 0.0), 9)
        for kind in KINDS:
            figures = transcript_figures(posted(client, cli, kind, text))
            by_kind[kind][0] = add(by_kind[kind][0], figures)
            by_kind[kind][1] += figures[3] == totals
            by_kind[kind][2] += own_cost is None or abs(figures[4] - own_cost) < 1e-9
    return {"cli": cli, "version": folder.name.rsplit("-", 1)[1], "files": len(files),
            "lines": lines, "types": types, "own": own, "model": model, "cost": cost,
            "by_kind": by_kind}


def tokens(triple):
    return "{:,} / {:,} / {:,}".format(*triple) if triple else "-"


def print_tables(measured):
    print("| CLI | version | files | lines | line types seen (lines) |")
    print("|---|---|---|---|---|")
    for m in measured:
        seen = ", ".join(f"`{kind}` {count}" for kind, count in sorted(m["types"].items()))
        print(f"| {m['cli']} | {m['version']}{pin_mark(m)} | {m['files']} | {m['lines']} | {seen} |")
    print()
    print("| CLI | version | session kinds | rows | message_count | turns |"
          " transcript usage in / cached / out | CLI's own totals | files agreeing |"
          " Claude `modelUsage` | transcript cost, USD | Claude's own cost | files agreeing |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for m in measured:
        groups = {}
        for kind, (sums, agreeing, costs_agreeing) in m["by_kind"].items():
            groups.setdefault((sums, agreeing, costs_agreeing), []).append(kind)
        for (sums, agreeing, costs_agreeing), kinds in groups.items():
            rows, count, turns, usage, cost = sums
            own_cost = "-" if m["cost"] is None else f"{m['cost']:.5f}"
            costs = "-" if m["cost"] is None else f"{costs_agreeing} of {m['files']}"
            print(f"| {m['cli']} | {m['version']} | {', '.join(kinds)} | {rows} | {count} | {turns} |"
                  f" {tokens(usage)} | {tokens(m['own'])} | {agreeing} of {m['files']} |"
                  f" {tokens(m['model'])} | {cost:.5f} | {own_cost} | {costs} |")


def pin_mark(m):
    return " (pinned)" if PINNED.get(clis.PACKAGES[m["cli"]]) == m["version"] else ""


def split_settings():
    """The batching test's figures as its module sets them: (examples a stream on SQLite,
    on PostgreSQL, {provider: (streams, streams split on both backends)})."""
    from tests.integration import test_ingest_batching as batching

    per_provider = {}
    for name, provider, _ in batching.STREAMS:
        streams, both = per_provider.get(provider, (0, 0))
        on_both = any(stream[0] == name for stream in batching.ON_EACH_BACKEND)
        per_provider[provider] = (streams + 1, both + on_both)
    return batching.EXAMPLES, max(1, batching.EXAMPLES // 4), per_provider


def print_splits(figures_file):
    sqlite_each, postgres_each, per_provider = split_settings()
    checked = json.loads(Path(figures_file).read_text()) if figures_file else {}
    print()
    print(f"Random splits, tests/integration/test_ingest_batching.py (TURNLOG_SPLIT_EXAMPLES="
          f"{os.environ.get('TURNLOG_SPLIT_EXAMPLES', 'unset')}: hypothesis' max_examples {sqlite_each}"
          f" a stream on SQLite, {postgres_each} on PostgreSQL, each split posted under the 4 session"
          " kinds and held against the whole stream; it may stop short of max_examples on a stream"
          " with few splits, or run a few more; a run's figures say how many it checked):")
    print()
    print("| provider | streams | max_examples x streams, SQLite | streams on both backends |"
          " max_examples x streams, PostgreSQL | checked, SQLite | checked, PostgreSQL |")
    print("|---|---|---|---|---|---|---|")
    for provider, (streams, both) in sorted(per_provider.items()):
        done = [checked.get(f"random splits checked [{backend}]", {}).get(provider, "-")
                for backend in ("sqlite", "postgresql")]
        print(f"| {provider} | {streams} | {streams * sqlite_each} | {both} |"
              f" {both * postgres_each} | {done[0]} | {done[1]} |")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--captures", type=Path, default=OUT)
    parser.add_argument("--figures", help="a test run's TURNLOG_FIGURES_FILE (JSON)")
    args = parser.parse_args(argv)
    folders = sorted(path for path in args.captures.iterdir() if path.is_dir())
    with tempfile.TemporaryDirectory(prefix="turnlog-report-") as tmp:
        app = create_app({"SQLALCHEMY_DATABASE_URI": f"sqlite:///{Path(tmp) / 'report.sqlite'}",
                          "AUTH_DISABLED": True, "SECRET_KEY": "report-only"})
        with app.app_context():
            db.upgrade(sqla.engine, app.config["MIGRATIONS_DIR"])
            measured = [measure_folder(app.test_client(), folder) for folder in folders]
            sqla.engine.dispose()
    print_tables(measured)
    print_splits(args.figures)
    differ = [m for m in measured for _, agreeing, costs in m["by_kind"].values()
              if agreeing != m["files"] or (m["cost"] is not None and costs != m["files"])]
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
