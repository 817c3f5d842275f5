"""The Markdown view's renderer (web/markdown_view.js: markdown-it, DOMPurify, KaTeX, served from
node_modules under the page's CSP) and the page Markdown it is given (web/result_markdown.js, from
the result JSON), run in the real browser: hostile result text never runs or styles anything,
tables (spanning cells too), formulas and code render, and furniture is left out."""
from __future__ import annotations

import pytest
from playwright.sync_api import Page

from web_harness import page_problems, assert_web_libraries

pytestmark = pytest.mark.slow

HOSTILE = "\n\n".join([
    "<script>window.pwned = 1</script>",
    "<img src=x onerror=\"window.pwned = 2\">",
    "[click](javascript:window.pwned=3) and [quote](https://example.org/\"onmouseover=\"window.pwned=4)",
    "![x](https://tracker.example/pixel.png) ![y](figures/../../secret.png)",
    "<a href=\"javascript:window.pwned=5\">raw link</a> <b onclick=\"window.pwned=6\">bold</b>",
    "| a | <svg onload=window.pwned=7> |\n|---|---|\n| <iframe src=//evil> | 2 |",
    "<p id=\"result-error\" style=\"color:red\" name=\"x\">shadow</p><style>body{display:none}</style>",
    "<form action=\"//evil\"><input name=q><button>go</button></form>",
    "```\n</code></pre><script>window.pwned=8</script>\n```",
    "$$\n</div><img src=x onerror=window.pwned=9>\n$$",
    "$\\href{javascript:window.pwned=10}{x}$",
])

# Renders `source` with the page's own renderer into a box on the page, and reports what came of it.
RENDER = """async (source) => {
  const { loadRenderer } = await import('/web/markdown_view.js');
  const render = await loadRenderer();
  const box = document.createElement('div');
  box.className = 'markdown';
  box.append(render(source));
  document.body.append(box);
  await new Promise((resolve) => setTimeout(resolve, 150));   // give any smuggled handler a chance to run
  const all = [...box.querySelectorAll('*')].filter((node) => !node.closest('.katex'));
  const result = {
    tags: [...new Set(all.map((node) => node.tagName.toLowerCase()))].sort(),
    attributes: [...new Set(all.flatMap((node) => [...node.attributes].map((a) => a.name)))].sort(),
    text: box.textContent, pwned: window.pwned ?? null,
    links: [...box.querySelectorAll('a')].map((a) => [a.getAttribute('href'), a.getAttribute('rel')]),
    figures: [...box.querySelectorAll('img')].map((img) => [img.getAttribute('src'), img.dataset.figure]),
    math: [...box.querySelectorAll('[data-math]')].map((node) => ({
      kind: node.dataset.math, tex: node.getAttribute('title'), katex: Boolean(node.querySelector('.katex')),
      mathml: Boolean(node.querySelector('math')), error: Boolean(node.querySelector('.katex-error')) })),
    html: box.innerHTML,
  };
  box.remove();
  return result;
}"""

PAGE_MARKDOWN = """async (page) => {
  const { pageParts } = await import('/web/result_markdown.js');
  return pageParts(page);
}"""


@pytest.fixture
def blank(api, page: Page) -> Page:
    assert_web_libraries()
    page.goto(f"{api.base_url}/")
    return page


def test_hostile_markdown_stays_harmless(blank: Page):
    out = blank.evaluate(RENDER, HOSTILE)
    assert out["pwned"] is None
    assert not set(out["tags"]) & {"script", "iframe", "svg", "style", "form", "input", "button"}, out["tags"]
    assert not [name for name in out["attributes"] if name.startswith("on") or name in ("style", "id", "name",
                                                                                        "src")], out["attributes"]
    assert out["links"] == [['https://example.org/%22onmouseover=%22window.pwned=4', "noopener noreferrer nofollow"]]
    assert "[image: x]" in out["text"] and "[image: y]" in out["text"]   # only the job's own figures are images
    assert "raw link" in out["text"] and "shadow" in out["text"]          # the text stays, the markup goes
    assert "</code></pre><script>window.pwned=8</script>" in out["text"]   # code is text
    assert [m["kind"] for m in out["math"]] == ["display", "inline"]
    assert all(m["katex"] or m["error"] for m in out["math"])
    assert not blank.locator("p#result-error", has_text="shadow").count()
    # Chromium reports the CSP refusing the hostile styles and handlers while the sanitiser's inert
    # document parses them (a second line of defence); nothing else went wrong.
    refused = "violates the following Content Security Policy directive"
    assert [problem for problem in page_problems(blank) if refused not in problem] == []


def test_tables_formulas_and_code_render(blank: Page):
    source = "\n\n".join([
        "# Results",
        "| Item | Count |\n|:-----|------:|\n| Lamps | 3 |",
        '<table><tr><th rowspan="2">Region</th><th colspan="2">Sales</th></tr>'
        "<tr><td>2025</td><td>2026</td></tr></table>",
        "Energy is $E = mc^2$, and a price of $5 and $10 is not math; \\$x\\$ neither.",
        "$$\n\\int_0^1 x^2\\,dx = \\frac{1}{3}\n$$",
        "```r\n> x\n     [,1] [,2]\n[1,]    1    3\n```",
        "- one\n- two *three*",
        "![figure](figures/p1-r4.png)",
    ])
    out = blank.evaluate(RENDER, source)
    html = out["html"]
    assert "<h3>Results</h3>" in html   # "#" under the page's own headings
    assert '<th class="align-right">Count</th>' in html and '<td class="align-right">3</td>' in html
    assert '<th rowspan="2">Region</th><th colspan="2">Sales</th>' in html   # spans pass the sanitiser
    assert [(m["kind"], m["tex"]) for m in out["math"]] == [
        ("inline", "E = mc^2"), ("display", "\\int_0^1 x^2\\,dx = \\frac{1}{3}")]
    assert all(m["katex"] and m["mathml"] and not m["error"] for m in out["math"])   # drawn, and readable
    assert "a price of $5 and $10 is not math; $x$ neither." in out["text"]
    assert '<pre><code class="language-r">&gt; x\n     [,1] [,2]\n[1,]    1    3\n</code></pre>' in html
    assert "<ul>\n<li>one</li>\n<li>two <em>three</em></li>\n</ul>" in html
    assert out["figures"] == [[None, "p1-r4.png"]]   # fetched with the key by the result view, not by src
    assert page_problems(blank) == []


def test_katex_fonts_load_under_the_policy(blank: Page):
    blank.evaluate(RENDER, "$$\\sum_{i=1}^n i$$")
    blank.evaluate("""async () => {
      const { loadRenderer } = await import('/web/markdown_view.js');
      const box = document.createElement('div');
      box.append((await loadRenderer())('$$\\\\mathcal{L} = \\\\sum_i x_i$$'));
      document.body.append(box);
      await document.fonts.ready;
    }""")
    loaded = blank.evaluate("[...document.fonts].filter((f) => f.status === 'loaded').map((f) => f.family)")
    assert "KaTeX_Main" in loaded and "KaTeX_Caligraphic" in loaded, loaded
    assert page_problems(blank) == []   # no font refused by font-src


def region(index, text, **fields):
    lines = [{"bbox": [0, 0, 10, 10], "text": line, "confidence": None, "low_confidence": False, "layer_text": None}
             for line in text.split("\n")]
    return {"reading_index": index, "label": "text", "task": "text", "role": "body", "bbox": [0, 0, 10, 10],
            "text": text, "status": "ok", "source": "text_layer", "reason": None, "lines": lines, "figure": None,
            "blocks": [], "text_layer_check": None, **fields}


def test_page_markdown_leaves_furniture_out(blank: Page):
    page = {"page": 21, "state": "done", "regions": [
        region(0, "Chapter 5: Arrays and matrices", label="header", role="header"),
        region(1, "21", role="header"),
        region(2, "5.3 Index matrices", label="title", blocks=[{"type": "heading", "text": "5.3 Index matrices",
                                                                  "level": 3, "lines": [0]}]),
        region(3, "> x <- 1\n> y <- 2", blocks=[{"type": "code", "text": "> x <- 1", "lines": [0], "language": "r"}]),
        region(4, "> y <- 2", blocks=[{"type": "code", "text": "   > y <- 2", "lines": [0]}]),
        region(5, "Figure 1: A plot", label="figure_caption",
               blocks=[{"type": "caption", "text": "Figure 1: A plot", "lines": [0], "caption_of": 6}]),
        region(6, "", label="figure", task="skip", figure="p21-r7.png"),
        region(7, "", label="table", task="table", status="failed", reason="the recogniser timed out"),
        region(8, "4. four\n5. five", blocks=[{"type": "list", "text": "", "ordered": True, "items": [
            {"marker": "4.", "text": "four", "lines": [0], "depth": 0},
            {"marker": "(a)", "text": "nested", "lines": [1], "depth": 1}]}]),
        region(9, "E = mc^2", label="equation", task="formula",
               blocks=[{"type": "equation", "text": "E = mc^2", "lines": [0], "number": "3"}]),
        region(10, "Page 21", label="footer", role="footer"),
    ]}
    parts = blank.evaluate(PAGE_MARKDOWN, page)
    assert parts == [
        {"markdown": "### 5.3 Index matrices"},
        {"markdown": "```r\n> x <- 1\n   > y <- 2\n```"},   # a listing the layout cut in two is one block
        {"markdown": "![figure](figures/p21-r7.png)"},
        {"markdown": "*Figure 1: A plot*"},                 # the caption after its figure
        {"note": "Region 8 (table) could not be read: the recogniser timed out", "warning": True},
        {"markdown": "4. four\n    - (a) nested"},
        {"markdown": "$$\nE = mc^2 \\tag{3}\n$$"},
    ]
    texts = [part.get("markdown", part.get("note")) for part in parts]
    assert not [text for text in texts if "Chapter 5" in text or text.strip() in ("21", "Page 21")]
