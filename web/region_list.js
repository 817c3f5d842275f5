// The text pane of the page view: each region's text in reading order, with what the JSON says of
// how far to trust it (trust.js): where the text came from, the text-layer check, the mean
// confidence, and its low-confidence lines marked where they stand. A code block is shown as
// printed: monospaced, its spaces kept, scrolling sideways instead of wrapping. Furniture is
// listed by its role. Built from elements and text only; each item carries data-region, its index
// on the page, and data-needs-look when a person should check it (the pane's filter keys on it);
// its button (the only control in it) selects the region.

import { el, plural } from "./dom.js";
import { STATUS_NOTES, safeClass } from "./page_drawing.js";
import { isFurniture, percent, regionTrust } from "./trust.js";

const ROLE_NAMES = { header: "running header", footer: "running footer", page_number: "page number",
                     line_numbers: "line numbers", margin_note: "margin note" };

export function listRegions(list, page) {
  const items = (page.regions || []).map((region, index) => {
    const trust = regionTrust(region);
    const name = `Region ${region.reading_index + 1}: ${region.label.replace(/_/g, " ")}`;
    return el("li", { class: `region-item label-${safeClass(region.label)} status-${safeClass(region.status)}` +
                             (isFurniture(region) ? " furniture" : ""),
                      "data-region": index, "data-needs-look": trust.needsLook ? "true" : null },
      el("div", { class: "region-meta" },
        // The one control per region: it selects the region here and on the page. The text below stays
        // plain content, so a code block can scroll and be copied.
        el("button", { type: "button", class: "region-select", "aria-pressed": "false", title: `Find ${name} on the page`,
                       "aria-label": `${name}${trust.needsLook ? `, needs a look: ${trust.why.join(", ")}` : ""}` },
          el("span", { class: "region-number", text: String(region.reading_index + 1) }), " ",
          el("span", { class: `label-tag label-${safeClass(region.label)}`, text: region.label.replace(/_/g, " ") })),
        region.role !== "body" && region.role !== region.label
          ? el("span", { class: "role-tag", text: ROLE_NAMES[region.role] || region.role }) : null,
        isFurniture(region) && region.role === region.label
          ? el("span", { class: "role-tag", text: "furniture" }) : null,
        STATUS_NOTES[region.status]
          ? el("span", { class: `status-tag status-${safeClass(region.status)}`, text: STATUS_NOTES[region.status] })
          : null,
        trust.source ? el("span", { class: `source-tag source-${safeClass(region.source)}`, text: trust.source }) : null,
        trust.check ? el("span", { class: `check-tag check-${safeClass(region.text_layer_check)}`, text: trust.check })
          : null,
        trust.confidence !== null
          ? el("span", { class: `confidence-tag${trust.lowLines ? " low" : ""}`,
                         text: `confidence ${percent(trust.confidence)}` +
                               (trust.lowLines ? ` · ${plural(trust.lowLines, "low line")}` : "") })
          : null),
      regionBody(region),
      region.reason ? el("p", { class: "region-reason", text: region.reason }) : null);
  });
  list.replaceChildren(...items);
  return items.length;
}

// The region's lines in order, code blocks as printed. Without lines (figures, older results) its text.
function regionBody(region) {
  const lines = region.lines || [];
  if (region.task === "skip" && !region.text) return el("p", { class: "region-text muted", text: "A figure: no text to read." });
  if (!lines.length || region.task === "table") return el("p", { class: "region-text", text: region.text || "(no text)" });
  const codeStarts = new Map();   // first line index -> code block
  const inCode = new Set();
  for (const block of region.blocks || []) {
    if (block.type !== "code" || !block.lines?.length) continue;
    codeStarts.set(Math.min(...block.lines), block);
    for (const index of block.lines) inCode.add(index);
  }
  const body = el("div", { class: "region-body" });
  let text = null;
  lines.forEach((line, index) => {
    if (codeStarts.has(index)) {
      body.append(codeBlock(codeStarts.get(index), lines));
      text = null;
    }
    if (inCode.has(index)) return;
    if (!text) body.append(text = el("p", { class: "region-text" }));
    if (text.childNodes.length) text.append("\n");
    text.append(lineNode(line, line.text));
  });
  return body;
}

function codeBlock(block, lines) {
  const printed = block.text.split("\n");
  // The block's own text keeps the listing's spaces; its lines are marked only when they pair one to one.
  const paired = printed.length === block.lines.length;
  const code = el("code", {}, ...printed.flatMap((text, k) =>
    [k ? "\n" : null, paired ? lineNode(lines[block.lines[k]], text) : text].filter((part) => part !== null)));
  // Focusable, so the keyboard can scroll a long line into view.
  return el("pre", { class: "region-code", tabindex: 0 }, code);
}

function lineNode(line, text) {
  const differs = line.layer_text !== null && line.layer_text !== undefined;
  if (!line.low_confidence && !differs) return text;
  const notes = [];
  if (line.low_confidence) notes.push(`low confidence (${percent(line.confidence)})`);
  if (differs) notes.push(`the PDF text layer reads: ${line.layer_text}`);
  return el("mark", { class: `line-mark${line.low_confidence ? " low" : ""}${differs ? " differs" : ""}`,
                      title: notes.join("; ") },
    text, el("span", { class: "sr-only", text: ` (${notes.join("; ")})` }));
}
