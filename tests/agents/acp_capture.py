"""Capture a real Agent Client Protocol exchange with `gemini --acp` (FORMATS B4), both
ways, as the fixture the Gemini driver's unit tests replay:
tests/fixtures/interactive/gemini-<version>/acp_session.jsonl, one record a line,
`{"from": "client"|"agent", "message": <the JSON-RPC message>}`.

    .venv/bin/python -m tests.agents.acp_capture [--out DIR]

One session against the fake Gemini API playing SESSION: a plain answer, a shell
command allowed (proceed_once), a file write rejected (cancel), a slow answer cancelled
(session/cancel) after its first piece, and a plain answer again. The client announces
no capabilities, as the driver does. The temporary folder is written as /tmp/capture.
"""
import argparse
import json
import queue
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from tests.agents import clis
from tests.agents import gemini
from tests.agents import scenarios

OUT = clis.ROOT / "tests" / "fixtures" / "interactive"
PLACEHOLDER = "/tmp/capture"
WAIT_SECONDS = 60
# (scenario whose first turn is played, how the permission requests of that turn are answered)
STEPS = (("plain", None), ("permission", "proceed_once"), ("file_write", "cancel"),
         ("slow", None), ("plain", None))
SESSION = {"turns": [scenarios.load(name)["turns"][0] for name in
                     dict.fromkeys(name for name, _ in STEPS)]}


def prompt_of(name):
    return scenarios.load(name)["turns"][0]["prompt"]


class Exchange:
    """The CLI's stdin and stdout, every message recorded in order."""

    def __init__(self, proc, tmp):
        self.proc, self.tmp = proc, tmp
        self.records = []
        self.lines = queue.Queue()
        self.next_id = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def send(self, message):
        self.records.append({"from": "client", "message": message})
        self.proc.stdin.write(json.dumps(message) + "\n")
        self.proc.stdin.flush()

    def request(self, method, params):
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        return self.next_id

    def until(self, wanted, answer=None, on_chunk=None):
        """Read until the response to request `wanted`; answer permission requests with
        option `answer`; call `on_chunk` at the first message chunk."""
        while True:
            line = self.lines.get(timeout=WAIT_SECONDS)
            if line is None:
                raise RuntimeError("the CLI closed its stdout")
            try:
                message = json.loads(line)
            except ValueError:
                continue
            self.records.append({"from": "agent", "message": message})
            if message.get("method") == "session/request_permission":
                self.send({"jsonrpc": "2.0", "id": message["id"], "result": {
                    "outcome": {"outcome": "selected", "optionId": answer}}})
            update = (message.get("params") or {}).get("update") or {}
            if on_chunk and update.get("sessionUpdate") == "agent_message_chunk":
                on_chunk()
                on_chunk = None
            if message.get("id") == wanted and "method" not in message:
                return message


def capture():
    with tempfile.TemporaryDirectory() as tmp, gemini.server(SESSION) as fake:
        agent = clis.Agent.setup("gemini", tmp, fake.base)
        proc = subprocess.Popen(agent.interactive(), env=agent.env, cwd=agent.cwd, text=True,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL)
        watchdog = threading.Timer(WAIT_SECONDS * 3, proc.kill)
        watchdog.start()
        try:
            talk = Exchange(proc, tmp)
            talk.until(talk.request("initialize", {"protocolVersion": 1, "clientCapabilities": {}}))
            session_id = talk.until(talk.request("session/new", {
                "cwd": str(agent.cwd), "mcpServers": []}))["result"]["sessionId"]
            for name, answer in STEPS:
                cancel = (lambda: talk.send({"jsonrpc": "2.0", "method": "session/cancel",
                                             "params": {"sessionId": session_id}})) \
                    if name == "slow" else None
                talk.until(talk.request("session/prompt", {
                    "sessionId": session_id, "prompt": [{"type": "text", "text": prompt_of(name)}]}),
                    answer, cancel)
            proc.stdin.close()
            proc.wait(WAIT_SECONDS)
        finally:
            watchdog.cancel()
        return [json.loads(json.dumps(record).replace(tmp, PLACEHOLDER)) for record in talk.records]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    if reason := clis.missing("gemini"):
        print(f"gemini: skipped: {reason}", file=sys.stderr)
        return 1
    records = capture()
    folder = args.out / f"gemini-{clis.version('gemini')}"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "acp_session.jsonl"
    path.write_text("".join(json.dumps(record, ensure_ascii=False) + "\n" for record in records))
    print(f"{path}: {len(records)} messages")
    return 0


if __name__ == "__main__":
    sys.exit(main())
