"""Record exchanges with the real `codex app-server`, driven by the runner's CodexDriver,
against the fake Responses server:
tests/fixtures/interactive/codex-<version>/app_server_<name>.jsonl.

    .venv/bin/python -m tests.agents.capture_app_server [--exchange allow] [--out DIR]

Each line of a recording is one of, in the order they happened:
`{"sent": <what the driver wrote on the CLI's stdin>}`, `{"printed": <a line the CLI
printed>}`, or `{"control": "send" | "answer" | "interrupt", ...}` (what the test asked
the driver to do). tests/unit/test_codex_driver.py plays them back through a fresh driver.
The temporary folder in the lines is written as /tmp/capture, as tests/agents/capture.py
writes it.
"""
import argparse
import json
import queue
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from app.client.drivers.codex import CodexDriver
from tests.agents import clis
from tests.agents import runs
from tests.agents import scenarios

OUT = clis.ROOT / "tests" / "fixtures" / "interactive"
RUN_SECONDS = 60
PLACEHOLDER = "/tmp/capture"
INPUT_UUID = "00000000-0000-4000-8000-{:012d}"
# name: (scenario, what to answer each permission request: allow / deny, interrupt the
# first turn once its text streams, the prompts to send: the scenario's, then these)
EXCHANGES = {
    "multi_turn": ("multi_turn", None, False, ()),
    "allow": ("permission", "allow", False, ()),
    "deny": ("permission", "deny", False, ()),
    "interrupt": ("interrupted", None, True, ()),
}


class Recorder:
    def __init__(self, tmp):
        self.entries = []
        self.tmp = tmp
        self.lock = threading.Lock()

    def add(self, key, value):
        with self.lock:
            self.entries.append({key: value})

    def text(self):
        rendered = [json.dumps(entry, ensure_ascii=False) for entry in self.entries]
        return "".join(line.replace(self.tmp, PLACEHOLDER) + "\n" for line in rendered)


class RecordedStdin:
    """The CLI's stdin, each line written recorded as `sent`."""

    def __init__(self, pipe, recorder):
        self.pipe, self.recorder = pipe, recorder

    @property
    def closed(self):
        return self.pipe.closed

    def write(self, data):
        self.recorder.add("sent", json.loads(data))
        self.pipe.write(data)

    def flush(self):
        self.pipe.flush()

    def close(self):
        self.pipe.close()


def capture(name):
    scenario, decision, interrupt, more = EXCHANGES[name]
    prompts = [*scenarios.prompts(scenario), *more]
    controls = queue.Queue()
    with tempfile.TemporaryDirectory() as tmp, runs.fake_server("codex", scenario) as fake:
        recorder = Recorder(tmp)
        agent = clis.Agent.setup("codex", tmp, fake.base)
        driver = CodexDriver()
        argv, _ = driver.command(agent.command)
        proc = subprocess.Popen(argv, env=agent.env, cwd=agent.cwd, stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        watchdog = threading.Timer(RUN_SECONDS, proc.kill)
        watchdog.start()
        driver.bind(RecordedStdin(proc.stdin, recorder))
        worker = threading.Thread(target=_act, args=(driver, controls, recorder), daemon=True)
        worker.start()
        controls.put(("send", 0, prompts[0]))
        sent, interrupted = 1, not interrupt
        try:
            for raw in proc.stdout:
                recorder.add("printed", json.loads(raw))
                for out in map(json.loads, driver.on_line(raw.decode().rstrip("\n"))):
                    kind = out.get("type")
                    if kind == "turnlog.permission_request":
                        controls.put(("answer", out["request_id"], decision))
                    elif kind in ("turn.completed", "turnlog.interrupted", "turn.failed"):
                        if sent < len(prompts):
                            controls.put(("send", sent, prompts[sent]))
                            sent += 1
                        else:
                            controls.put(("close",))
                if not interrupted and json.loads(raw).get("method") == "item/agentMessage/delta":
                    interrupted = True
                    controls.put(("interrupt",))
            proc.wait()
        finally:
            watchdog.cancel()
            controls.put(None)
    return recorder.text()


def _act(driver, controls, recorder):
    """The command thread's part: one control at a time, as the runner's Commander does."""
    while (control := controls.get()) is not None:
        if control[0] == "send":
            uuid = INPUT_UUID.format(control[1] + 1)
            recorder.add("control", {"do": "send", "uuid": uuid, "content": control[2]})
            driver.send(uuid, control[2])
        elif control[0] == "answer":
            recorder.add("control", {"do": "answer", "request_id": control[1],
                                     "behavior": control[2]})
            driver.answer(control[1], control[2])
        elif control[0] == "interrupt":
            recorder.add("control", {"do": "interrupt"})
            driver.interrupt(None)
        else:
            driver.close_stdin()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--exchange", choices=sorted(EXCHANGES), action="append")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    if reason := clis.missing("codex"):
        print(f"codex: skipped: {reason}", file=sys.stderr)
        return 1
    for name in args.exchange or sorted(EXCHANGES):
        text = capture(name)
        folder = args.out / f"codex-{clis.version('codex')}"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"app_server_{name}.jsonl"
        path.write_text(text)
        print(f"{path.name}: {len(text.splitlines())} lines (codex {clis.version('codex')})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
