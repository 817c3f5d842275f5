// A result page as Markdown, built from the result JSON by the rules the server's Markdown writer
// follows (workers/document_result.py), with one difference: furniture (regions whose role is
// header or footer: running heads, page numbers) is left out, since the JSON says which regions
// it is. The view reads the JSON the page view already has, so it needs no md result, and a
// region's role, not a comment's wording, decides what is furniture.
//
// A region's Markdown comes from its blocks (workers/structure_blocks.py) when it has them, else
// from the region as a whole. Captions go right after their figure or table, and code blocks
// that follow each other (a listing the layout cut in two) become one.

import { isFurniture } from "./trust.js";

const BULLETS = "•◦▪‣·●○■□▸►✓➢-–—*+";
const PARAGRAPH_LABELS = new Set(["text", "reference", "figure_caption", "table_caption"]);

// The page's body as a list of parts: {markdown} to render, or {note, warning} to show as words.
export function pageParts(page) {
  const regions = (page.regions || []).filter((region) => !isFurniture(region));
  const targets = new Set(regions.filter((r) => r.task === "skip" || r.task === "table").map((r) => r.reading_index));
  const moves = (block, region) => block.type === "caption" && targets.has(block.caption_of) &&
                                   block.caption_of !== region.reading_index;
  const captions = new Map();
  for (const region of regions) {
    for (const block of renderableBlocks(region) || []) {
      if (moves(block, region)) captions.set(block.caption_of, [...(captions.get(block.caption_of) || []), block]);
    }
  }
  const parts = [];
  const add = (block, part) => {
    const last = parts[parts.length - 1];
    if (block?.type === "code" && last?.block?.type === "code") {
      const merged = { ...last.block, text: `${last.block.text}\n${block.text}`,
                       language: last.block.language || block.language };
      parts[parts.length - 1] = { block: merged, markdown: blockMarkdown(merged) };
    } else if (part.markdown || part.note) {
      parts.push({ block, ...part });
    }
  };
  for (const region of regions) {
    const blocks = renderableBlocks(region);
    if (blocks === null) for (const part of regionParts(region)) add(null, part);
    for (const block of blocks || []) if (!moves(block, region)) add(block, { markdown: blockMarkdown(block) });
    for (const block of captions.get(region.reading_index) || []) add(block, { markdown: blockMarkdown(block) });
  }
  return parts.map(({ block, ...part }) => part);
}

function renderableBlocks(region) {
  if (region.status === "failed" || region.task === "skip" || region.label === "handwriting") return null;
  return region.blocks?.length ? region.blocks : null;
}

function blockMarkdown(block) {
  const text = block.text.replace(/^\n+|\n+$/g, "");
  switch (block.type) {
    case "heading": return `${"#".repeat(Math.min(6, Math.max(1, block.level || 2)))} ${text}`;
    case "list": return block.items.map((item) => itemMarkdown(item, Boolean(block.ordered))).join("\n");
    case "code": {
      let fence = "```";
      while (text.includes(fence)) fence += "`";
      return `${fence}${block.language || ""}\n${text}\n${fence}`;
    }
    case "equation": return `$$\n${text}${block.number ? ` \\tag{${block.number}}` : ""}\n$$`;
    case "caption": return text && !text.includes("*") ? `*${text}*` : text;
    case "paragraph": return text.replace(/\n/g, "  \n");   // kept line breaks: Markdown hard breaks
    default: return text;
  }
}

function itemMarkdown(item, ordered) {
  const marker = item.marker || "";
  const number = /^\(?(\d{1,9})[.)]$/.exec(marker);
  let prefix = "-";
  if (ordered && number) prefix = `${Number(number[1])}.`;
  else if (marker && !BULLETS.includes(marker)) prefix = `- ${marker}`;   // "(a)", "iv.": the marker stays
  return `${"    ".repeat(item.depth || 0)}${prefix} ${item.text}`;
}

function regionParts(region) {
  const text = (region.text || "").trim();
  if (region.status === "failed") {
    const note = { note: `Region ${region.reading_index + 1} (${region.label}) could not be read: ` +
                         `${region.reason || "no reason given"}`, warning: true };
    return text ? [note, { markdown: joinLines(text) }] : [note];
  }
  if (region.task === "skip") {
    const labels = text.split("\n").map((line) => line.trim()).filter(Boolean).join(" · ");
    return [{ markdown: region.figure ? `![${region.label}](figures/${region.figure})` : "" },
            { markdown: labels ? `> Text in the figure: ${labels}` : "" }];
  }
  if (!text) return [];
  // no recogniser here reads handwriting: marked, never passed off as read
  if (region.label === "handwriting") return [{ markdown: `*[handwriting, low confidence]* ${joinLines(text)}` }];
  if (region.label === "title") return [{ markdown: `## ${joinLines(text)}` }];
  if (region.task === "formula") return [{ markdown: `$$\n${text}\n$$` }];
  if (region.task === "table") return [{ markdown: text }];
  return [{ markdown: PARAGRAPH_LABELS.has(region.label) ? joinLines(text) : text }];
}

// A paragraph's lines as one; a word hyphenated at a line end is joined back before a lower-case
// continuation ("de-" "scribed"), as workers/structure_rows.join_lines does.
function joinLines(text) {
  let joined = "";
  for (const line of text.split("\n").map((l) => l.trim()).filter(Boolean)) {
    if (joined.length > 1 && joined.endsWith("-") && /\p{L}/u.test(joined[joined.length - 2])) {
      joined = (/^\p{Ll}/u.test(line) ? joined.slice(0, -1) : joined) + line;
    } else {
      joined = joined ? `${joined} ${line}` : line;
    }
  }
  return joined;
}
