"""The web layer frames a record the live hub shares once for all its followers, and
keeps the text no longer than the record."""
import gc
import weakref

from app.services.streaming import Page
from app.streaming import live


def test_a_shared_page_is_framed_once_for_every_follower():
    framed = []

    def frame(page):
        framed.append(page)
        return [f"id: {index}\n\n" for index, _ in page.events]

    page = Page([(0, "{}"), (1, "{}")], shared=True)
    first = live.shared_writes(page, frame)
    assert first == [b"id: 0\n\n", b"id: 1\n\n"]
    assert live.shared_writes(page, frame) is first and framed == [page]
    other = Page([(0, "{}"), (1, "{}")], shared=True)  # another read: framed on its own
    assert live.shared_writes(other, frame) is not first and len(framed) == 2


def test_the_framed_text_goes_with_its_page():
    gc.collect()
    before = len(live._framed)
    page = Page([(0, "{}")], shared=True)
    live.shared_writes(page, lambda record: ["x" * 1000])
    assert len(live._framed) == before + 1
    gone = weakref.ref(page)
    del page
    gc.collect()
    assert gone() is None  # the cache does not keep the page alive
    assert len(live._framed) == before
