"""A stand-in for a CLI agent: prints Claude stream-json lines with pauses, then exits 3.

    python tests/fake_agent.py --lines N [--from K] [--pause S] [--long-at I --long-size B]
                               [--pid-file P] [--exit-code E]

Line i is the same whatever --from is, so a second run can print the rest of a first
one. Every 7th line also writes a progress line to stderr. It imports nothing of
turnlog, so it starts fast.
"""
import argparse
import json
import os
import sys
import time

KINDS = ("text", "tool_use", "tool_result", "text", "result")


def line(i, long_size=0):
    """Stdout line i: a system init, then turns of text, a tool call, its result, text, result."""
    if i == 0:
        return json.dumps({"type": "system", "subtype": "init", "session_id": "fake",
                           "model": "claude-sonnet-4-5", "tools": ["Bash"]})
    turn, kind = divmod(i - 1, len(KINDS))
    tool_id = f"toolu_{turn:05d}"
    message = {"id": f"msg_{turn:05d}", "type": "message", "role": "assistant",
               "model": "claude-sonnet-4-5", "usage": {"input_tokens": 3, "output_tokens": 5}}
    if KINDS[kind] == "text":
        body = f"line {i} of turn {turn}" + ("x" * long_size)
        return json.dumps({"type": "assistant", "uuid": f"u{i}", "session_id": "fake",
                           "message": {**message, "content": [{"type": "text", "text": body}]}})
    if KINDS[kind] == "tool_use":
        block = {"type": "tool_use", "id": tool_id, "name": "Bash", "input": {"command": f"echo {i}"}}
        return json.dumps({"type": "assistant", "uuid": f"u{i}", "session_id": "fake",
                           "message": {**message, "content": [block]}})
    if KINDS[kind] == "tool_result":
        block = {"type": "tool_result", "tool_use_id": tool_id, "content": f"out {i}\nmore {i}",
                 "is_error": False}
        return json.dumps({"type": "user", "uuid": f"u{i}", "session_id": "fake",
                           "message": {"role": "user", "content": [block]}})
    return json.dumps({"type": "result", "subtype": "success", "is_error": False, "uuid": f"u{i}",
                       "num_turns": 1, "result": "done", "session_id": "fake",
                       "usage": {"input_tokens": 10, "cache_read_input_tokens": 90,
                                 "output_tokens": 20}})


def stderr_line(i):
    return f"progress {i}" if i % 7 == 3 else None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--lines", type=int, required=True)
    parser.add_argument("--from", dest="start", type=int, default=0)
    parser.add_argument("--pause", type=float, default=0.0)
    parser.add_argument("--long-at", type=int, default=-1)
    parser.add_argument("--long-size", type=int, default=0)
    parser.add_argument("--pid-file", default=None)
    parser.add_argument("--exit-code", type=int, default=3)
    args = parser.parse_args()
    if args.pid_file:
        with open(args.pid_file, "w") as handle:
            handle.write(str(os.getpid()))
    for i in range(args.start, args.lines):
        print(line(i, args.long_size if i == args.long_at else 0), flush=True)
        if (err := stderr_line(i)) is not None:
            print(err, file=sys.stderr, flush=True)
        if args.pause:
            time.sleep(args.pause)
    return args.exit_code


if __name__ == "__main__":
    sys.exit(main())
