// Markdown to DOM for the result's Markdown view: markdown-it parses (raw HTML allowed, so a
// table with spanning cells can be an HTML table), DOMPurify keeps only text markup, and KaTeX
// draws each formula into the DOM. Result text comes from documents, which anyone can write,
// so the HTML is hostile until sanitised:
//
//   - tags and attributes are an allowlist (SANITIZE): no script, style, form, frame, media or
//     SVG; no id or name (they could shadow the page's own elements), no style attribute (the
//     CSP refuses inline styles; table alignment becomes a class);
//   - a link keeps its href only for http(s) and mailto, and opens in a new tab without referrer;
//   - an image is kept only as one of the job's own figures ("figures/NAME"), without a src:
//     the result view fetches it with the key. Any other image shows as "[image: alt]";
//   - each raw HTML block is sanitised on its own first, and an inline tag that opens an element
//     whose content HTML reads as raw text (script, style, iframe, textarea, ...) is dropped, so
//     an unclosed one cannot swallow the rest of the page;
//   - math is drawn after sanitising, from the text of its element, with katex.render (never an
//     HTML string: KaTeX sets sizes through element.style, which the CSP allows).
//
// The libraries are loaded when first needed, from /web/vendor/ (app/web_ui.py serves them from
// node_modules); loadRenderer() rejects with a sentence when they are not installed.

import { el } from "./dom.js";
import { mathPlugin } from "./markdown_math.js";

const VENDOR = "/web/vendor";
const FIGURE_PATTERN = /^figures\/([A-Za-z0-9][A-Za-z0-9._-]{0,200})$/;
const RAW_TEXT_OPENER = /^<\s*(script|style|iframe|textarea|title|xmp|noembed|noframes|noscript|plaintext|template|object|embed|svg|math)\b/i;
const HEADING_OFFSET = 2;   // "#" renders as <h3>: the view sits under the page's own headings
const SANITIZE = {
  ALLOWED_TAGS: ["p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "blockquote", "pre", "code", "span", "div",
                 "em", "strong", "b", "i", "u", "s", "del", "ins", "sub", "sup", "mark", "small", "kbd", "samp",
                 "var", "abbr", "q", "cite", "dfn", "a", "img", "ul", "ol", "li", "dl", "dt", "dd", "table",
                 "caption", "colgroup", "col", "thead", "tbody", "tfoot", "tr", "th", "td", "figure", "figcaption"],
  ALLOWED_ATTR: ["href", "title", "alt", "colspan", "rowspan", "span", "start", "reversed", "scope", "headers",
                 "class", "lang", "dir", "data-figure", "data-math"],
  ALLOW_DATA_ATTR: false,
  RETURN_DOM_FRAGMENT: true,
};

let loading = null;

// Resolves to render(source) -> DocumentFragment.
export function loadRenderer() {
  loading ??= Promise.all([
    import(`${VENDOR}/markdown-it/markdown-it.esm.min.mjs`),
    import(`${VENDOR}/dompurify/purify.es.mjs`),
    import(`${VENDOR}/katex/katex.mjs`),
  ]).then(([markdownIt, purify, katex]) => {
    addStyleSheet(`${VENDOR}/katex/katex.min.css`);
    return makeRenderer(markdownIt.default, purify.default, katex.default);
  }).catch((error) => {
    loading = null;   // a later view tries again
    throw new Error("the Markdown libraries could not be loaded from this server (scripts/setup.sh installs " +
                    `them with npm): ${error.message}`);
  });
  return loading;
}

function addStyleSheet(href) {
  if (!document.querySelector(`link[href="${href}"]`)) document.head.append(el("link", { rel: "stylesheet", href }));
}

function makeRenderer(markdownIt, purify, katex) {
  const md = markdownIt({ html: true, linkify: false, typographer: false });
  md.use(mathPlugin);
  md.core.ruler.push("shift_headings", (state) => {
    for (const token of state.tokens) {
      if (token.type === "heading_open" || token.type === "heading_close") {
        token.tag = `h${Math.min(6, Number(token.tag.slice(1)) + HEADING_OFFSET)}`;
      }
    }
  });
  md.renderer.rules.image = (tokens, index) => {
    const token = tokens[index];
    const alt = token.content || "figure";
    const figure = FIGURE_PATTERN.exec(token.attrGet("src") || "");
    return figure ? `<img class="md-figure" alt="${md.utils.escapeHtml(alt)}" data-figure="${figure[1]}">`
                  : `<span class="md-image-ref">[image: ${md.utils.escapeHtml(alt)}]</span>`;
  };
  for (const rule of ["th_open", "td_open"]) {
    md.renderer.rules[rule] = (tokens, index, options, env, self) => {
      const token = tokens[index];
      const align = /text-align:\s*(left|center|right)/.exec(token.attrGet("style") || "");
      if (align) {
        token.attrs = token.attrs.filter(([name]) => name !== "style");
        token.attrJoin("class", `align-${align[1]}`);
      }
      return self.renderToken(tokens, index, options);
    };
  }
  md.renderer.rules.html_block = (tokens, index) =>
    purify.sanitize(tokens[index].content, { ...SANITIZE, RETURN_DOM_FRAGMENT: false });
  md.renderer.rules.html_inline = (tokens, index) =>
    (RAW_TEXT_OPENER.test(tokens[index].content) ? "" : tokens[index].content);
  return (source) => {
    const fragment = purify.sanitize(md.render(String(source)), SANITIZE);
    tidyLinksAndImages(fragment);
    for (const node of fragment.querySelectorAll("[data-math]")) drawMath(katex, node);
    return fragment;
  };
}

function tidyLinksAndImages(fragment) {
  for (const link of fragment.querySelectorAll("a")) {
    const href = link.getAttribute("href") || "";
    if (/^(https?:|mailto:)/i.test(href)) {
      link.setAttribute("rel", "noopener noreferrer nofollow");
      link.setAttribute("target", "_blank");
    } else {
      link.replaceWith(...link.childNodes);
    }
  }
  for (const image of fragment.querySelectorAll("img")) {
    const name = image.dataset.figure;
    if (name && /^[A-Za-z0-9][A-Za-z0-9._-]{0,200}$/.test(name) && !image.hasAttribute("src")) continue;
    image.replaceWith(el("span", { class: "md-image-ref", text: `[image: ${image.getAttribute("alt") || "untitled"}]` }));
  }
}

function drawMath(katex, node) {
  const tex = node.textContent;
  const display = node.dataset.math === "display";
  node.textContent = "";
  // A formula KaTeX cannot parse shows its TeX, marked, instead of stopping the view.
  katex.render(tex, node, { displayMode: display, throwOnError: false, strict: "ignore", trust: false,
                            maxExpand: 200, output: "htmlAndMathml" });
  node.setAttribute("title", tex);
}
