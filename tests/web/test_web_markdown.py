"""The page's Markdown renderer (web/markdown.js), run in the real browser:
hostile result text stays text, and result Markdown renders as it should."""
from __future__ import annotations

import pytest
from playwright.sync_api import Page

pytestmark = pytest.mark.slow

HOSTILE = "\n\n".join([
    "<script>window.pwned = 1</script>",
    "<img src=x onerror=\"window.pwned = 2\">",
    "[click](javascript:window.pwned=3) and [quote](https://example.org/\"onmouseover=\"window.pwned=4)",
    "![x](https://tracker.example/pixel.png) ![y](figures/../../secret.png)",
    "`<b>code</b>` **<i>bold</i>** _<u>em</u>_",
    "| a | <svg onload=window.pwned=5> |\n|---|---|\n| <iframe src=//evil> | 2 |",
    "<!-- region 3 (table) could not be read: --><script>window.pwned=6</script> -->",
    "```\n</code></pre><script>window.pwned=7</script>\n```",
    "$$\n</pre><img src=x onerror=window.pwned=8>\n$$",
])

RENDER = """async (source) => {
  const { renderMarkdown } = await import('/web/markdown.js');
  const box = document.createElement('div');
  box.innerHTML = renderMarkdown(source);
  document.body.append(box);
  await new Promise((resolve) => setTimeout(resolve, 100));   // give any smuggled handler a chance to run
  const handlers = [...box.querySelectorAll('*')].flatMap((node) =>
      [...node.attributes].filter((a) => a.name.startsWith('on') || /javascript:/i.test(a.value)).map((a) => a.name));
  const result = {
    tags: [...new Set([...box.querySelectorAll('*')].map((node) => node.tagName.toLowerCase()))].sort(),
    handlers, text: box.textContent, pwned: window.pwned ?? null,
    links: [...box.querySelectorAll('a')].map((a) => a.getAttribute('href')),
    figures: [...box.querySelectorAll('img')].map((img) => [img.getAttribute('src'), img.dataset.figure]),
    html: box.innerHTML,
  };
  box.remove();
  return result;
}"""


@pytest.fixture
def blank(api, page: Page) -> Page:
    page.goto(f"{api.base_url}/")
    return page


def test_hostile_markdown_stays_text(blank: Page):
    out = blank.evaluate(RENDER, HOSTILE)
    assert out["pwned"] is None
    assert out["handlers"] == []
    assert not set(out["tags"]) & {"script", "iframe", "svg", "img", "b", "i", "u"}, out["tags"]
    assert "<script>window.pwned = 1</script>" in out["text"]
    assert '<img src=x onerror="window.pwned = 2">' in out["text"]
    assert "<b>code</b>" in out["text"] and "<i>bold</i>" in out["text"]
    assert out["links"] == ['https://example.org/"onmouseover="window.pwned=4']   # one attribute, quote and all
    assert "[image: x]" in out["text"] and "[image: y]" in out["text"]   # only the job's own figures are images


def test_result_markdown_renders(blank: Page):
    source = "\n\n".join([
        "<!-- page 1 -->", "## Quarterly Report", "Alpha page number 1",
        "<!-- header: ACME Corp -->", "$$\nE = mc^2\n$$", "![figure](figures/p1-r4.png)",
        "| Item | Count |\n|:-----|------:|\n| Lamps | 3 |", "- one\n- two *three*",
        "<!-- region 5 (text) could not be read: the recogniser timed out -->", "<!-- page 2 -->",
    ])
    out = blank.evaluate(RENDER, source)
    html = out["html"]
    assert '<p class="md-page-mark" role="separator">Page 1</p>' in html
    assert "<h4>Quarterly Report</h4>" in html
    assert "<p>Alpha page number 1</p>" in html
    assert '<p class="md-note">header: ACME Corp</p>' in html
    assert '<pre class="md-formula" aria-label="formula">E = mc^2</pre>' in html
    assert out["figures"] == [[None, "p1-r4.png"]]   # fetched with the key by the result view, not by src
    assert '<th class="align-right">Count</th>' in html and '<td class="align-right">3</td>' in html
    assert "<ul><li>one</li><li>two <em>three</em></li></ul>" in html
    assert '<p class="md-note md-warning">region 5 (text) could not be read: the recogniser timed out</p>' in html
    assert html.count("md-page-mark") == 2


def test_structured_result_markdown_renders(blank: Page):
    """What workers.document_result makes from blocks: numbered lists that go on from a page before,
    nested items, fenced code that holds a fence, kept line breaks, captions."""
    source = "\n\n".join([
        "4. four\n5. five\n    - (a) nested *a*\n    - (b) nested b\n6. six",
        "````r\n> x <- c(1, 2)\n```\n  }\n````",
        "Lars Thorväld  \nThe Thorvald Group",
        "*Figure 1: A caption.*",
        "- one\n- two",
    ])
    html = blank.evaluate(RENDER, source)["html"]
    assert '<ol start="4"><li>four</li><li>five<ul><li>(a) nested <em>a</em></li><li>(b) nested b</li></ul></li>' \
           "<li>six</li></ol>" in html
    assert "<pre><code>&gt; x &lt;- c(1, 2)\n```\n  }</code></pre>" in html
    assert "<p>Lars Thorväld<br>The Thorvald Group</p>" in html
    assert "<p><em>Figure 1: A caption.</em></p>" in html
    assert "<ul><li>one</li><li>two</li></ul>" in html
