r"""Math facts: does a formula the system wrote render like the page's formula?

Candidates are the delimited formulas of the system's Markdown: `$$...$$`, `\[...\]`, `$...$`
and `\(...\)`, outside fenced code blocks and code spans (the AMS guide and testmath print their
LaTeX source in listings: a transcribed listing is not a formula). A plain-text output (Tesseract's) holds none, so its math facts fail unless it
happens to print a delimited formula.

A candidate passes when either
1. its LaTeX equals the fact's after `normalise_latex` (spacing commands, `\left`/`\right`,
   `\displaystyle`, tags and labels, braces around a single token and a final `.`/`,` dropped;
   `\dfrac`/`\tfrac` -> `\frac`; whitespace removed), or
2. its KaTeX render matches the reference's symbol by symbol in relative position: both are
   rendered by KaTeX (node_modules/katex, display mode) in headless Chromium at 40 px; each
   rendered character is a glyph (its text, the left and bottom of its box and its height, in
   em of the 40 px base); the reference's glyph texts must occur as a contiguous run of the
   candidate's (in KaTeX's DOM order; `-` and U+2212, `|` and `\mid`, `*` and `\ast` are one
   symbol each), and along the run every step from one glyph to the next must agree with the
   reference's step within TOLERANCE_EM (0.3 em) in x and in y, and every glyph's height within
   25%. Relative steps, not absolute positions, so a missing thin space shifts the rest of a long
   formula without failing it. A delimiter's size is free (`(` and `\left(` around a fraction are
   the same symbol): a step to or from a delimiter is compared in x only, within 0.6 em, and its
   height not at all. A final `.`, `,` or `;` (the sentence's) is left out of both renders.
   Rules and SVG parts (fraction bars, radical signs, stretched delimiters) are not glyphs; a
   fraction still differs from an inline product by where its glyphs sit.
"""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
KATEX_DIST = ROOT / "node_modules" / "katex" / "dist"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
TOLERANCE_EM = 0.3
HEIGHT_RATIO = 1.25
BASE_PX = 40

_DELIMITED = re.compile(r"\$\$(.+?)\$\$|\\\[(.+?)\\\]|(?<![\\$])\$(?!\s)([^$\n]+?)(?<!\s)\$(?!\$)|\\\((.+?)\\\)",
                        re.S)


_CODE = re.compile(r"^[ \t]*(```|~~~).*?^[ \t]*\1[^\n]*$|`[^`\n]+`", re.M | re.S)


def candidates(markdown: str) -> list[str]:
    """The formulas a system's Markdown delimits, in order; not in code blocks or code spans, where a
    page's printed LaTeX source (a package guide's listings) is text, not a formula."""
    prose = _CODE.sub(" ", markdown)
    return [next(group for group in match.groups() if group is not None).strip()
            for match in _DELIMITED.finditer(prose)]


_DROP = re.compile(r"\\(?:left|right|(?:big|Big|bigg|Bigg)[lrm]?)(?![a-zA-Z])|\\displaystyle|\\textstyle|\\nonumber|\\notag"
                   r"|\\(?:tag|label)\*?\{[^{}]*\}|\\[,;:!> ]|\\q?quad(?![a-zA-Z])|~")
_SINGLE = re.compile(r"\{(\\[a-zA-Z]+|[^{}\\])\}")


def normalise_latex(latex: str) -> str:
    text = _DROP.sub("", latex)
    text = re.sub(r"\\[dt]frac(?![a-zA-Z])", r"\\frac", text)
    text = re.sub(r"\\(?:begin|end)\{(?:equation|align|gather|displaymath)\*?\}", "", text)
    text = re.sub(r"\s+", "", text)
    previous = None
    while previous != text:
        previous, text = text, _SINGLE.sub(r"\1", text)
    return text.rstrip(".,;")


_PAGE = """<!doctype html><html><head><meta charset="utf-8">
<link rel="stylesheet" href="{css}"><script src="{js}"></script>
<style>body {{ font-size: {px}px; margin: 0 }} .box {{ display: inline-block; padding: 10px }}</style>
</head><body><div id="host"></div></body></html>"""

# Renders each LaTeX string into its own box and returns its glyphs, or an error string.
_RENDER_JS = """(items) => items.map((latex) => {
  const host = document.getElementById('host');
  host.innerHTML = '';
  const box = document.createElement('div'); box.className = 'box'; host.appendChild(box);
  try { katex.render(latex, box, {displayMode: true, throwOnError: true, strict: 'ignore', trust: false}); }
  catch (e) { return String(e.message || e); }
  const root = box.querySelector('.katex-html'); if (!root) return 'no katex-html';
  const origin = root.getBoundingClientRect(); const em = parseFloat(getComputedStyle(document.body).fontSize);
  const glyphs = []; const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const text = node.textContent;
    for (let i = 0; i < text.length; i++) {
      if (!text[i].trim() || text[i] === '\\u200b') continue;
      const range = document.createRange(); range.setStart(node, i); range.setEnd(node, i + 1);
      const r = range.getBoundingClientRect(); if (r.width === 0 && r.height === 0) continue;
      glyphs.push([text[i], (r.left - origin.left) / em, (r.bottom - origin.top) / em, r.height / em]);
    }
  }
  return glyphs;
})"""


class KatexRenderer:
    """KaTeX in headless Chromium: `render(latex_list)` gives each formula's glyphs or an error string."""

    def __init__(self, profile_dir: Path):
        from playwright.sync_api import sync_playwright

        if not (KATEX_DIST / "katex.min.js").is_file():
            raise FileNotFoundError(f"{KATEX_DIST}/katex.min.js is missing: run `npm ci`")
        if not Path(CHROMIUM).is_file():
            raise FileNotFoundError(f"{CHROMIUM} is missing: scripts/setup.sh installs Debian's chromium")
        profile_dir.mkdir(parents=True, exist_ok=True)
        html = profile_dir / "katex.html"
        html.write_text(_PAGE.format(css=(KATEX_DIST / "katex.min.css").as_uri(),
                                     js=(KATEX_DIST / "katex.min.js").as_uri(), px=BASE_PX))
        self._playwright = sync_playwright().start()
        self._context = self._playwright.chromium.launch_persistent_context(
            str(profile_dir / "profile"), executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS,
            viewport={"width": 4000, "height": 2000})
        self._page = self._context.new_page()
        self._page.goto(html.as_uri())
        self._page.evaluate("document.fonts.ready.then(() => true)")
        self._cache: dict[str, list | str] = {}

    def render(self, latex_list: list[str]) -> list[list | str]:
        todo = [latex for latex in dict.fromkeys(latex_list) if latex not in self._cache]
        if todo:
            # the fonts load on first use; render once to load them, then measure
            self._page.evaluate(_RENDER_JS, todo)
            self._page.evaluate("document.fonts.ready.then(() => true)")
            self._cache.update(zip(todo, self._page.evaluate(_RENDER_JS, todo)))
        return [self._cache[latex] for latex in latex_list]

    def close(self) -> None:
        self._context.close()
        self._playwright.stop()


def _without_final_punctuation(latex: str) -> str:
    # `\right.` is an empty delimiter, not a full stop
    return re.sub(r"(?:\\[,;:!]|\\q?quad|\s|(?<!\\right)(?<!\\left)[.,;])+$", "", latex)


# a delimiter's size (\left( around a fraction, \biggl[) is free: only its horizontal place is compared
_DELIMITERS = set("()[]{}|\u2223\u2016\u27e8\u27e9\u230a\u230b\u2308\u2309")
_SAME_SYMBOL = {"\u2212": "-", "\u2223": "|", "\u2217": "*"}   # minus, \mid, \ast: KaTeX draws them as these


def _symbol(char: str) -> str:
    return _SAME_SYMBOL.get(char, char)


def _step_agrees(r0: list, r1: list, c0: list, c1: list) -> bool:
    dx, dy = (r1[1] - r0[1]) - (c1[1] - c0[1]), (r1[2] - r0[2]) - (c1[2] - c0[2])
    if r0[0] in _DELIMITERS or r1[0] in _DELIMITERS:
        return abs(dx) <= 2 * TOLERANCE_EM
    return abs(dx) <= TOLERANCE_EM and abs(dy) <= TOLERANCE_EM


def glyphs_match(reference: list, candidate: list) -> bool:
    """The reference's glyphs occur in the candidate as a contiguous run with the same relative steps."""
    if not reference:
        return False
    ref_symbols = [_symbol(g[0]) for g in reference]
    cand_symbols = [_symbol(g[0]) for g in candidate]
    for start in range(len(candidate) - len(reference) + 1):
        if cand_symbols[start:start + len(reference)] != ref_symbols:
            continue
        run = candidate[start:start + len(reference)]
        if all(r[0] in _DELIMITERS or max(r[3], c[3]) <= HEIGHT_RATIO * min(r[3], c[3])
               for r, c in zip(reference, run)) and all(
                _step_agrees(r0, r1, c0, c1) for r0, r1, c0, c1 in zip(reference, reference[1:], run, run[1:])):
            return True
    return False


def check_math(fact: dict, markdown: str, renderer: KatexRenderer | None) -> dict:
    """Whether some delimited formula of the Markdown matches the fact's; how it matched."""
    found = candidates(markdown)
    wanted = normalise_latex(fact["latex"])
    for latex in found:
        if normalise_latex(latex) == wanted:
            return {"passed": True, "how": "latex", "candidate": latex}
    if not found or renderer is None:
        return {"passed": False, "how": "no candidate" if not found else "not rendered", "candidates": len(found)}
    # a formula's closing punctuation belongs to the sentence: neither render is asked to have it
    reference, *rendered = renderer.render([_without_final_punctuation(latex) for latex in [fact["latex"], *found]])
    if isinstance(reference, str):
        raise ValueError(f"math fact {fact['id']}: KaTeX cannot render its LaTeX: {reference}")
    for latex, glyphs in zip(found, rendered):
        if not isinstance(glyphs, str) and glyphs_match(reference, glyphs):
            return {"passed": True, "how": "render", "candidate": latex}
    return {"passed": False, "how": "no match", "candidates": len(found)}
