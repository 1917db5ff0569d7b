"""A small, safe Markdown subset for agent text: escape first, then add a few tags.

Every character of the input is HTML-escaped before any tag is added, and the only
tags this module writes are its own: paragraphs (single newlines kept as <br>),
headings, bullet and numbered lists, fenced code blocks, `code spans`, **bold**,
*italic* / _italic_, and [links](https://...) whose target is http or https.
Anything else (raw HTML, images, javascript: links) stays visible as text.
"""
import re

from markupsafe import Markup
from markupsafe import escape

FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})\s*([\w+#.-]*)")
HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
BULLET = re.compile(r"^\s{0,3}[-*+]\s+(.*)$")
NUMBERED = re.compile(r"^\s{0,3}\d{1,9}[.)]\s+(.*)$")
# Code spans and links are cut out before emphasis, so `**` inside them stays literal.
INLINE = re.compile(r"(`+)(.+?)\1|\[([^\]\n]+)\]\((https?://[^\s()<>]+)\)")
BOLD = re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*|__(?=\S)(.+?)(?<=\S)__")
ITALIC = re.compile(r"(?<![\w*])\*(?=[^\s*])(.+?)(?<=[^\s*])\*(?![\w*])"
                    r"|(?<![\w_])_(?=[^\s_])(.+?)(?<=[^\s_])_(?![\w_])")


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
            html.append(f"<h{len(level)}>{inline(title)}</h{len(level)}>")
            i += 1
        elif BULLET.match(line) or NUMBERED.match(line):
            i = _list(lines, i, html)
        else:
            i = _paragraph(lines, i, html)
    return Markup("\n".join(html))


def inline(text):
    """One line (or paragraph) of inline Markdown as safe HTML."""
    out, pos = [], 0
    for match in INLINE.finditer(text):
        out.append(_emphasis(text[pos:match.start()]))
        if match.group(1):
            out.append(f"<code>{escape(match.group(2).strip())}</code>")
        else:
            label, url = match.group(3), match.group(4)
            out.append(f'<a href="{escape(url)}" rel="nofollow noopener noreferrer">'
                       f"{_emphasis(label)}</a>")
        pos = match.end()
    out.append(_emphasis(text[pos:]))
    return Markup("".join(out))


def _emphasis(text):
    safe = str(escape(text))
    safe = BOLD.sub(lambda m: f"<strong>{m.group(1) or m.group(2)}</strong>", safe)
    return ITALIC.sub(lambda m: f"<em>{m.group(1) or m.group(2)}</em>", safe)


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
        items.append(f"<li>{inline(pattern.match(lines[i]).group(1))}</li>")
        i += 1
    html.append(f"<{tag}>{''.join(items)}</{tag}>")
    return i


def _paragraph(lines, i, html):
    body = []
    while (i < len(lines) and lines[i].strip() and not FENCE.match(lines[i])
           and not HEADING.match(lines[i]) and not BULLET.match(lines[i])
           and not NUMBERED.match(lines[i])):
        body.append(str(inline(lines[i].strip())))
        i += 1
    html.append(f"<p>{'<br>'.join(body)}</p>")
    return i
