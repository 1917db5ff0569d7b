"""HTTP helpers for tests that drive the API through a Flask test client."""


def bearer(secret):
    """The header that presents token `secret`."""
    return {"Authorization": f"Bearer {secret}"}


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


class AuthedClient:
    """A test client with authentication on that sends, unless told otherwise, a runner
    token with every write and a user token with every read: the helpers above then
    drive an authenticated server unchanged."""

    def __init__(self, client, runner_token, user_token):
        self.client, self.runner_token, self.user_token = client, runner_token, user_token

    def post(self, path, **kwargs):
        return self.client.post(path, **self._with_token(kwargs, self.runner_token))

    def get(self, path, **kwargs):
        return self.client.get(path, **self._with_token(kwargs, self.user_token))

    @staticmethod
    def _with_token(kwargs, token):
        headers = dict(kwargs.pop("headers", None) or {})
        headers.setdefault("Authorization", f"Bearer {token}")
        return {**kwargs, "headers": headers}


def authed_client(app, user="alice"):
    """An AuthedClient for `app`: a runner token of machine m1 for `user`, and `user`'s token."""
    from app.db import writing
    from app.services import tokens
    with app.app_context():
        runner = tokens.issue("runner", "m1", writing(), users=(user,))[1]
        reader = tokens.issue("user", user, writing())[1]
    return AuthedClient(app.test_client(), runner, reader)
