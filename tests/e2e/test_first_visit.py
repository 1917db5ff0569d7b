"""A browser's first steps: `/` leads to the sessions (and sign-in), an unknown path is
an HTML page; API clients keep the JSON envelope everywhere."""
import pytest

BROWSER = {"Accept": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"}


@pytest.fixture
def app_config():
    return {"AUTH_DISABLED": False}


def test_the_root_leads_a_browser_to_the_sessions_and_then_to_sign_in(client):
    root = client.get("/", headers=BROWSER)
    assert root.status_code == 302 and root.headers["Location"] == "/sessions"
    sessions = client.get("/sessions", headers=BROWSER)
    assert sessions.status_code == 302
    assert sessions.headers["Location"].startswith("/login")


def test_a_browser_gets_the_html_error_page_on_an_unknown_path(client):
    response = client.get("/no/such/page", headers=BROWSER)
    assert response.status_code == 404
    assert response.mimetype == "text/html"
    body = response.get_data(as_text=True)
    assert "<h1>404</h1>" in body and "was not found" in body
    assert "script-src 'self'" in response.headers["Content-Security-Policy"]


def test_a_browser_gets_the_html_page_for_a_wrong_method_with_its_allow_header(client):
    response = client.get("/logout", headers=BROWSER)
    assert response.status_code == 405 and response.mimetype == "text/html"
    assert "POST" in response.headers["Allow"]


@pytest.mark.parametrize("accept", [None, "*/*", "application/json",
                                    "application/json, text/html;q=0.5"])
def test_api_clients_keep_the_json_envelope(client, accept):
    headers = {"Accept": accept} if accept else {}
    response = client.get("/no/such/page", headers=headers)
    assert response.status_code == 404 and response.mimetype == "application/json"
    assert response.get_json()["error"]["code"] == "not_found"
