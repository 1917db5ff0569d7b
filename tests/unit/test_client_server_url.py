"""The --server URL checks and the plain words for a failed request (the URL checks of app/client/http.py)."""
import json

import pytest
import requests

from app.client.errors import ApiError
from app.client.errors import Misconfigured
from app.client.http import checked_server
from app.client.http import error_of
from app.client.http import misconfigured_by
from app.client.http import unreachable_reason


@pytest.mark.parametrize("url, root", [
    ("http://127.0.0.1:8000", "http://127.0.0.1:8000"),
    ("https://turnlog.example/", "https://turnlog.example"),
    ("http://proxy.example/turnlog/", "http://proxy.example/turnlog"),  # served under a prefix
])
def test_a_server_root_is_taken_without_its_trailing_slash(url, root):
    assert checked_server(url) == root


@pytest.mark.parametrize("url, fix", [
    ("127.0.0.1:8000", "use http://127.0.0.1:8000"),
    ("localhost", "use http://localhost"),
    ("ftp://host", "the scheme must be http:// or https://"),
    ("http://127.0.0.1:8000/api", "root URL, http://127.0.0.1:8000"),
    ("http://127.0.0.1:8000/api/remote/sessions", "root URL, http://127.0.0.1:8000"),
    ("http://h/sessions/5e0c2d1e", "root URL, http://h"),
    ("http://h/?x=1", "without ? or #"),
    ("", "has no scheme"),
])
def test_a_url_that_cannot_be_a_server_root_names_the_fix(url, fix):
    with pytest.raises(Misconfigured) as wrong:
        checked_server(url)
    assert fix in str(wrong.value) and "\n" not in str(wrong.value)
    assert not wrong.value.transient


def test_tls_spoken_to_a_plain_http_server_says_to_use_http():
    err = requests.exceptions.SSLError("[SSL: WRONG_VERSION_NUMBER] wrong version number (_ssl.c:1006)")
    wrong = misconfigured_by(err, "https://127.0.0.1:8000")
    assert str(wrong) == "https://127.0.0.1:8000 answers plain HTTP, not TLS: use http://127.0.0.1:8000"


def test_an_untrusted_certificate_names_the_ca_setting():
    err = requests.exceptions.SSLError("[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed")
    assert "REQUESTS_CA_BUNDLE" in str(misconfigured_by(err, "https://h"))


def test_a_failure_to_connect_is_no_misconfiguration():
    assert misconfigured_by(requests.ConnectionError("refused"), "http://h") is None


def test_a_timeout_is_said_in_words():
    assert unreachable_reason(requests.ConnectTimeout("x"), 30) == "connection timed out"
    assert unreachable_reason(requests.ReadTimeout("x"), 30) == "no answer within 30 s"


def answer(status, body, url):
    response = requests.Response()
    response.status_code, response.url = status, url
    response._content = json.dumps(body).encode()
    response.headers["Content-Type"] = "application/json"
    return response


def envelope(code):
    return {"error": {"code": code, "message": "The requested URL was not found", "status": 404}}


def test_turnlogs_own_404_for_no_route_under_a_path_names_the_root():
    server = "http://127.0.0.1:8000/turnlog"
    wrong = error_of(answer(404, envelope("not_found"), f"{server}/api/remote/sessions"), server)
    assert isinstance(wrong, Misconfigured) and wrong.status == 404
    assert str(wrong) == ("no turnlog API at http://127.0.0.1:8000/turnlog: give the server's"
                          " root URL, e.g. http://127.0.0.1:8000")


def test_a_404_for_the_session_or_at_the_root_stays_the_servers_answer():
    under = "http://127.0.0.1:8000/turnlog"
    unknown = error_of(answer(404, envelope("session_not_found"), f"{under}/api/x"), under)
    assert type(unknown) is ApiError and unknown.code == "session_not_found"
    # at the root, `not_found` is an older server without that one route (feed falls back)
    root = "http://127.0.0.1:8000"
    older = error_of(answer(404, envelope("not_found"), f"{root}/api/x/events"), root)
    assert type(older) is ApiError and older.code == "not_found"
