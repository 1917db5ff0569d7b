"""A small, safe Markdown subset for agent text: escape first, then add a few tags.

Every character of the input is HTML-escaped before any tag is added, and the only
tags this module writes are its own: paragraphs (single newlines kept as <br>),
headings, bullet and numbered lists, fenced code blocks, `code spans`, **bold**,
*italic* / _italic_, and [links](https://...) whose target is http or https.
Anything else (raw HTML, images, javascript: links) stays visible as text.

Agent text is hostile input, so rendering is linear in its length: no pattern
here can backtrack over a run of characters, and each construct's closing mark
is looked for once per opening (a backtick run without a closing run of its
length is text, as in CommonMark).
"""
import re

from markupsafe import Markup
from markupsafe import escape

FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})\s*([\w+#.-]*)")
# A heading's title is what is left once closing #s and blanks are stripped from its end.
HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*)$")
BULLET = re.compile(r"^\s{0,3}[-*+]\s+(.*)$")
NUMBERED = re.compile(r"^\s{0,3}\d{1,9}[.)]\s+(.*)$")
# A line any of the four above matches: it ends a paragraph.
BLOCK_START = re.compile(r"\s{0,3}(?:`{3}|~{3}|#{1,6}\s|[-*+]\s|\d{1,9}[.)]\s)")
# Code spans and links are cut out before emphasis, so `**` inside them stays literal.
# A span opens at a run of backticks and closes at the next run of the same length; a
# link is `[label](http(s)://target)`, its label running to the first `]`.
BACKTICKS = re.compile(r"`+")
LINK_TAIL = re.compile(r"\]\((https?://[^\s()<>]++)\)")
# Emphasis, kind -> (opener, closer): each pair is the leftmost opener and the first
# closer after it with some text between, as a lazy pattern would pair them. A closer
# is looked for once per opener, so an opener with none ends that kind for the line
# (no later opener has one either): each character is read a bounded number of times.
MARKS = {"stars": "*", "unders": "_"}
# (a star in the text, an underscore in it) -> the kinds worth looking for.
LIVE = {(True, True): ("stars", "unders"), (True, False): ("stars",),
        (False, True): ("unders",), (False, False): ()}
BOLD = {"stars": (r"\*\*(?=\S)", re.compile(r"(?<=\S)\*\*")),
        "unders": (r"__(?=\S)", re.compile(r"(?<=\S)__"))}
ITALIC = {"stars": (r"(?<![\w*])\*(?=[^\s*])", re.compile(r"(?<=[^\s*])\*(?![\w*])")),
          "unders": (r"(?<![\w_])_(?=[^\s_])", re.compile(r"(?<=[^\s_])_(?![\w_])"))}


def render(text):
    """`text` as safe HTML (a Markup string)."""
    lines = (text or "").replace("\r\n", "\n").replace("\r", "\n").split("\n")
    html, i = [], 0
    while i < len(lines):
        line = lines[i]
        fence = FENCE.match(line)
        if fence:
            i = _code_block(lines, i, fence, html)
        elif not line.strip():
            i += 1
        elif HEADING.match(line):
            level, title = HEADING.match(line).groups()
            html.append(f"<h{len(level)}>{_inline_line(_heading_title(title))}</h{len(level)}>")
            i += 1
        elif BULLET.match(line) or NUMBERED.match(line):
            i = _list(lines, i, html)
        else:
            i = _paragraph(lines, i, html)
    return Markup("\n".join(html))


def inline(text):
    """One line (or paragraph) of inline Markdown as safe HTML; no construct spans lines."""
    if "\n" not in text:
        return Markup(_inline_line(text))
    return Markup("\n".join(_inline_line(line) for line in text.split("\n")))


def _inline_line(text):
    runs = [(m.start(), m.end()) for m in BACKTICKS.finditer(text)] if "`" in text else []
    if len(runs) < 2 and "](" not in text:  # no code span and no link
        return _emphasis(text)
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
            out.append(_emphasis(text[pos:start]))
            out.append(f"<code>{escape(text[end:runs[close][0]].strip())}</code>")
            pos, run = runs[close][1], close + 1
        else:
            label_end = text.find("]", bracket + 1)
            tail = LINK_TAIL.match(text, label_end) if label_end > bracket + 1 else None
            if tail is None:  # every `[` before this `]` shares its label's end
                bracket = text.find("[", label_end + 1) if label_end >= 0 else -1
                continue
            out.append(_emphasis(text[pos:bracket]))
            out.append(f'<a href="{escape(tail.group(1))}" rel="nofollow noopener noreferrer">'
                       f"{_emphasis(text[bracket + 1:label_end])}</a>")
            pos = tail.end()
            while run < len(runs) and runs[run][0] < pos:
                run += 1
        if bracket >= 0 and bracket < pos:
            bracket = text.find("[", pos)
    out.append(_emphasis(text[pos:]))
    return "".join(out)


def _closing_runs(runs):
    """For each backtick run, the index of the next run of its length, or None."""
    closing, after = [None] * len(runs), {}
    for index in range(len(runs) - 1, -1, -1):
        width = runs[index][1] - runs[index][0]
        closing[index] = after.get(width)
        after[width] = index
    return closing


def _emphasis(text):
    safe = str(escape(text))
    if "*" not in safe and "_" not in safe:
        return safe
    if "**" in safe or "__" in safe:
        safe = _pairs(safe, BOLD, "strong")
    return _pairs(safe, ITALIC, "em")


def _pairs(text, kinds, tag):
    """`text` with each pair of `kinds`' delimiters around some text made a `tag`."""
    live = LIVE[MARKS["stars"] in text, MARKS["unders"] in text]
    out, pos, openers = [], 0, kinds["openers"]
    while live:
        opener = openers[live].search(text, pos)
        if opener is None:
            break
        kind = opener.lastgroup
        closer = kinds[kind][1].search(text, opener.end() + 1)
        if closer is None:
            live = tuple(name for name in live if name != kind)
            continue
        out.append(text[pos:opener.start()])
        out.append(f"<{tag}>{text[opener.end():closer.start()]}</{tag}>")
        pos = closer.end()
    if not out:
        return text
    out.append(text[pos:])
    return "".join(out)


def _with_openers(kinds):
    """`kinds` with "openers": for each tuple of live kinds, one pattern of their openers."""
    return {**kinds, "openers": {
        live: re.compile("|".join(f"(?P<{name}>{kinds[name][0]})" for name in live))
        for live in LIVE.values() if live}}


BOLD, ITALIC = _with_openers(BOLD), _with_openers(ITALIC)


def _heading_title(title):
    """The heading's text without its closing #s and the blanks around them."""
    return title.rstrip().rstrip("#").rstrip()


def _code_block(lines, i, fence, html):
    marker, lang = fence.group(1), fence.group(2)
    body, i = [], i + 1
    while i < len(lines) and not lines[i].strip().startswith(marker):
        body.append(lines[i])
        i += 1
    css = f' class="language-{escape(lang)}"' if lang else ""
    html.append(f"<pre><code{css}>{escape(chr(10).join(body))}</code></pre>")
    return i + 1  # past the closing fence (or the end of the text)


def _list(lines, i, html):
    numbered = bool(NUMBERED.match(lines[i])) and not BULLET.match(lines[i])
    pattern, tag = (NUMBERED, "ol") if numbered else (BULLET, "ul")
    items = []
    while i < len(lines) and pattern.match(lines[i]):
        items.append(f"<li>{_inline_line(pattern.match(lines[i]).group(1))}</li>")
        i += 1
    html.append(f"<{tag}>{''.join(items)}</{tag}>")
    return i


def _paragraph(lines, i, html):
    body = []
    while i < len(lines):
        line = lines[i].strip()
        if not line or BLOCK_START.match(lines[i]):
            break
        body.append(_inline_line(line))
        i += 1
    html.append(f"<p>{'<br>'.join(body)}</p>")
    return i
