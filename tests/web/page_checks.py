"""Checks the browser tests run on whatever the page shows: the layout measured box by box, and
axe-core's accessibility rules.

`layout_problems` asks the browser for each visible element's boxes: the page never scrolls
sideways; an element fits inside its parent and its content fits inside it, except inside the
boxes meant to scroll sideways (code, tables, display formulas); a box that clips or scrolls
for other reasons (the text pane) has nothing hidden sideways; a select or an input shows its
whole chosen text or placeholder. SVG content is the page drawing, scaled to fit, and is left out.

`axe_violations` runs axe-core (node_modules/axe-core, installed by scripts/setup.sh) in the page
and returns the serious and critical violations, each as one line naming the rule and the nodes.
"""
from __future__ import annotations

from pathlib import Path

from playwright.sync_api import Page

from service_harness import REPO_ROOT

AXE_JS = REPO_ROOT / "node_modules" / "axe-core" / "axe.min.js"
SIDEWAYS_SCROLLERS = "pre, .md-table, .md-math[data-math=display]"

LAYOUT_PROBLEMS = """(sideways) => {
  const problems = [];
  const slack = 1;
  const root = document.documentElement;
  if (root.scrollWidth > root.clientWidth + slack) {
    problems.push(`the page scrolls sideways: ${root.scrollWidth}px of content in ${root.clientWidth}px`);
  }
  const name = (node) => {
    const classes = typeof node.className === 'string' && node.className.trim()
      ? '.' + node.className.trim().split(/\\s+/).join('.') : '';
    return `${node.tagName.toLowerCase()}${node.id ? '#' + node.id : ''}${classes}`;
  };
  const shown = (node) => {
    const style = getComputedStyle(node);
    return style.display !== 'none' && style.visibility !== 'hidden' && node.getClientRects().length > 0;
  };
  const measure = document.createElement('span');
  measure.style.position = 'absolute';
  measure.style.visibility = 'hidden';
  measure.style.whiteSpace = 'pre';
  document.body.append(measure);
  const textWidth = (node, text) => {
    measure.style.font = getComputedStyle(node).font;
    measure.textContent = text;
    return measure.getBoundingClientRect().width;
  };
  for (const node of document.body.querySelectorAll('*')) {
    if (node === measure || node.closest('svg, .sr-only, .katex, head, script, option') || !shown(node)) continue;
    const style = getComputedStyle(node);
    if (style.position === 'fixed' || (style.position === 'absolute' && node.matches('.skip-link'))) continue;
    const inScroller = node.parentElement.closest(sideways);
    const box = node.getBoundingClientRect();
    const parent = node.parentElement;
    if (!inScroller && parent !== document.body && shown(parent)) {
      const outer = parent.getBoundingClientRect();
      if (box.left < outer.left - slack || box.right > outer.right + slack) {
        problems.push(`${name(node)} (${Math.round(box.left)}-${Math.round(box.right)}px) runs past ` +
                      `${name(parent)} (${Math.round(outer.left)}-${Math.round(outer.right)}px)`);
      }
    }
    const block = !style.display.startsWith('inline') || style.display === 'inline-block' || style.display === 'inline-flex';
    const scrollsSideways = node.matches(sideways);
    if (!inScroller && block && !scrollsSideways && node.scrollWidth > node.clientWidth + slack &&
        node.clientWidth > 0 && !['SELECT', 'INPUT', 'TEXTAREA', 'BUTTON', 'IMG', 'PROGRESS'].includes(node.tagName)) {
      const hides = style.overflowX !== 'visible';
      problems.push(`${name(node)}: ${node.scrollWidth}px of content in ${node.clientWidth}px` +
                    (hides ? ' (cut off)' : ' (spills out)'));
    }
    if (node.tagName === 'SELECT' && node.selectedIndex >= 0) {
      const text = node.options[node.selectedIndex].text;
      const room = node.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight) - 16;
      if (textWidth(node, text) > room + slack) problems.push(`${name(node)} cuts off its choice "${text}"`);
    }
    if (node.tagName === 'INPUT' && ['text', 'number', 'password'].includes(node.type)) {
      const text = node.value || node.placeholder;
      const room = node.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
      if (text && textWidth(node, text) > room + slack) problems.push(`${name(node)} cuts off "${text}"`);
    }
  }
  measure.remove();
  return problems;
}"""


def layout_problems(page: Page) -> list[str]:
    return page.evaluate(LAYOUT_PROBLEMS, SIDEWAYS_SCROLLERS)


def assert_axe_installed() -> Path:
    assert AXE_JS.is_file(), f"{AXE_JS} is missing: run scripts/setup.sh (npm ci installs axe-core)"
    return AXE_JS


def axe_violations(page: Page) -> list[str]:
    """Serious and critical axe-core violations on what the page shows now."""
    if not page.evaluate("typeof window.axe === 'object'"):
        # Evaluated through the browser's debugging protocol, which the page's CSP does not govern
        # (a <script> tag with this text would be refused).
        page.evaluate(assert_axe_installed().read_text(encoding="utf-8"))
    violations = page.evaluate("""async () => {
      const results = await axe.run(document, { resultTypes: ['violations'] });
      return results.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical')
        .map((v) => `${v.id} (${v.impact}): ${v.help} — ${v.nodes.slice(0, 5).map((n) => n.target.join(' ')).join(', ')}`);
    }""")
    return violations
