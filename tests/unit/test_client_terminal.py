"""The pure parts of the terminal's driving commands (app/client/terminal): which failures
are tried again, the one-line explanations, the permission card and its answer, the
command lines, and attach's handling of events with a fake client."""
import io

import pytest
from click.testing import CliRunner

from app.client.errors import ApiError
from app.client.errors import Misconfigured
from app.client.errors import Unreachable
from app.client.terminal import COMMANDS
from app.client.terminal.attach import Attach
from app.client.terminal.attach import Detach
from app.client.terminal.attach import Screen
from app.client.terminal.attach import intro
from app.client.terminal.calls import Tries
from app.client.terminal.calls import answer_once
from app.client.terminal.calls import explain
from app.client.terminal.calls import resolution_text
from app.client.terminal.calls import retryable
from app.client.terminal.calls import with_retries
from app.client.terminal.prompts import MAX_LINES
from app.client.terminal.prompts import QUESTION
from app.client.terminal.prompts import answer_of
from app.client.terminal.prompts import permission_card
from app.client.terminal.prompts import visible

SID = "5f0c2a8e-1111-4222-8333-444455556666"
BASH = {"request_id": "r-1", "tool_name": "Bash", "expires_at": "2026-12-07T12:10:00Z",
        "input": {"command": "touch made.txt", "description": "make a file"}}


@pytest.mark.parametrize("error, repeatable, expected", [
    (Unreachable("refused", reached=False), False, True),
    (Unreachable("reset after sending", reached=True), False, False),
    (Unreachable("reset after sending", reached=True), True, True),
    (ApiError(503, "busy", "busy"), False, True),
    (ApiError(429, "rate_limited", "slow"), False, True),
    (ApiError(502, "http_502", "bad gateway"), False, False),
    (ApiError(500, "internal", "boom"), True, True),
    (ApiError(409, "session_completed", "done"), True, False),
    (ApiError(404, "session_not_found", "no"), True, False),
])
def test_only_a_repeatable_request_is_tried_again_once_the_server_may_have_acted(
        error, repeatable, expected):
    assert retryable(error, repeatable) is expected


class FakeClock:
    def __init__(self):
        self.now = 0.0
        self.slept = []

    def sleep(self, seconds):
        self.slept.append(seconds)
        self.now += seconds


class Flaky:
    """Fails with each of `errors` in turn, then answers."""

    def __init__(self, *errors):
        self.errors = list(errors)
        self.calls = 0

    def __call__(self):
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return {"ok": self.calls}


def test_with_retries_repeats_until_an_answer_and_notes_a_try_that_may_have_acted():
    clock, tries = FakeClock(), Tries()
    call = Flaky(Unreachable("refused"), ApiError(502, "http_502", "x"), ApiError(503, "busy", "y", retry_after=4))
    answer = with_retries(call, True, budget=60, tries=tries, sleep=clock.sleep,
                          clock=lambda: clock.now)
    assert answer == {"ok": 4} and call.calls == 4
    assert (tries.failed, tries.maybe_acted) == (3, True)
    assert clock.slept[-1] >= 4  # never sooner than Retry-After


def test_with_retries_gives_up_at_the_first_unsafe_failure_or_when_the_budget_is_spent():
    clock = FakeClock()
    unsafe = Flaky(ApiError(502, "http_502", "x"))
    with pytest.raises(ApiError):
        with_retries(unsafe, False, budget=60, sleep=clock.sleep, clock=lambda: clock.now)
    assert unsafe.calls == 1
    down = Flaky(*[Unreachable("refused")] * 100)
    with pytest.raises(Unreachable):
        with_retries(down, True, budget=5, sleep=clock.sleep, clock=lambda: clock.now)
    assert 1 < down.calls < 100 and clock.now <= 5
    once = Flaky(Unreachable("refused"))
    with pytest.raises(Unreachable):
        with_retries(once, True, budget=0, sleep=clock.sleep, clock=lambda: clock.now)
    assert once.calls == 1


def test_explain_names_the_answer_that_won_and_what_each_refusal_needs():
    won = {"request_id": "r-1", "state": "allowed", "behavior": "allow", "message": None,
           "resolved_by": "alice", "resolved_at": "2026-12-07T12:00:00Z"}
    line = explain(ApiError(409, "already_resolved", "x", {"permission": won}), SID)
    assert "r-1" in line and "allowed by alice at 2026-12-07T12:00:00Z" in line
    unsupported = ApiError(409, "not_supported", "the runner attached to session S does not offer"
                           " `send` (its provider cannot)", {"control": "send", "controls": ["stop"]})
    assert "does not offer `send`" in explain(unsupported, SID) and "offers: stop" in explain(unsupported, SID)
    completed = ApiError(409, "session_completed", "x", {"status": "failed"})
    assert f"session {SID} is failed" in explain(completed, SID)
    assert f"no session {SID}" in explain(ApiError(404, "session_not_found", "x"), SID)
    assert explain(ApiError(404, "not_found", "no such route"), SID) == "404 not_found: no such route"
    assert "no permission request" in explain(
        ApiError(404, "permission_not_found", "session S has no permission request r-9"), SID)
    for status, code, details in [(401, "invalid_token", {}),
                                  (403, "wrong_token_kind", {"token_kind": "runner"})]:
        assert "user token" in explain(ApiError(status, code, "x", details), SID)
    assert "a runner token cannot" in explain(ApiError(403, "not_permitted", "x", {"token_kind": "runner"}), SID)
    unreachable = "cannot reach http://h: connection refused (GET /x)"
    assert explain(Unreachable(unreachable), SID) == unreachable
    assert explain(Misconfigured("--server h has no scheme: use http://h"), SID) \
        == "--server h has no scheme: use http://h"
    assert explain(ApiError(422, "validation_error", "bad field"), SID) == "422 validation_error: bad field"


def test_resolution_text_says_who_answered_or_why_no_one_did():
    assert resolution_text({"state": "denied", "resolved_by": "bob", "message": "not now"}) \
        == "denied by bob (not now)"
    assert resolution_text({"state": "expired", "message": "no one answered in time: denied"}) \
        == "expired (denied: no one answered in time)"
    assert resolution_text({"state": "cancelled", "resolved_by": "agent"}) \
        == "cancelled (the agent withdrew it)"


def test_a_bash_permission_shows_its_command_as_it_would_run():
    card = permission_card(BASH)
    assert card == ["[permission requested: Bash]", "  $ touch made.txt", "  # make a file",
                    "  (request r-1; denied at 2026-12-07T12:10:00Z unless answered)"]
    multi = permission_card({"request_id": "r", "tool_name": "Bash",
                             "input": {"command": "cd x\nmake", "timeout": 5}})
    assert multi[1:4] == ["  $ cd x", "    make", "  timeout: 5"]


def test_other_tools_show_one_line_per_field_bounded():
    card = permission_card({"request_id": "r", "tool_name": "Write",
                            "input": {"file_path": "a.txt", "content": "\n".join(["x"] * 40)}})
    assert card[1] == "  file_path: a.txt" and card[2] == "  content: x"
    assert len(card) == 1 + MAX_LINES + 1 + 1 and card[-2].endswith("more lines)")
    assert permission_card({"request_id": "r", "tool_name": "T", "input": ["a"]})[1:3] == ["  [", '    "a"']


def test_what_the_agent_wrote_cannot_drive_the_terminal():
    hostile = {"request_id": "r\x1b[2J", "tool_name": "Bash\x1b[1A",
               "input": {"command": "ls\r\x1b]0;title\x07 \u202eevil"}}
    text = "\n".join(permission_card(hostile))
    assert "\x1b" not in text and "\r" not in text and "\u202e" not in text and "\x07" not in text
    assert "\\x1b[1A" in text and "\\u202e" in text
    assert visible("tab\tok") == "tab\tok"


@pytest.mark.parametrize("typed, behavior", [("y", "allow"), ("YES\r", "allow"), (" y ", "allow"),
                                             ("", "deny"), ("n", "deny"), ("sure", "deny")])
def test_only_y_allows(typed, behavior):
    assert answer_of(typed) == behavior
    assert QUESTION == "allow? [y/N] "


@pytest.mark.parametrize("args, needs", [
    (["send", "--server", "http://x", "--token", "t", "not-a-uuid", "hi"], "is not a session id"),
    (["send", "--server", "http://x", SID, "hi"], "a token is needed"),
    (["approve", "--server", "http://x", "--token", "t", SID], "Missing argument 'REQUEST_ID'"),
    (["stop", "--token", "t", SID], "--server"),
    (["attach", "--server", "http://x", "--token", "t", "../etc"], "is not a session id"),
])
def test_bad_command_lines_are_usage_errors(args, needs, monkeypatch):
    monkeypatch.delenv("TURNLOG_TOKEN", raising=False)
    monkeypatch.delenv("TURNLOG_SERVER", raising=False)
    by_name = {command.name: command for command in COMMANDS}
    result = CliRunner().invoke(by_name[args[0]], args[1:])
    assert result.exit_code == 2 and needs in result.output


@pytest.mark.parametrize("name", ["send", "attach"])
def test_a_server_url_that_cannot_be_right_exits_125_naming_the_fix(name):
    by_name = {command.name: command for command in COMMANDS}
    args = ["--server", "127.0.0.1:8000", "--token", "t", SID] + (["hi"] if name == "send" else [])
    result = CliRunner().invoke(by_name[name], args)
    assert result.exit_code == 125 and "use http://127.0.0.1:8000" in result.output


def test_the_five_commands_are_there_with_their_options():
    by_name = {command.name: command for command in COMMANDS}
    assert sorted(by_name) == ["approve", "attach", "interrupt", "send", "stop"]
    options = {name: {o for p in c.params for o in p.opts} for name, c in by_name.items()}
    assert {"--deny", "--message", "--json"} <= options["approve"]
    assert {"--client-message-id", "--retry-for", "--token-file"} <= options["send"]


class FakeClient:
    """The Client calls attach makes, answered from memory."""

    server = "http://fake"
    token = "t"

    def __init__(self, pending=()):
        self.pending = list(pending)
        self.sent, self.answers, self.interrupts = [], [], 0

    def get_session(self, _sid):
        return {"session_id": SID, "status": "running", "pending_permissions": self.pending,
                "controls": {"reasons": {}}}

    def send_message(self, _sid, content, client_message_id):
        self.sent.append((content, client_message_id))
        return {"input": {"input_id": len(self.sent), "state": "queued"}, "runner_attached": True}

    def answer_permission(self, _sid, request_id, behavior, message=None):
        if any(a[0] == request_id for a in self.answers):
            raise ApiError(409, "already_resolved", "x", {"permission": {
                "request_id": request_id, "state": "allowed", "resolved_by": "alice"}})
        self.answers.append((request_id, behavior))
        self.pending = [p for p in self.pending if p["request_id"] != request_id]
        return {"permission": {"request_id": request_id, "state": behavior + "ed",
                               "resolved_by": "alice"}}

    def interrupt(self, _sid):
        self.interrupts += 1
        return {"command": {"command_id": 1}, "runner_attached": True}


def attached(fake_client):
    out, err = io.StringIO(), io.StringIO()
    return Attach(fake_client, SID, Screen(out, err)), out, err


def test_attach_asks_a_pending_permission_and_the_next_line_answers_it():
    client = FakeClient(pending=[BASH])
    terminal, out, _ = attached(client)
    terminal.handle("line", "hello there")
    assert client.sent[0][0] == "hello there" and client.sent[0][1].startswith("cli-")
    terminal.handle("requested", {"request_id": "r-1"})
    terminal.ask_next()
    assert out.getvalue().endswith("  $ touch made.txt\n  # make a file\n  (request r-1; denied at"
                                   " 2026-12-07T12:10:00Z unless answered)\nallow? [y/N] ")
    terminal.handle("line", "y")
    assert client.answers == [("r-1", "allow")]
    terminal.handle("resolved", {"request_id": "r-1", "state": "allowed", "resolved_by": "alice"})
    assert out.getvalue().count("[permission r-1: allowed by alice]") == 1  # shown once
    terminal.handle("line", "next prompt")
    assert [content for content, _ in client.sent] == ["hello there", "next prompt"]
    assert len({message_id for _, message_id in client.sent}) == 2


def test_attach_never_asks_about_a_request_no_longer_pending_and_shows_who_answered():
    client = FakeClient(pending=[])
    terminal, out, _ = attached(client)
    terminal.handle("requested", {"request_id": "old"})
    terminal.ask_next()
    assert QUESTION not in out.getvalue() and terminal.asking is None
    client.pending = [BASH]
    terminal.handle("requested", {"request_id": "r-1"})
    terminal.ask_next()
    assert terminal.asking["request_id"] == "r-1"
    terminal.handle("resolved", {"request_id": "r-1", "state": "denied", "resolved_by": "bob"})
    assert terminal.asking is None and "[permission r-1: denied by bob]" in out.getvalue()
    terminal.handle("line", "y")  # the question is gone: this is a prompt now
    assert client.answers == [] and client.sent[-1][0] == "y"


def test_ctrl_c_interrupts_then_detaches_within_the_window():
    client = FakeClient()
    now = [100.0]
    terminal = Attach(client, SID, Screen(io.StringIO(), io.StringIO()), clock=lambda: now[0])
    terminal.on_sigint(2, None)
    assert terminal.handle(*terminal.events.get()) is None and client.interrupts == 1
    now[0] += 10  # outside the window: another interrupt
    terminal.on_sigint(2, None)
    now[0] += 1
    with pytest.raises(Detach):
        terminal.on_sigint(2, None)
    assert client.interrupts == 1 and terminal.events.qsize() == 1  # the second, unhandled


def test_attach_ends_with_the_session_or_the_input_and_fails_on_a_refusal():
    terminal, _, err = attached(FakeClient())
    assert terminal.handle("end", None) == 0
    assert terminal.handle("eof", None) == 0 and "detached" in err.getvalue()
    assert terminal.handle("error", "no session") == 1 and "Error: no session" in err.getvalue()


def test_intro_says_what_cannot_be_done_and_a_completed_session_takes_nothing():
    running = {"session_id": SID, "status": "running",
               "controls": {"reasons": {"send": "no runner is attached"}}}
    assert "[send: no runner is attached]" in intro(running)
    assert "nothing can be sent" in intro({"session_id": SID, "status": "completed"})


def test_screen_starts_notes_and_questions_on_a_line_of_their_own():
    out, err = io.StringIO(), io.StringIO()
    screen = Screen(out, err)
    screen.write("partial")
    screen.note("[a note]")
    screen.line(QUESTION, end="")
    assert out.getvalue() == "partial\n" + QUESTION and err.getvalue() == "[a note]\n"


def test_on_a_terminal_the_echo_of_a_typed_answer_ends_the_question_line():
    client = FakeClient(pending=[BASH])
    out = io.StringIO()
    terminal = Attach(client, SID, Screen(out, io.StringIO()), tty=True)
    terminal.handle("requested", {"request_id": "r-1"})
    terminal.ask_next()
    terminal.handle("line", "y")  # the terminal echoed "y" and the Enter
    assert out.getvalue().endswith(QUESTION + "[permission r-1: allowed by alice]\n")


class DownClient(FakeClient):
    def get_session(self, _sid):
        raise Unreachable("cannot reach http://fake: connection refused (GET /x)")


def test_a_failed_look_at_the_pending_permissions_waits_before_the_next():
    now = [0.0]
    err = io.StringIO()
    terminal = Attach(DownClient(), SID, Screen(io.StringIO(), err), clock=lambda: now[0])
    terminal.handle("requested", {"request_id": "r-1"})
    for _ in range(5):  # idle ticks
        terminal.ask_next()
    assert err.getvalue().count("cannot reach http://fake") == 1
    now[0] += 10
    terminal.ask_next()
    assert err.getvalue().count("cannot reach http://fake") == 2


class LostAnswer(FakeClient):
    """The first answer is taken, but its reply is lost (a 502 after the server acted)."""

    def answer_permission(self, sid, request_id, behavior, message=None):
        if not self.answers:
            super().answer_permission(sid, request_id, behavior, message)
            raise ApiError(502, "http_502", "bad gateway")
        return super().answer_permission(sid, request_id, behavior, message)


def test_a_repeated_answer_that_finds_its_own_earlier_try_won_succeeds():
    answer = answer_once(LostAnswer(), SID, "r-1", "allow", budget=5, on_retry=lambda *a: None)
    assert answer["permission"]["state"] == "allowed"
    with pytest.raises(ApiError) as refused:  # found resolved otherwise than asked: not its own
        answer_once(LostAnswer(), SID, "r-1", "deny", budget=5, on_retry=lambda *a: None)
    assert refused.value.code == "already_resolved"
