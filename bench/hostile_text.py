"""Agent text built to make a parser super-linear: time per MiB on each text path.

    .venv/bin/python bench/hostile_text.py [--mib M] [--runs R] [--path NAME]

For each text path (test summaries, Markdown, titles, search snippets, tool-text
flattening, each provider's line parser) and each hostile input of about M MiB
(default 1; runs of blanks and newlines, backticks, `*`, `_`, `[`, `(`, long words,
deep JSON), the median of R runs (default 3) in ms per MiB; the worst input of a path
is its figure. Goal: about 50 ms per MiB, and above all no growth faster than the input
(run with --mib 0.25 and --mib 1: a linear path keeps its figure).

Then the issue's two attacks: a Claude Bash tool result of 118 KiB,
`"1 passed in 0.2s\\n" + 60000 * "\\n"`, ingested with its turn through the ingest
service on SQLite (goal: under 100 ms; it held the write lock 28.8 s before), the same
at the longest line the API takes, and a 16 KB message of backticks rendered as
Markdown (goal: under 50 ms). The ingest figure is the whole request, all of it inside
the write transaction: the most the lock is held for parsing that text.
"""
import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app import create_app  # noqa: E402
from app import db  # noqa: E402
from app.core.records import Chunk  # noqa: E402
from app.extensions import db as sqla  # noqa: E402
from app.providers import REGISTRY  # noqa: E402
from app.services import sessions  # noqa: E402
from app.services.ingest import ingest_output  # noqa: E402
from app.services.search import head_snippet  # noqa: E402
from app.transcript.evidence import excerpt  # noqa: E402
from app.transcript.test_summaries import summarize  # noqa: E402
from app.ui import markdown  # noqa: E402
from app.ui.titles import init_fields  # noqa: E402
from app.ui.titles import one_line  # noqa: E402
from tests import claude_lines as cl  # noqa: E402

MIB = 1 << 20
ATTACK_RESULT = "1 passed in 0.2s\n" + 60000 * "\n"
ATTACK_MESSAGE = "a" + "`" * 16000 + "a"


def hostile_texts(size):
    """name -> a hostile text of about `size` characters."""
    def fill(unit):
        return unit * max(1, size // len(unit))
    return {
        "newlines": fill("\n"), "blanks": fill(" "), "blank lines": fill(" \t\n"),
        "backticks": "a" + fill("`") + "a", "backtick pairs": fill("`a"),
        "backtick runs": "".join("`" * n + "a" for n in range(1, int((2 * size) ** 0.5))),
        "stars": fill("*"), "star words": fill("**a"), "spaced stars": "*" + fill(" *a"),
        "unders": fill("_a "), "double unders": fill("__a "), "brackets": fill("[a"),
        "labels": fill("[a]("), "links": fill("[a](https://"), "parens": fill("("),
        "long word": fill("a"), "digits": fill("1"), "keys": fill("a="), "fields": fill("a=, "),
        "headings": "# " + fill(" #"), "summary words": fill("1 passed, "),
        "after a summary": "1 passed in 0.2s\n" + fill("\n"),
        "unittest": "Ran 1 test in 0.1s\n" + fill("\n"), "mixed": fill("*_`[( \n"),
    }


def markdown_texts(size):
    """hostile_texts and, for the Markdown renderer, a block every few characters."""
    def fill(unit):
        return unit * max(1, size // len(unit))
    return {**hostile_texts(size), "one-char lines": fill("a\n"), "paragraphs": fill("a\n\n"),
            "heading lines": fill("# a\n"), "items": fill("- a\n"), "alternate lists": fill("- a\n1. b\n"),
            "fences": fill("```\n```\n"), "code lines": fill("``a``\n"), "link lines": fill("[a](https://x)\n"),
            "label lines": fill("[a](\n"), "star lines": fill("a* *a\n"),
            "prose": fill("Some *prose* with `code`, a [link](https://x.org) and **bold**.\n" * 3 + "\n")}


class Message:
    def __init__(self, role, content):
        self.role, self.content = role, content


def deep_json(size):
    """name -> a JSON line of about `size` characters for the provider parsers."""
    def line(body):
        return json.dumps({"type": "assistant", "message": {"content": body}})
    width = max(1, size // 2 - 400)
    return {
        "deep list": "[" * size, "deep object": '{"a":' * (size // 5),
        "nested 199": '{"type":"assistant","x":' + "[" * 199 + "1," * width + "1" + "]" * 199 + "}",
        "long text": line([{"type": "text", "text": "`" * size}]),
        "escapes": '{"type":"user","t":"' + "\\ud800" * (size // 6) + '"}',
        "newlines": "\n" * size, "braces": "{" * size,
    }


def paths(size):
    """path name -> (function, {input name: input})."""
    texts = hostile_texts(size)
    wide = "[" * 150 + "1," * (size // 2) + "1" + "]" * 150
    tool_contents = {"nested 150": json.loads(wide),
                     "parts": [{"type": "text", "text": text} for text in texts.values()]}
    found = {
        "test summaries": (summarize, texts),
        # The renderer itself (a text longer than RENDER_MAX_CHARS is shown preformatted).
        "markdown": (lambda text: markdown.render(text, max_chars=None), markdown_texts(size)),
        "titles": (lambda text: (init_fields([Message("system", "Session started: " + text)]),
                                 one_line(text)), texts),
        "search snippets": (lambda text: head_snippet(text, ["a", "passed", "run"]), texts),
        "tool text": (_tool_text, tool_contents),
    }
    for provider, parse in REGISTRY.items():
        found[f"{provider} lines"] = (parse, deep_json(size))
    return found


def _tool_text(content):
    from app.formats.tool_text import tool_result_text
    return tool_result_text(content)


def _evidence_parse(output):
    """What evidence_items parses of one shell result's text."""
    return summarize(output), excerpt(output)


def timed(function, value, runs):
    times = []
    for _ in range(runs):
        began = time.perf_counter()
        function(value)
        times.append(time.perf_counter() - began)
    return statistics.median(times)


def measure_paths(size, runs, only):
    print(f"{'path':18} {'worst input':18} {'ms/MiB':>8}   (median of {runs}, inputs of "
          f"{size / MIB:.2f} MiB)")
    for name, (function, inputs) in paths(size).items():
        if only and name != only:
            continue
        figures = {label: timed(function, value, runs) * 1000 / (size / MIB)
                   for label, value in inputs.items()}
        worst = max(figures, key=figures.get)
        print(f"{name:18} {worst:18} {figures[worst]:8.1f}")


def ingest_attack(runs, result=ATTACK_RESULT):
    """Median ms to ingest a Bash call, its `result` and the closing result line."""
    with tempfile.TemporaryDirectory(prefix="turnlog-bench-") as tmp:
        app = create_app({"SQLALCHEMY_DATABASE_URI": f"sqlite:///{Path(tmp) / 'hostile.sqlite'}"})
        with app.app_context():
            db.upgrade(sqla.engine, app.config["MIGRATIONS_DIR"])
            times = []
            for _ in range(runs):
                sid = sessions.open_session({"session_type": "agent", "provider": "claude"},
                                            db.writing()).session_id
                lines = [cl.system_init(), cl.assistant(cl.tool_use("toolu_1", "Bash", {"command": "pytest"})),
                         cl.tool_result("toolu_1", result), cl.result()]
                chunks = [Chunk(line, "stdout", seq) for seq, line in enumerate(lines)]
                began = time.perf_counter()
                ingest_output(sid, chunks, db.writing(), retention_seconds=86400)
                times.append(time.perf_counter() - began)
                sqla.session.remove()
            return statistics.median(times) * 1000


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=float, default=1.0, help="size of each hostile input (M)")
    parser.add_argument("--runs", type=int, default=3, help="runs per input; the median counts (R)")
    parser.add_argument("--path", default="", help="only this path (as printed)")
    args = parser.parse_args()
    measure_paths(int(args.mib * MIB), args.runs, args.path)
    print()
    print(f"118 KiB tool result ingested (3 lines, one request): {ingest_attack(args.runs):.1f} ms"
          "  (goal < 100 ms)")
    # The longest line the API takes (MAX_LINE_LENGTH, 2 Mi characters) of the same
    # attack: each newline is two characters of JSON.
    longest = "1 passed in 0.2s\n" + "\n" * (MIB - 1000)
    print(f"2 MiB line of the same (1 Mi newlines) ingested: {ingest_attack(args.runs, longest):.1f} ms")
    for name, output in (("118 KiB result", ATTACK_RESULT), ("2 Mi-character line's result", longest)):
        print(f"evidence of the {name} (summary, excerpt) inside the lock: "
              f"{timed(_evidence_parse, output, args.runs) * 1e6:.0f} µs")
    print(f"16 KB backtick message rendered: "
          f"{timed(markdown.render, ATTACK_MESSAGE, args.runs) * 1000:.2f} ms  (goal < 50 ms)")
    print("Markdown of each input, ms per MiB (worst first):")
    size = int(args.mib * MIB)
    figures = {label: timed(lambda text: markdown.render(text, max_chars=None), value, args.runs)
               * 1000 / (size / MIB) for label, value in markdown_texts(size).items()}
    print("  " + ", ".join(f"{label} {figure:.0f}"
                           for label, figure in sorted(figures.items(), key=lambda item: -item[1])))
    longest = "*a " * (markdown.RENDER_MAX_CHARS // 3 + 1)
    print(f"a message past RENDER_MAX_CHARS ({len(longest)} characters) shown preformatted: "
          f"{timed(markdown.render, longest, args.runs) * 1000:.2f} ms")


if __name__ == "__main__":
    main()
