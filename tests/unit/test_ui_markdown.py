"""The viewer's Markdown subset: escape everything first, then a few constructs."""
import re

import pytest

from app.ui.markdown import RENDER_MAX_CHARS
from app.ui.markdown import inline
from app.ui.markdown import render


@pytest.mark.parametrize("source", [
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    '" onmouseover="alert(1)',
    "`<script>`",
    "**<b>bold</b>**",
    "[x](https://example.com/\"><script>alert(1)</script>)",
])
def test_markup_in_the_text_stays_text(source):
    html = str(render(source))
    assert set(re.findall(r"</?(\w+)", html)) <= {"p", "code", "strong", "a"}
    outside_links = re.sub(r'<a href="[^"<>]*" rel="nofollow noopener noreferrer">', "", html)
    assert '"' not in outside_links  # no attribute of the agent's own


def test_paragraphs_keep_single_newlines_as_breaks():
    assert str(render("one\ntwo\n\nthree")) == "<p>one<br>two</p>\n<p>three</p>"


def test_code_spans_and_fences_keep_their_contents_literal():
    assert str(inline("run `a **b** <c>`")) == "run <code>a **b** &lt;c&gt;</code>"
    html = str(render("```python\nif a < b:\n    print('**')\n```"))
    assert html == ('<pre><code class="language-python">if a &lt; b:\n'
                    "    print(&#39;**&#39;)</code></pre>")


def test_an_unclosed_fence_runs_to_the_end():
    assert str(render("```\nx < y")) == "<pre><code>x &lt; y</code></pre>"


def test_bold_and_italic():
    assert str(inline("**b** *i* _u_ __s__")) == (
        "<strong>b</strong> <em>i</em> <em>u</em> <strong>s</strong>")
    assert str(inline("snake_case_name and 2*3*4")) == "snake_case_name and 2*3*4"


def test_links_only_for_http_and_https():
    assert str(inline("[docs](https://x.org/a?b=1&c=2)")) == (
        '<a href="https://x.org/a?b=1&amp;c=2" rel="nofollow noopener noreferrer">docs</a>')
    for target in ("javascript:alert(1)", "data:text/html,x", "//evil.org", "ftp://x"):
        html = str(inline(f"[x]({target})"))
        assert "<a " not in html, html


def test_headings_and_lists():
    html = str(render("# Plan\n- one\n- **two**\n\n1. first\n2. second"))
    assert html == ("<h1>Plan</h1>\n<ul><li>one</li><li><strong>two</strong></li></ul>\n"
                    "<ol><li>first</li><li>second</li></ol>")


def test_empty_text_renders_nothing():
    assert str(render("")) == ""
    assert str(render(None)) == ""


# The renderer works on whole blocks at once; these outputs are the line-by-line
# renderer's, which it must keep (tests/unit/test_hostile_text.py has the timings).
@pytest.mark.parametrize(("source", "html"), [
    ("a* *b* *c\n*d* e*", "<p>a* <em>b</em> *c<br><em>d</em> e*</p>"),
    ("it's *a \"b\"* and _c'_",
     "<p>it&#39;s <em>a &#34;b&#34;</em> and <em>c&#39;</em></p>"),
    ("`a` *b* `c`\n`d *e` f*",
     "<p><code>a</code> <em>b</em> <code>c</code><br><code>d *e</code> f*</p>"),
    ("  one  \n\ttwo *x*\n\n\n three\n", "<p>one<br>two <em>x</em></p>\n<p>three</p>"),
    ("x *a\ry* z", "<p>x *a<br>y* z</p>"),
    ("a_b_ _c_ *d*_", "<p>a_b_ <em>c</em> *d*_</p>"),
    ("**a *b* c** and *d **e** f*",
     "<p><strong>a <em>b</em> c</strong> and <em>d <strong>e</strong> f</em></p>"),
    ("- `a` *b*\n- c_\n1. d",
     "<ul><li><code>a</code> <em>b</em></li><li>c_</li></ul>\n<ol><li>d</li></ol>"),
])
def test_blocks_rendered_whole_keep_each_line_apart(source, html):
    assert str(render(source)) == html


def test_inline_keeps_a_carriage_return_inside_a_pair():
    assert str(inline("x *a\ry* z")) == "x <em>a\ry</em> z"


def test_a_text_past_the_bound_is_shown_escaped_and_preformatted():
    text = "<b>**a**</b>\n" * (RENDER_MAX_CHARS // 13 + 1)
    html = str(render(text))
    assert html == '<pre class="long-text">' + "&lt;b&gt;**a**&lt;/b&gt;\n" * (
        RENDER_MAX_CHARS // 13 + 1) + "</pre>"
    assert str(render(text[:RENDER_MAX_CHARS])).startswith("<p>&lt;b&gt;<strong>a</strong>")
