// A small Markdown renderer for result previews. Result text comes from
// documents, which anyone can write, so it is treated as hostile:
//
//   - every piece of source text is HTML-escaped before any tag is added, and
//     only tags written here are ever produced (raw HTML in the source shows as text);
//   - links are kept only for http(s) URLs; images only for the job's own
//     figures ("figures/NAME"), which the caller fetches with the API key;
//   - no attribute is built from source text except escaped href, alt and
//     data-figure values, always inside double quotes.
//
// It covers what result Markdown contains (headings, paragraphs, page and
// region comments, $$ formulas, pipe tables, figure images, lists nested and
// numbered from any start, fenced code, hard line breaks) and the common rest
// (quotes, emphasis, links).

const ESCAPES = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };
const FIGURE_PATTERN = /^figures\/([A-Za-z0-9][A-Za-z0-9._-]{0,200})$/;
const HEADING_OFFSET = 2;   // "#" renders as <h3>: the preview sits under the page's own headings

export function escapeHtml(text) {
  return String(text).replace(/[&<>"']/g, (ch) => ESCAPES[ch]);
}

export function renderMarkdown(source) {
  const lines = String(source).replace(/\u0000/g, "").replace(/\r\n?/g, "\n").split("\n");
  return renderBlocks(lines).join("\n");
}

function renderBlocks(lines) {
  const out = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    let match;
    if (!line.trim()) {
      i += 1;
    } else if ((match = /^\s*(`{3,}|~{3,})/.exec(line))) {
      const fence = match[1];   // closed by a line of the same character, at least as long
      const closes = (l) => l.trim().length >= fence.length && l.trim() === fence[0].repeat(l.trim().length);
      const end = findLine(lines, i + 1, closes);
      out.push(`<pre><code>${escapeHtml(lines.slice(i + 1, end).join("\n"))}</code></pre>`);
      i = end + 1;
    } else if (line.trim().startsWith("$$")) {
      const single = /^\s*\$\$(.+)\$\$\s*$/.exec(line);
      const end = single ? i : findLine(lines, i + 1, (l) => l.trim().endsWith("$$"));
      const body = single ? single[1] : lines.slice(i, end + 1).join("\n").trim().replace(/^\$\$|\$\$$/g, "");
      out.push(`<pre class="md-formula" aria-label="formula">${escapeHtml(body.trim())}</pre>`);
      i = end + 1;
    } else if (line.trim().startsWith("<!--")) {
      const end = findLine(lines, i, (l) => l.includes("-->"));
      const text = lines.slice(i, end + 1).join("\n").trim().replace(/^<!--/, "").replace(/-->$/, "").trim();
      out.push(renderComment(text));
      i = end + 1;
    } else if ((match = /^(#{1,6})\s+(.*?)\s*#*\s*$/.exec(line))) {
      const level = Math.min(6, match[1].length + HEADING_OFFSET);
      out.push(`<h${level}>${renderInline(match[2])}</h${level}>`);
      i += 1;
    } else if (/^\s*([-*_])(\s*\1){2,}\s*$/.test(line)) {
      out.push("<hr>");
      i += 1;
    } else if (isTableStart(lines, i)) {
      const end = findLine(lines, i + 2, (l) => !l.includes("|") || !l.trim());
      out.push(renderTable(lines.slice(i, end)));
      i = end;
    } else if (/^\s*>/.test(line)) {
      const end = findLine(lines, i, (l) => !/^\s*>/.test(l));
      const inner = lines.slice(i, end).map((l) => l.replace(/^\s*>\s?/, ""));
      out.push(`<blockquote>${renderBlocks(inner).join("\n")}</blockquote>`);
      i = end;
    } else if (listMarker(line)) {
      const end = findLine(lines, i, (l) => !l.trim() || (!listMarker(l) && !/^\s{2,}\S/.test(l)));
      out.push(renderList(lines.slice(i, end)));
      i = end;
    } else {
      const end = findLine(lines, i + 1, (l) => !l.trim() || startsBlock(lines, l));
      out.push(`<p>${lines.slice(i, end).map((l) => renderInline(l.trim())).join("<br>")}</p>`);
      i = end;
    }
  }
  return out;
}

// The first index >= start whose line satisfies `test`, or lines.length.
function findLine(lines, start, test) {
  for (let j = start; j < lines.length; j += 1) {
    if (test(lines[j])) return j;
  }
  return lines.length;
}

function startsBlock(lines, line) {
  return /^\s*(```|~~~|\$\$|<!--|#{1,6}\s|>)/.test(line) || Boolean(listMarker(line));
}

function listMarker(line) {
  const match = /^\s{0,3}([-*+]|\d{1,9}[.)])\s+/.exec(line);
  return match ? { ordered: /\d/.test(match[1]), length: match[0].length } : null;
}

// A list; an item whose marker is indented further than the open item's nests in it.
// Ordered lists keep their first number (`start`, digits only).
function renderList(lines) {
  const root = { indent: -1, children: [] };
  const open = [root];
  for (const line of lines) {
    const match = /^(\s*)([-*+]|(\d{1,9})[.)])\s+(.*)$/.exec(line);
    if (!match) {
      open[open.length - 1].lines.push(line.trim());
      continue;
    }
    const indent = match[1].length;
    while (open.length > 1 && indent <= open[open.length - 1].indent) open.pop();
    const item = { indent, number: match[3] === undefined ? null : Number(match[3]), lines: [match[4]], children: [] };
    open[open.length - 1].children.push(item);
    open.push(item);
  }
  return renderItems(root.children);
}

function renderItems(items) {
  const out = [];
  for (let k = 0; k < items.length;) {
    const ordered = items[k].number !== null;
    const end = findLine(items, k, (item) => (item.number !== null) !== ordered);
    const start = ordered && items[k].number !== 1 ? ` start="${items[k].number}"` : "";
    const body = items.slice(k, end).map((item) =>
      `<li>${item.lines.map(renderInline).join("<br>")}${renderItems(item.children)}</li>`).join("");
    out.push(ordered ? `<ol${start}>${body}</ol>` : `<ul>${body}</ul>`);
    k = end;
  }
  return out.join("");
}

const DELIMITER_ROW = /^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$/;

function isTableStart(lines, i) {
  return lines[i].includes("|") && i + 1 < lines.length && DELIMITER_ROW.test(lines[i + 1]);
}

function splitRow(line) {
  const trimmed = line.trim().replace(/^\|/, "").replace(/\|$/, "");
  return trimmed.split(/(?<!\\)\|/).map((cell) => cell.trim().replace(/\\\|/g, "|"));
}

function renderTable(lines) {
  const head = splitRow(lines[0]);
  const aligns = splitRow(lines[1]).map((cell) =>
    cell.startsWith(":") && cell.endsWith(":") ? "center" : cell.endsWith(":") ? "right" : "");
  const cell = (tag, text, column) =>
    `<${tag}${aligns[column] ? ` class="align-${aligns[column]}"` : ""}>${renderInline(text)}</${tag}>`;
  const body = lines.slice(2).map((line) =>
    `<tr>${head.map((_, column) => cell("td", splitRow(line)[column] ?? "", column)).join("")}</tr>`);
  return `<div class="md-table"><table><thead><tr>${head.map((text, column) => cell("th", text, column)).join("")}` +
         `</tr></thead><tbody>${body.join("")}</tbody></table></div>`;
}

// Result Markdown marks pages, headers, footers and unread regions with comments.
function renderComment(text) {
  const page = /^page (\d+)$/.exec(text);
  if (page) return `<p class="md-page-mark" role="separator">Page ${escapeHtml(page[1])}</p>`;
  const warning = /could not be read|^page \d+ (failed|cancelled|queued|running)/.test(text);
  return `<p class="md-note${warning ? " md-warning" : ""}">${escapeHtml(text)}</p>`;
}

// Inline spans. The text is escaped first; patterns then match escaped text,
// so nothing they capture can contain a tag or end a quoted attribute.
export function renderInline(text) {
  // Finished tags are set aside behind placeholders, so later patterns never reach into them.
  const stashed = [];
  const stash = (html) => `\u0000${stashed.push(html) - 1}\u0000`;
  let html = escapeHtml(text).replace(/`([^`]+)`/g, (_, code) => stash(`<code>${code}</code>`));
  html = html.replace(/!\[([^\]]*)\]\(([^)\s]+)\)/g, (_, alt, url) => stash(renderImage(alt, url)));
  html = html.replace(/\[([^\]]+)\]\(([^)\s]+)\)/g, (_, label, url) => /^https?:\/\//i.test(url)
    ? stash(`<a href="${url}" rel="noopener noreferrer nofollow" target="_blank">${label}</a>`) : label);
  html = html.replace(/\*\*(?=\S)(.+?)\*\*/g, "<strong>$1</strong>");
  html = html.replace(/(^|[^\w*])\*(?=\S)([^*]+?)\*(?!\w)/g, "$1<em>$2</em>");
  html = html.replace(/(^|[^\w])_(?=\S)([^_]+?)_(?!\w)/g, "$1<em>$2</em>");
  // A stashed link label may hold a stashed code span: restore until none is left
  // (each stash can only hold earlier ones, so this ends).
  while (/\u0000\d+\u0000/.test(html)) html = html.replace(/\u0000(\d+)\u0000/g, (_, index) => stashed[Number(index)]);
  return html;
}

function renderImage(alt, url) {
  const figure = FIGURE_PATTERN.exec(url);
  if (!figure) return `<span class="md-image-ref">[image: ${alt || "untitled"}]</span>`;
  return `<img class="md-figure" alt="${alt || "figure"}" data-figure="${figure[1]}">`;
}
