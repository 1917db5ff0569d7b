"""A Python client of turnlog's HTTP API, and the runner `turnlog run` is made of.

It imports neither the Flask app nor the services or storage, so user code (and a
runner on a build machine) needs only this package and `requests`:

    from app.client import Client
    client = Client("https://turnlog.example", token)
    sid = client.open_session("agent", provider="claude")["session"]["session_id"]
"""
from app.client.errors import ApiError
from app.client.errors import RunnerFailed
from app.client.errors import Unreachable
from app.client.http import Client
from app.client.sse import Event
from app.client.sse import SseParser

__all__ = ["ApiError", "Client", "Event", "RunnerFailed", "SseParser", "Unreachable"]
