"""Scenario files: what a fake model server answers, turn by turn.

A scenario (scenarios/<name>.json) is a list of turns, each a `prompt` and the `replies`
the model gives to it, one per model call:

    {"turns": [{"prompt": "Run the command", "replies": [
        {"tool": "shell", "command": "echo turnlog-ok"},
        {"text": "It printed turnlog-ok."}]}]}

The servers are stateless: the turn is the one whose prompt the LAST user prompt of the
request contains, the reply is the one after as many tool results as follow that prompt.
A request that matches no turn (a title, a routing question) gets SIDE_ANSWER. Reply kinds:
`text` (with `chunks` pieces `delay` seconds apart), `thinking` (then `text`), `tool`
(`shell` with `command`, `write` with `path` and `content`, or Claude's `task` with
`prompt`: a sub-agent), `error` (`status`, `type`, `message`; with `then`, the error is
given once and `then` is the reply to the CLI's retry); each may give `usage` {input,
output, cached}. A turn with `"sub_agent": true` is what a sub-agent is asked, not a
prompt of the user's; a scenario with `clis` is played by those CLIs only.
"""
import json
from pathlib import Path

FOLDER = Path(__file__).resolve().parent / "scenarios"
SIDE_ANSWER = "Turnlog test"
DEFAULT_USAGE = {"input": 120, "output": 9, "cached": 0}
PLAIN = {"text": "OK."}


def names():
    return sorted(path.stem for path in FOLDER.glob("*.json"))


def load(name):
    return json.loads((FOLDER / f"{name}.json").read_text())


def prompts(name):
    """The prompts a CLI is given, in order (one run each, or one stdin line each)."""
    return [turn["prompt"] for turn in load(name)["turns"] if not turn.get("sub_agent")]


def played_by(name, cli):
    return cli in load(name).get("clis", (cli,))


def pick(scenario, texts):
    """The reply to a request whose user-side items are `texts`: a list, oldest first, of
    ("prompt", text) and ("tool_result", None)."""
    for back, (kind, text) in enumerate(reversed(texts)):
        if kind != "prompt":
            continue
        for turn in scenario["turns"]:
            if turn["prompt"] in text:
                done = sum(1 for k, _ in texts[len(texts) - back:] if k == "tool_result")
                replies = turn["replies"]
                return replies[done] if done < len(replies) else PLAIN
    return {"text": SIDE_ANSWER}


def usage(reply):
    return {**DEFAULT_USAGE, **reply.get("usage", {})}


def chunks(text, count):
    """`text` cut into `count` pieces (fewer when it is short), joined they are `text`."""
    count = max(1, min(count, len(text)))
    cuts = [len(text) * i // count for i in range(count + 1)]
    return [text[start:end] for start, end in zip(cuts, cuts[1:])]
