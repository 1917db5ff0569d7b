"""The uuid an input goes to the agent under (docs/control.md, "Input identity").

Derived, not stored: the server names the input to the runner with it, the runner
writes the prompt under it, and the agent's echo carries it back, so ingest can tell
which input the agent took. uuid5 of the session and the input's id: the same input
always has the same uuid, and no two inputs share one.
"""
import uuid

# A fixed namespace of turnlog's own (uuid5 needs one); never change it: stored
# transcripts name inputs by the uuids made from it.
INPUT_NAMESPACE = uuid.UUID("6f1c2a4e-5b0d-4c53-9a57-3d7e2f1b8c90")


def input_uuid(session_id, input_id):
    """The uuid of input `input_id` of session `session_id`, as a string."""
    return str(uuid.uuid5(INPUT_NAMESPACE, f"{session_id}/{int(input_id)}"))
