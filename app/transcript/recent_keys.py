"""The replay window: the fixed-width keys of the last `size` line ids, oldest first.

It is stored as one string of keys. A request reads that string as it is (a
search in it is a C loop, and splitting it would cost a batch of one line more
than it saves) and keeps the keys it adds beside it, so a line costs a lookup
rather than a copy of the whole window; `stored()` gives the string back as
appending each key to it and keeping its last `size` keys would have. Pure.
"""


class RecentKeys:
    """`key in window` and `add(key)` over the stored string and the keys added since."""

    def __init__(self, stored, width, size):
        self._stored = stored  # always whole keys: `stored()` cuts on key boundaries
        self._width = width
        self._size = size
        self._added = []
        self._added_at = {}  # key -> its latest position in `_added`

    def __contains__(self, key):
        at = self._added_at.get(key)
        if at is not None:
            return at >= len(self._added) - self._size  # an older copy may have left the window
        older = self._size - len(self._added)  # how many stored keys are still in the window
        if older <= 0:
            return False
        return self._stored_holds(key, max(0, len(self._stored) - older * self._width))

    def add(self, key):
        self._added_at[key] = len(self._added)
        self._added.append(key)

    def stored(self):
        """The window as one string, its last `size` keys."""
        if not self._added:
            return self._stored
        return (self._stored + "".join(self._added))[-self._size * self._width:]

    def _stored_holds(self, key, start):
        """A match must start on a key's boundary: one straddling two keys is no match."""
        at = self._stored.find(key, start)
        while at != -1:
            if at % self._width == 0:
                return True
            at = self._stored.find(key, at + 1)
        return False
