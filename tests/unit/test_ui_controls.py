"""The session page's controls as the templates and the state JSON show them."""
from app.core.inputs import input_uuid
from app.core.records import SessionInput
from app.core.records import SessionPermission
from app.ui import controls

ALL_OFF = {"send": False, "permissions": False, "interrupt": False, "stop": False,
           "runner_attached": False,
           "reasons": {c: "the session is completed" for c in
                       ("send", "permissions", "interrupt", "stop")}}


def permission(tool_name="Bash", tool_input=None):
    return SessionPermission("s1", "req-1", tool_name, tool_input or {}, 4, "t0", "t9", "pending")


def test_buttons_say_why_they_are_off():
    offered = {"send": True, "interrupt": False, "stop": True,
               "reasons": {"interrupt": "the attached runner does not offer it"}}
    assert [(b.name, b.enabled, b.reason) for b in controls.buttons(offered)] == [
        ("send", True, ""), ("interrupt", False, "the attached runner does not offer it"),
        ("stop", True, "")]


def test_one_shared_reason_is_said_once_else_each_with_its_control():
    assert controls.unavailable_note(ALL_OFF) == "Unavailable: the session is completed."
    assert controls.unavailable_note(ALL_OFF, "alice") == \
        "Unavailable: the session is completed. Stopped by alice."
    some = {"reasons": {"interrupt": "not offered", "stop": "not offered"}}
    assert controls.unavailable_note(some) == "Interrupt: not offered; Stop: not offered."
    assert controls.unavailable_note({"reasons": {}}) == ""


def test_a_bash_card_shows_its_command_as_code_and_another_tool_its_input():
    bash = controls.permission_card(permission("Bash", {"command": "rm -rf build",
                                                        "description": "clean"}))
    assert (bash.command, bash.detail) == ("rm -rf build", "clean")
    write = controls.permission_card(permission("Write", {"file_path": "/a.txt", "content": "x"}))
    assert (write.command, write.detail) == (None, "/a.txt")
    assert '"content": "x"' in write.input_json


def test_the_state_json_names_each_sent_input_by_its_client_id_and_row_uuid():
    class Session:
        session_id, status, stopped_by = "s1", "running", None
        controls = ALL_OFF
        pending_permissions = [permission()]

    sent = SessionInput(7, "s1", "c-7", "hello", "delivered", None, "alice", "t1")
    state = controls.control_state(Session, [sent])
    assert state["inputs"] == [{"input_id": 7, "client_message_id": "c-7", "content": "hello",
                                "state": "delivered", "reason": None,
                                "uuid": input_uuid("s1", 7)}]
    assert state["pending_permissions"] == ["req-1"]
    assert state["note"] == "Unavailable: the session is completed."
