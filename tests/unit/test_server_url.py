"""The address `demo` prints, from gunicorn's bind."""
import pytest

from app.cli.server_url import base_url
from app.cli.server_url import configured_bind


@pytest.mark.parametrize("bind, url", [
    ("127.0.0.1:8000", "http://127.0.0.1:8000"),
    ("0.0.0.0:8080", "http://127.0.0.1:8080"),
    (":9000", "http://127.0.0.1:9000"),
    ("example.test", "http://example.test:8000"),
    ("[::1]:8001", "http://[::1]:8001"),
    ("[::]:8002", "http://[::1]:8002"),
    ("[::1]", "http://[::1]:8000"),
    (" localhost:5000 ", "http://localhost:5000"),
])
def test_a_tcp_bind_becomes_the_url_a_local_user_opens(bind, url):
    assert base_url(bind) == url


@pytest.mark.parametrize("bind", ["unix:/run/turnlog.sock", "fd://3"])
def test_a_socket_bind_has_no_url(bind):
    assert base_url(bind) is None


def test_the_bind_defaults_to_gunicorn_confs(monkeypatch):
    monkeypatch.delenv("GUNICORN_BIND", raising=False)
    assert configured_bind() == "127.0.0.1:8000"
    monkeypatch.setenv("GUNICORN_BIND", "0.0.0.0:81")
    assert configured_bind() == "0.0.0.0:81"
