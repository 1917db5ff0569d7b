"""Capture what the real agent CLIs print: run each installed CLI headless through every
scenario against its fake model server and write its stdout lines as fixtures,
tests/fixtures/captures/<cli>-<version>/<scenario>.jsonl (multi-turn scenarios continue
the session with the CLI's resume option; the runs follow each other in one file).

    .venv/bin/python -m tests.agents.capture [--cli claude] [--scenario plain] [--out DIR] [--new] [--check]

The CLIs come from $TURNLOG_AGENTS_DIR (default .agents/, see docs/agents.md). Each
capture's temporary folder is written as /tmp/capture, so captures do not depend on
where they were made. Prints, per file, the lines and the line types it holds. `--new`
skips a CLI whose installed version is captured already (docs/agents.md's one-line
re-capture with the newest versions: a version seen before is not re-written).
"""
import argparse
import json
import subprocess
import sys
import tempfile
import threading
from collections import Counter
from pathlib import Path

from tests.agents import clis
from tests.agents import linetypes
from tests.agents import runs
from tests.agents import scenarios

OUT = clis.ROOT / "tests" / "fixtures" / "captures"
RUN_SECONDS = 60
PLACEHOLDER = "/tmp/capture"
# Extra captures: (cli, name, scenario, extra arguments).
VARIANTS = [("claude", "partial_messages", "slow", ["--include-partial-messages"])]
# Claude driven over stdin (Agent.interactive: stream-json in and out, permission requests
# on stdout, each allowed): (capture name, scenario).
INTERACTIVE = [("interactive_permission", "permission"), ("interactive_multi_turn", "multi_turn")]
INPUT_UUID = "00000000-0000-4000-8000-{:012d}"


def line_type(cli, obj):
    """What a parser dispatches a line on: its type, with Claude's system subtype and the
    kind of a Codex item."""
    kind = obj.get("type") if isinstance(obj, dict) else None
    if cli == "claude" and kind == "system":
        return f"system/{obj.get('subtype')}"
    if cli == "codex" and isinstance(obj.get("item"), dict):
        return f"{kind}/{obj['item'].get('type')}"
    return str(kind)


def session_of(cli, lines):
    """The session id a later run resumes, from a run's lines."""
    key = {"claude": "session_id", "codex": "thread_id", "gemini": "session_id"}[cli]
    for obj in lines:
        if isinstance(obj, dict) and obj.get(key):
            return obj[key]
    return None


def run_once(agent, argv):
    """The lines a run printed and its exit code (None: killed after RUN_SECONDS)."""
    try:
        done = subprocess.run(argv, env=agent.env, cwd=agent.cwd, stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=RUN_SECONDS)
    except subprocess.TimeoutExpired as err:
        out = err.stdout.decode() if isinstance(err.stdout, bytes) else (err.stdout or "")
        return out.splitlines(), None
    return done.stdout.splitlines(), done.returncode


def capture(cli, scenario, extra=()):
    """The stdout lines of CLI `cli` played through `scenario`, its exit codes."""
    lines, codes = [], []
    with tempfile.TemporaryDirectory() as tmp, runs.fake_server(cli, scenario) as fake:
        agent = clis.Agent.setup(cli, tmp, fake.base)
        session_id = None
        for prompt in scenarios.prompts(scenario):
            argv = agent.resumed(prompt, session_id) if session_id else agent.headless(prompt)
            out, code = run_once(agent, argv + list(extra))
            codes.append(code)
            lines += [line.replace(tmp, PLACEHOLDER) for line in out]
            session_id = session_of(cli, [_parsed(line) for line in out])
    return lines, codes


def capture_interactive(scenario):
    """Claude's stdout driven over stdin: each prompt a stream-json user line with a uuid,
    sent when the previous turn's result came; every permission request allowed."""
    prompts = scenarios.prompts(scenario)
    lines = []
    with tempfile.TemporaryDirectory() as tmp, runs.fake_server("claude", scenario) as fake:
        agent = clis.Agent.setup("claude", tmp, fake.base)
        proc = subprocess.Popen(agent.interactive(), env=agent.env, cwd=agent.cwd, text=True,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        watchdog = threading.Timer(RUN_SECONDS, proc.kill)
        watchdog.start()
        try:
            _send(proc, _prompt_line(prompts, 0))
            sent = 1
            for line in proc.stdout:
                lines.append(line.rstrip("\n").replace(tmp, PLACEHOLDER))
                obj = _parsed(line) or {}
                if obj.get("type") == "control_request":
                    _send(proc, _allow(obj))
                elif obj.get("type") == "result" and sent < len(prompts):
                    _send(proc, _prompt_line(prompts, sent))
                    sent += 1
                elif obj.get("type") == "result":
                    proc.stdin.close()
            proc.wait()
        finally:
            watchdog.cancel()
    return lines, [proc.returncode]


def _send(proc, obj):
    proc.stdin.write(json.dumps(obj) + "\n")
    proc.stdin.flush()


def _prompt_line(prompts, index):
    return {"type": "user", "message": {"role": "user", "content": prompts[index]},
            "uuid": INPUT_UUID.format(index + 1)}


def _allow(request):
    answer = {"behavior": "allow", "updatedInput": request["request"].get("input", {})}
    return {"type": "control_response", "response": {"subtype": "success", "request_id": request["request_id"],
                                                      "response": answer}}


def _parsed(line):
    try:
        return json.loads(line)
    except ValueError:
        return None


def write(cli, name, lines, out):
    folder = out / f"{cli}-{clis.version(cli)}"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.jsonl").write_text("".join(line + "\n" for line in lines))
    types = Counter(line_type(cli, _parsed(line)) for line in lines)
    print(f"{folder.name}/{name}.jsonl: {len(lines)} lines; "
          + ", ".join(f"{kind} {count}" for kind, count in sorted(types.items())))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cli", choices=clis.NAMES, action="append")
    parser.add_argument("--scenario", choices=scenarios.names(), action="append")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--new", action="store_true",
                        help="only the CLIs whose installed version has no folder under --out yet")
    parser.add_argument("--check", action="store_true",
                        help="then fail (exit 1) when a captured line is one the parsers do not know")
    args = parser.parse_args(argv)
    for cli in args.cli or clis.NAMES:
        if reason := clis.missing(cli):
            print(f"{cli}: skipped: {reason}", file=sys.stderr)
        elif args.new and (args.out / f"{cli}-{clis.version(cli)}").is_dir():
            print(f"{cli}: skipped: {cli}-{clis.version(cli)} is captured already", file=sys.stderr)
        else:
            capture_cli(cli, args.scenario, args.out)
    if args.check:
        return report_unknown(args.out)
    return 0


def capture_cli(cli, only, out):
    """Every capture of CLI `cli` (of the scenarios `only`, when given) into `out`."""
    for scenario in only or scenarios.names():
        if not scenarios.played_by(scenario, cli):
            continue
        lines, codes = capture(cli, scenario)
        write(cli, scenario, lines, out)
        print(f"  exit codes {codes}")
    for variant_cli, name, scenario, extra in VARIANTS:
        if variant_cli == cli and (not only or scenario in only):
            write(cli, name, capture(cli, scenario, extra)[0], out)
    for name, scenario in INTERACTIVE if cli == "claude" else ():
        if not only or scenario in only:
            write(cli, name, capture_interactive(scenario)[0], out)


def report_unknown(folder):
    unknown = linetypes.unknown_in(folder)
    for name, lines in unknown.items():
        for number, what in lines:
            print(f"{name}:{number}: the parsers do not know {what}", file=sys.stderr)
    return 1 if unknown else 0


if __name__ == "__main__":
    sys.exit(main())
