"""A small agent speaking Claude Code's stream-json stdin/stdout protocol, for the tests of
`turnlog run --interactive` (a stand-in for `claude -p --input-format stream-json ...`).

Each stdin line it reads is logged, with the time it read it, to $FAKE_AGENT_LOG (JSON
lines, the first naming its argv). A `user` line is echoed (`isReplay`, its uuid) and
answered `echo: <content>` in one turn; content `tool: CMD` first asks for permission
(`control_request` / `can_use_tool`) and waits for the `control_response`; a
`control_request` `interrupt` is answered with a `control_response`. `--resume ID` keeps
the session id ID. EOF on stdin: exit 0.
"""
import json
import os
import sys
import time
import uuid


def out(record):
    sys.stdout.write(json.dumps(record) + "\n")
    sys.stdout.flush()


def log(record):
    path = os.environ.get("FAKE_AGENT_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(record) + "\n")


def turn(session, line, answers):
    content = line["message"]["content"]
    out({"type": "user", "message": line["message"], "uuid": line.get("uuid"),
         "session_id": session, "isReplay": True})
    out({"type": "system", "subtype": "init", "session_id": session})
    text = f"echo: {content}"
    if isinstance(content, str) and content.startswith("tool: "):
        request_id = f"perm-{uuid.uuid4().hex[:8]}"
        tool_input = {"command": content[len("tool: "):]}
        out({"type": "control_request", "request_id": request_id,
             "request": {"subtype": "can_use_tool", "tool_name": "Bash", "input": tool_input}})
        answer = answers(request_id)
        decision = answer["response"]["response"]
        text = (f"ran {decision['updatedInput']['command']}" if decision["behavior"] == "allow"
                else f"denied: {decision['message']}")
    out({"type": "assistant", "session_id": session,
         "message": {"role": "assistant", "content": [{"type": "text", "text": text}]}})
    out({"type": "result", "subtype": "success", "session_id": session, "num_turns": 1,
         "usage": {"input_tokens": 10, "output_tokens": 2}, "result": text})


def main():
    args = sys.argv[1:]
    session = args[args.index("--resume") + 1] if "--resume" in args else str(uuid.uuid4())
    log({"argv": args})
    lines = iter(sys.stdin.readline, "")

    def read():
        raw = next(lines)
        line = json.loads(raw)  # not JSON: dies, as the CLI does
        log({"at": time.time(), "line": line})
        return line

    def answers(request_id):
        while True:
            line = read()
            if line.get("type") == "control_response" \
                    and line["response"]["request_id"] == request_id:
                return line

    try:
        while True:
            line = read()
            if line.get("type") == "user":
                turn(session, line, answers)
            elif line.get("type") == "control_request":
                out({"type": "control_response", "response": {
                    "subtype": "success", "request_id": line["request_id"],
                    "response": {"still_queued": []}}})
    except StopIteration:
        return 0


if __name__ == "__main__":
    sys.exit(main())
