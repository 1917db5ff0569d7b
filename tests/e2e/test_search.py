"""GET /api/remote/sessions/search: every word, stemmed, newest first, only readable sessions."""
import pytest

from app.db import writing
from app.extensions import db
from app.services import tokens
from app.storage import migrations
from tests import claude_lines as cl

SEARCH = "/api/remote/sessions/search"


@pytest.fixture
def app_config():
    return {"AUTH_DISABLED": False}


@pytest.fixture
def keys(app):
    with app.app_context():
        issued = {name: tokens.issue(kind, name, writing(), is_admin=name == "root")[1]
                  for kind, name in [("runner", "m1"), ("user", "alice"), ("user", "bob"),
                                     ("user", "root")]}
    return {name: {"Authorization": f"Bearer {secret}"} for name, secret in issued.items()}


@pytest.fixture
def say(client, keys):
    """say(owner, *texts): a session of `owner` on m1 with one text turn per text."""
    def make(owner, *texts, session_type="agent"):
        response = client.post("/api/remote/sessions", headers=keys["root"], json={
            "session_type": session_type, "user_id": owner, "machine": "m1"})
        sid = response.get_json()["session"]["session_id"]
        lines = [line for text in texts for line in (cl.assistant(cl.text(text)), cl.result())]
        chunks = [{"seq": i, "data": line} for i, line in enumerate(lines)]
        posted = client.post(f"/api/remote/sessions/{sid}/output", json={"chunks": chunks},
                             headers=keys["m1"])
        assert posted.status_code == 200
        return sid
    return make


def search(client, headers, q, **params):
    response = client.get(SEARCH, query_string={"q": q, **params}, headers=headers)
    assert response.status_code == 200, response.get_json()
    return response.get_json()


def test_matches_every_word_stemmed_newest_first_with_snippets(client, keys, say, rows):
    sid = say("alice", "The migration failed on the index.", "Nothing to see here.",
              "Two migrations were retried.")
    found = search(client, keys["alice"], "migration")
    assert [(h["session_id"], h["role"]) for h in found["results"]] == [(sid, "assistant")] * 2
    ids = [h["message_id"] for h in found["results"]]
    assert ids == sorted(ids, reverse=True)
    stored = dict(rows("SELECT id, content FROM session_messages WHERE session_id = ?", sid))
    assert [stored[i] for i in ids] == ["Two migrations were retried.",
                                        "The migration failed on the index."]
    assert "**migrations**" in found["results"][0]["snippet"]
    assert found["next_cursor"] is None
    both = search(client, keys["alice"], "migration INDEX")["results"]
    assert [stored[h["message_id"]] for h in both] == ["The migration failed on the index."]


def test_only_sessions_the_caller_may_read(client, keys, say):
    mine = say("alice", "deploy the widget")
    theirs = say("bob", "deploy the gadget")

    def sessions_found(who):
        return {h["session_id"] for h in search(client, keys[who], "deploy")["results"]}

    assert sessions_found("alice") == {mine}
    assert sessions_found("bob") == {theirs}
    assert sessions_found("root") == {mine, theirs}


def test_pages_by_cursor_without_overlap(client, keys, say):
    say("alice", *[f"needle number {i}" for i in range(5)])
    first = search(client, keys["alice"], "needle", limit=2)
    second = search(client, keys["alice"], "needle", limit=2, before=first["next_cursor"])
    third = search(client, keys["alice"], "needle", limit=2, before=second["next_cursor"])
    ids = [h["message_id"] for page in (first, second, third) for h in page["results"]]
    assert len(ids) == len(set(ids)) == 5
    assert ids == sorted(ids, reverse=True)
    assert third["next_cursor"] is None


@pytest.mark.parametrize("q", ['"unbalanced', "NEAR(a b", "a OR", "col:thing", "-x*", "x^"])
def test_query_syntax_is_never_an_error(client, keys, say, q):
    say("alice", "a b thing x unbalanced")
    assert isinstance(search(client, keys["alice"], q)["results"], list)


@pytest.mark.parametrize("q", ["", "   ", "?!", None])
def test_a_query_without_words_is_422(client, keys, q):
    params = {} if q is None else {"q": q}
    response = client.get(SEARCH, query_string=params, headers=keys["alice"])
    assert response.status_code == 422
    assert response.get_json()["error"]["code"] == "invalid_query"


def test_a_bad_cursor_is_422(client, keys):
    response = client.get(SEARCH, query_string={"q": "x", "before": "abc"}, headers=keys["alice"])
    assert response.status_code == 422
    assert response.get_json()["error"]["code"] == "invalid_cursor"


def test_search_takes_a_user_token(client, keys):
    assert client.get(SEARCH, query_string={"q": "x"}).status_code == 401
    assert client.get(SEARCH, query_string={"q": "x"}, headers=keys["m1"]).status_code == 403


def test_rows_written_before_the_index_existed_are_found(app, rows, keys, client):
    # Drop the index, write a row, then build the index as migration 0009 does.
    with app.app_context():
        (m9,) = [m for m in migrations.discover(app.config["MIGRATIONS_DIR"],
                                                db.engine.dialect.name) if m.version == 9]
    response = client.post("/api/remote/sessions", headers=keys["root"],
                           json={"session_type": "agent", "user_id": "alice", "machine": "m1"})
    sid = response.get_json()["session"]["session_id"]
    if db.engine.url.get_backend_name() == "sqlite":
        for name in ("insert", "delete", "update"):
            rows(f"DROP TRIGGER session_messages_fts_{name}")
        rows("DROP TABLE session_messages_fts")
    else:
        rows("ALTER TABLE session_messages DROP COLUMN search_vector")
    client.post(f"/api/remote/sessions/{sid}/output", headers=keys["m1"], json={"chunks": [
        {"seq": 0, "data": cl.assistant(cl.text("legacy haystack"))}, {"seq": 1, "data": cl.result()}]})
    for statement in migrations.split_statements(m9.sql):
        rows(statement)
    assert len(search(client, keys["alice"], "haystack")["results"]) == 1


def test_a_search_past_its_budget_is_503_search_timeout_and_the_next_one_answers(app, client, keys, say):
    say("alice", *[f"needle number {i}" for i in range(1500)])
    app.config["SEARCH_TIMEOUT_SECONDS"] = 1e-9  # below what the setting accepts: a sure stop
    response = client.get(SEARCH, query_string={"q": "needle"}, headers=keys["alice"])
    assert response.status_code == 503
    error = response.get_json()["error"]
    assert error["code"] == "search_timeout"
    assert "budget" in error["message"] and error["details"] == {"budget_seconds": 1e-9}
    app.config["SEARCH_TIMEOUT_SECONDS"] = 30
    assert len(search(client, keys["alice"], "needle")["results"]) == 100
