"""HTTP helpers for tests that drive the API through a Flask test client."""


def create_session(client, session_type="agent", context=None, **extra):
    body = {"session_type": session_type, "context": context or {}, **extra}
    response = client.post("/api/remote/sessions", json=body)
    assert response.status_code == 201, response.get_json()
    return response.get_json()["session"]["session_id"]


def post_lines(client, session_id, lines, start_seq=0, stream="stdout"):
    chunks = [{"seq": start_seq + i, "stream": stream, "data": line} for i, line in enumerate(lines)]
    return client.post(f"/api/remote/sessions/{session_id}/output", json={"chunks": chunks})


def complete(client, session_id, exit_code=0):
    return client.post(f"/api/remote/sessions/{session_id}/complete", json={"exit_code": exit_code})


def get_session(client, session_id):
    response = client.get(f"/api/remote/sessions/{session_id}")
    assert response.status_code == 200, response.get_json()
    return response.get_json()["session"]
