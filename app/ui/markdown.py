"""A small, safe Markdown subset for agent text: escape first, then add a few tags.

Every character of the input is HTML-escaped before any tag is added, and the only
tags this module writes are its own: paragraphs (single newlines kept as <br>),
headings, bullet and numbered lists, fenced code blocks, `code spans`, **bold**,
*italic* / _italic_, and [links](https://...) whose target is http or https.
Anything else (raw HTML, images, javascript: links) stays visible as text.

Agent text is hostile input, so rendering is linear in its length: no pattern
here can backtrack over a run of characters, and each construct's closing mark
is looked for once per opening (a backtick run without a closing run of its
length is text, as in CommonMark). It is also fast: a block (a paragraph, a list)
is rendered whole by patterns that do not cross lines, not line by line, and a
text longer than RENDER_MAX_CHARS is shown escaped and preformatted, not rendered.
"""
import functools
import re

from markupsafe import Markup

# A longer text is shown as it is (escaped, in a <pre>), so no message costs more
# than rendering this many characters does (its worst cost: docs/performance.md).
RENDER_MAX_CHARS = 256 * 1024

FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})\s*([\w+#.-]*)")
# A heading's title is what is left once closing #s and blanks are stripped from its end.
HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*)$")
BULLET = re.compile(r"^\s{0,3}[-*+]\s+(.*)$")
NUMBERED = re.compile(r"^\s{0,3}\d{1,9}[.)]\s+(.*)$")
# Over the whole text (a blank is any white space but a newline):
# the first character of the next line that is not blank,
NOT_BLANK = re.compile(r"\S")
# the newline before the next line that starts a block (any of the four above),
BLOCK_LINE = re.compile(r"\n[^\S\n]{0,3}+(?=[-`~#*+\d])(?:`{3}|~{3}|#{1,6}[^\S\n]|[-*+][^\S\n]|\d{1,9}[.)][^\S\n])")
# the blanks after a newline (before one: the same in the reversed text), blank lines,
LEADING_BLANKS = re.compile(r"\n[^\S\n]++")
BLANK_LINES = re.compile(r"\n\n+")
# and a list's lines, each item's mark and the blanks after it.
LIST_LINES = {"ul": re.compile(r"(?:[^\S\n]{0,3}[-*+][^\S\n]+[^\n]*(?:\n|\Z))+"),
              "ol": re.compile(r"(?:[^\S\n]{0,3}\d{1,9}[.)][^\S\n]+[^\n]*(?:\n|\Z))+")}
LIST_MARKS = {"ul": re.compile(r"^[^\S\n]{0,3}[-*+][^\S\n]+", re.M),
              "ol": re.compile(r"^[^\S\n]{0,3}\d{1,9}[.)][^\S\n]+", re.M)}
# Code spans and links are cut out before emphasis, so `**` inside them stays literal.
# A span opens at a run of backticks and closes at the next run of the same length; a
# link is `[label](http(s)://target)`, its label running to the first `]`.
BACKTICKS = re.compile(r"`+")
LINK_TAIL = re.compile(r"\]\((https?://[^\s()<>]++)\)")
# Emphasis works on escaped text, in which ' and " cannot occur, and on many pieces of
# text at once: a newline or "\r" (none is left in the text) ends a piece. Each pair is
# the leftmost opener and the first closer after it with some text between. The marks
# after a line's last closer of a kind can open nothing: they are swapped for ' (an _,
# counted as a word character below) or " (a *) while the pairs are made, so an opener
# is never followed to the end of its line in vain.
STARS = r"[\w'*]"
KINDS = {
    "strong": {"*": (r"\*\*(?=\S)", r"(?<=\S)\*\*", r"\*\*(?=\S)"),
               "_": (r"__(?=\S)", r"(?<=\S)__", r"__(?=\S)")},
    "em": {"*": (rf"(?<!{STARS})\*(?=[^\s*])", rf"(?<=[^\s*])\*(?!{STARS})",
                 rf"(?<!{STARS})\*(?=[^\s*])"),
           "_": (r"(?<![\w_])_(?=[^\s_])", r"(?<=[^\s_])_(?![\w_])", r"(?<![\w_])_(?=[^\s_])")},
}
# (opener, closer, the closer read backwards) of each kind, the pair patterns of each
# set of live kinds, and each kind's dead marks: from a piece's start in the reversed
# text to its first reversed closer.
PAIRS, CLOSERS, REVERSED, DEAD = {}, {}, {}, {}
for _tag, _kinds in KINDS.items():
    for _mark, (_opener, _closer, _reversed) in _kinds.items():
        CLOSERS[_tag, _mark] = re.compile(_closer)
        REVERSED[_tag, _mark] = re.compile(_reversed)
        DEAD[_tag, _mark] = re.compile(
            rf"([\r\n])((?:[^\r\n{re.escape(_mark)}]++|(?!{_reversed}){re.escape(_mark)})*+)")
    # Group 1 is the opener (of stars, with both kinds live) and group 2 the text between.
    for _mark, (_opener, _closer, _reversed) in _kinds.items():
        PAIRS[_tag, (_mark,)] = re.compile(f"({_opener})([^\r\n]+?){_closer}")
    PAIRS[_tag, ("*", "_")] = re.compile(
        f"(?:({_kinds['*'][0]})|{_kinds['_'][0]})([^\r\n]+?)(?(1){_kinds['*'][1]}|{_kinds['_'][1]})")
SWAP = {"*": '"', "_": "'"}
PIECE_ENDS = re.compile(r"([\r\n])")
# Blanks (white space, no word character) that can stand in for "\r" in inline().
STAND_INS = "\x1c\x1d\x1e\x1f\x85\u2028\u2029\u3000\u2000\u2001\u2002\u2003"


def render(text, max_chars=RENDER_MAX_CHARS):
    """`text` as safe HTML (a Markup string); longer than `max_chars` (None: no bound),
    escaped and preformatted."""
    text = (text or "").replace("\r\n", "\n").replace("\r", "\n")
    if max_chars is not None and len(text) > max_chars:
        return Markup(f'<pre class="long-text">{_escape(text)}</pre>')
    html, pos = [], 0
    while True:
        found = NOT_BLANK.search(text, pos)
        if found is None:
            break
        start = text.rfind("\n", pos, found.start()) + 1 or pos
        end = text.find("\n", start)
        end = len(text) if end < 0 else end
        line = text[start:end]
        fence = FENCE.match(line)
        heading = None if fence else HEADING.match(line)
        if fence:
            pos = _code_block(text, end, fence, html)
        elif heading:
            level, title = heading.groups()
            html.append(f"<h{len(level)}>{_inline_lines(_heading_title(title))}</h{len(level)}>")
            pos = end + 1
        elif BULLET.match(line) or NUMBERED.match(line):
            pos = _list(text, start, "ol" if NUMBERED.match(line) else "ul", html)
        else:
            pos = _paragraphs(text, start, html)
        if pos > len(text):
            break
    return Markup("\n".join(html))


def inline(text):
    """One line (or paragraph) of inline Markdown as safe HTML; no construct spans lines."""
    if "\r" not in text:
        return Markup(_inline_lines(text))
    # "\r" ends a piece of text below: a blank the text does not hold stands in for it
    # (a text that holds them all has its "\r" read as line ends).
    stand_in = next((blank for blank in STAND_INS if blank not in text), None)
    if stand_in is None:
        return Markup(_inline_lines(text.replace("\r", "\n")))
    return Markup(_inline_lines(text.replace("\r", stand_in)).replace(stand_in, "\r"))


def _inline_lines(text):
    """Each line of `text` rendered inline (no construct spans lines), joined by newlines."""
    links = "](" in text and LINK_TAIL.search(text) is not None
    if "`" not in text and not links:
        return _emphasis(_escape(text))
    if not links:  # if every backtick run has one length, each pairs with the next
        widths = set(BACKTICKS.findall(text))
        if len(widths) == 1:
            return _even_spans(_escape(text), len(widths.pop()))
    # Code spans and links line by line; then emphasis on every line's pieces of text at once.
    lines = [_line_parts(line) for line in text.split("\n")]
    texts = _emphasis(_escape("\r".join([piece for parts in lines for piece in parts[0::2]])))
    texts, taken = texts.split("\r"), 0
    for parts in lines:
        count = (len(parts) + 1) // 2
        parts[0::2] = texts[taken:taken + count]
        taken += count
    return "\n".join(["".join(parts) for parts in lines])


@functools.lru_cache(maxsize=64)
def _span(width):
    """A code span of `width` backticks without backticks inside: its text, stripped."""
    run = f"(?<!`)`{{{width}}}(?!`)"
    return re.compile(rf"{run}[^\S\n]*+([^\s`]*+(?:[^\S\n]++[^\s`]++)*+)[^\S\n]*+{run}")


def _even_spans(safe, width):
    """Escaped text whose backtick runs all have `width`: each pairs with the next."""
    parts = _span(width).split(safe)  # text, span, text, ..., text
    if len(parts) == 1:
        return _emphasis(safe)
    parts[0::2] = _emphasis("\r".join(parts[0::2])).split("\r")
    parts[1::2] = ("<code>" + "</code>\r<code>".join(parts[1::2]) + "</code>").split("\r")
    return "".join(parts)


def _line_parts(text):
    """One line as text (even places, raw) between code spans and links (as HTML)."""
    runs = [(m.start(), m.end()) for m in BACKTICKS.finditer(text)] if "`" in text else []
    if len(runs) < 2 and "](" not in text:  # no code span and no link
        return [text]
    out, pos = [], 0
    closing = _closing_runs(runs)
    run, bracket = 0, text.find("[")
    while run < len(runs) or bracket >= 0:
        if run < len(runs) and (bracket < 0 or runs[run][0] < bracket):
            start, end = runs[run]
            close = closing[run]
            if close is None:  # no run of its length follows: the backticks are text
                run += 1
                continue
            out.append(text[pos:start])
            out.append(f"<code>{_escape(text[end:runs[close][0]].strip())}</code>")
            pos, run = runs[close][1], close + 1
        else:
            label_end = text.find("]", bracket + 1)
            tail = LINK_TAIL.match(text, label_end) if label_end > bracket + 1 else None
            if tail is None:  # every `[` before this `]` shares its label's end
                bracket = text.find("[", label_end + 1) if label_end >= 0 else -1
                continue
            out.append(text[pos:bracket])
            out.append(f'<a href="{_escape(tail.group(1))}" rel="nofollow noopener noreferrer">')
            out.append(text[bracket + 1:label_end])
            out.append("</a>")
            pos = tail.end()
            while run < len(runs) and runs[run][0] < pos:
                run += 1
        if bracket >= 0 and bracket < pos:
            bracket = text.find("[", pos)
    out.append(text[pos:])
    return out  # a link's label is text too, between its two tags


def _escape(text):
    """`text` escaped as markupsafe.escape does it (&, <, >, " and ')."""
    return (text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace('"', "&#34;").replace("'", "&#39;"))


def _closing_runs(runs):
    """For each backtick run, the index of the next run of its length, or None."""
    closing, after = [None] * len(runs), {}
    for index in range(len(runs) - 1, -1, -1):
        width = runs[index][1] - runs[index][0]
        closing[index] = after.get(width)
        after[width] = index
    return closing


def _emphasis(safe):
    """Escaped text (pieces ended by newlines or "\r") with its bold and italic pairs."""
    if "*" not in safe and "_" not in safe:
        return safe
    if "**" in safe or "__" in safe:
        safe = _pairs(safe, "strong")
    return _pairs(safe, "em")


def _pairs(safe, tag):
    """`safe` with each pair of `tag`'s delimiters around some text made a `tag`."""
    live = tuple(mark for mark in ("*", "_")
                 if mark in safe and CLOSERS[tag, mark].search(safe) is not None)
    if not live:
        return safe
    for mark in live:
        if safe.count("\n") + safe.count("\r") < 32:  # a few pieces, one by one
            safe = "".join(_dead_swapped(piece, tag, mark) for piece in PIECE_ENDS.split(safe))
            continue
        # Pieces read backwards: "\n" + text -> ..., end of a piece, its dead marks, the rest.
        parts = DEAD[tag, mark].split("\n" + safe[::-1])
        parts[2::3] = "\n".join(parts[2::3]).replace(mark, SWAP[mark]).split("\n")
        safe = "".join(parts)[:0:-1]
    # text, opener, between, text, ...: the pairs are written at once, not one by one.
    parts = PAIRS[tag, live].split(safe)
    pairs = len(parts) // 3
    if pairs:
        parts[1::3] = [f"<{tag}>"] * pairs
        parts[2::3] = f"</{tag}>\r".join(parts[2::3]).split("\r")
        parts[-2] += f"</{tag}>"
    return "".join(parts).replace('"', "*").replace("'", "_")


def _dead_swapped(piece, tag, mark):
    """One piece of text with its marks after its last closer of `mark` swapped."""
    if mark not in piece:
        return piece
    last = REVERSED[tag, mark].search(piece[::-1])  # its last closer, read backwards
    cut = len(piece) - last.start() if last else 0
    return piece[:cut] + piece[cut:].replace(mark, SWAP[mark]) if mark in piece[cut:] else piece


def _heading_title(title):
    """The heading's text without its closing #s and the blanks around them."""
    return title.rstrip().rstrip("#").rstrip()


def _code_block(text, end, fence, html):
    """The fenced block whose opening line ends at `end`; the position after it."""
    marker, lang = fence.group(1), fence.group(2)
    closing = _closing_fence(marker).search(text, end + 1)
    body = text[end + 1:closing.start() - 1] if closing else text[end + 1:]
    css = f' class="language-{_escape(lang)}"' if lang else ""
    html.append(f"<pre><code{css}>{_escape(body)}</code></pre>")
    if closing is None:
        return len(text) + 1
    after = text.find("\n", closing.start())
    return len(text) + 1 if after < 0 else after + 1


@functools.lru_cache(maxsize=64)
def _closing_fence(marker):
    """A line that starts with `marker` once its leading blanks are left out."""
    return re.compile(r"^[^\S\n]*" + re.escape(marker), re.M)


def _list(text, start, tag, html):
    """The list whose first item starts at `start`; the position after it."""
    block = LIST_LINES[tag].match(text, start)
    items = LIST_MARKS[tag].sub("", block.group().removesuffix("\n"))
    html.append(f"<{tag}><li>{_inline_lines(items).replace(chr(10), '</li><li>')}</li></{tag}>")
    return block.end()


def _paragraphs(text, start, html):
    """The paragraphs (and blank lines) from `start` to the next line that starts a block;
    the position of that line. Their lines are rendered at once: a line's blanks at its
    ends are kept as they are by inline rendering, and are then stripped."""
    found = BLOCK_LINE.search(text, start)
    end = found.start() if found else len(text)
    body = _inline_lines(text[start:end])
    if "\n" in body:
        body = LEADING_BLANKS.sub("\n", LEADING_BLANKS.sub("\n", body[::-1])[::-1])
        body = BLANK_LINES.sub("\r", body.strip()).replace("\n", "<br>").replace("\r", "</p>\n<p>")
    else:
        body = body.strip()
    html.append(f"<p>{body}</p>")
    return end + 1
