"""The viewer pages long transcripts (issue: hostile tenant, item 2): a session opens at
its newest VIEWER_PAGE_MESSAGES messages and loads older pages on demand."""
import re

import pytest

from tests import claude_lines as cl
from tests.api import authed_client
from tests.api import create_session
from tests.api import post_lines

PAGE = 3


@pytest.fixture
def app_config():
    return {"AUTH_DISABLED": False, "VIEWER_PAGE_MESSAGES": PAGE}


@pytest.fixture
def client(app):
    """With authentication on: writes carry a runner token, reads alice's user token."""
    return authed_client(app)


def texts(html):
    return re.findall(r"<p>(say \d+)</p>", html)


def session_saying(client, count):
    sid = create_session(client, "chat")
    lines = [line for n in range(count) for line in (cl.assistant(cl.text(f"say {n}")), cl.result())]
    assert post_lines(client, sid, lines).status_code == 200
    return sid


def test_a_long_transcript_opens_at_its_newest_page_and_pages_back_to_the_first(client, rows):
    sid = session_saying(client, 8)
    html = client.get(f"/sessions/{sid}").get_data(as_text=True)
    assert texts(html) == ["say 5", "say 6", "say 7"]
    older = re.search(r'<a id="load-older" class="load-older" href="([^"]+)">', html).group(1)
    seen = []
    while older:
        response = client.get(older.replace("&amp;", "&"))
        assert response.status_code == 200 and response.headers["Cache-Control"] == "no-store"
        seen[:0] = texts(response.get_data(as_text=True))
        older = response.headers.get("X-Prev-Url")
    assert seen == [f"say {n}" for n in range(5)]
    assert rows("SELECT COUNT(*) FROM session_messages WHERE session_id = ?", sid) == [(8,)]


def test_a_short_transcript_shows_whole_without_the_link(client):
    sid = session_saying(client, PAGE)
    html = client.get(f"/sessions/{sid}").get_data(as_text=True)
    assert texts(html) == ["say 0", "say 1", "say 2"]
    assert 'id="load-older"' not in html


def test_a_bad_before_cursor_is_a_clear_error(client):
    sid = session_saying(client, 1)
    response = client.get(f"/sessions/{sid}/bubbles?before=nope")
    assert response.status_code == 422
