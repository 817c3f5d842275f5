// A markdown-it plugin for TeX math: `$...$` inline, `$$...$$` inline or as a block of its own
// lines. It only finds the math: each formula becomes an element holding its TeX as text
// (data-math="inline" or "display"), which markdown_view.js draws with KaTeX after sanitising.
//
// What counts as inline math (so prices and shell variables stay text):
//   - an opening `$` is followed by a non-space, a closing `$` follows a non-space and is not
//     followed by a digit ("$5 and $10" is text);
//   - a `$` after an odd number of backslashes is a literal dollar, outside math and inside it.

import { escapeHtml } from "./dom.js";

export function mathPlugin(md) {
  md.inline.ruler.before("escape", "math_inline", mathInline);
  md.block.ruler.before("fence", "math_block", mathBlock, { alt: ["paragraph", "reference", "blockquote", "list"] });
  md.renderer.rules.math_inline = (tokens, index) => mathElement("span", tokens[index]);
  md.renderer.rules.math_block = (tokens, index) => `${mathElement("div", tokens[index])}\n`;
}

function mathElement(tag, token) {
  return `<${tag} class="md-math" data-math="${token.meta.display ? "display" : "inline"}">` +
         `${escapeHtml(token.content)}</${tag}>`;
}

function escaped(src, index) {
  let backslashes = 0;
  for (let i = index - 1; i >= 0 && src[i] === "\\"; i -= 1) backslashes += 1;
  return backslashes % 2 === 1;
}

function mathInline(state, silent) {
  const src = state.src;
  const start = state.pos;
  if (src[start] !== "$" || escaped(src, start)) return false;
  const display = src[start + 1] === "$";
  const open = display ? 2 : 1;
  let end = -1;
  if (display) {
    end = src.indexOf("$$", start + 2);
    while (end !== -1 && escaped(src, end)) end = src.indexOf("$$", end + 1);
  } else {
    if (start + 1 >= state.posMax || /\s/.test(src[start + 1])) return false;
    for (let i = start + 1; i < state.posMax; i += 1) {
      if (src[i] === "$" && !escaped(src, i) && !/\s/.test(src[i - 1]) && !/\d/.test(src[i + 1] || "")) {
        end = i;
        break;
      }
    }
  }
  if (end === -1 || end + open > state.posMax) return false;
  const content = src.slice(start + open, end);
  if (!content.trim()) return false;
  if (!silent) {
    const token = state.push("math_inline", "", 0);
    token.content = content.trim();
    token.markup = "$".repeat(open);
    token.meta = { display };
  }
  state.pos = end + open;
  return true;
}

// `$$` starting a line opens a block, closed by `$$` ending the same or a later line.
function mathBlock(state, startLine, endLine, silent) {
  const lineText = (line) => state.src.slice(state.bMarks[line] + state.tShift[line], state.eMarks[line]);
  if (state.sCount[startLine] - state.blkIndent >= 4) return false;
  const first = lineText(startLine);
  if (!first.startsWith("$$")) return false;
  let body;
  let last = startLine;
  const rest = first.slice(2);
  if (rest.trimEnd().endsWith("$$") && rest.trim().length > 2) {
    body = rest.trimEnd().slice(0, -2);
  } else {
    const parts = [rest];
    for (last = startLine + 1; last < endLine; last += 1) {
      const text = lineText(last);
      if (text.trimEnd().endsWith("$$")) {
        parts.push(text.trimEnd().slice(0, -2));
        break;
      }
      parts.push(text);
    }
    if (last >= endLine) return false;   // never closed: not math
    body = parts.join("\n");
  }
  if (!body.trim()) return false;
  if (silent) return true;
  const token = state.push("math_block", "div", 0);
  token.block = true;
  token.content = body.trim();
  token.markup = "$$";
  token.meta = { display: true };
  token.map = [startLine, last + 1];
  state.line = last + 1;
  return true;
}
