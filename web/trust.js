// How far a region's text can be trusted, from what the result JSON says of it: where the text
// came from (`source`), whether a verified reading agrees with the PDF's text layer
// (`text_layer_check`), the recogniser's confidence per line and the lines it flagged low.
//
// | a region needs a person's look when   | because                                     |
// |---------------------------------------|---------------------------------------------|
// | status is failed                      | nothing was read                            |
// | status is fallback                    | recognition failed; the layer's text stands |
// | a line is low_confidence              | the recogniser doubted it                   |
// | text_layer_check is "differs"         | the reading and the PDF's own text disagree |

// Furniture: running headers and footers, page numbers, line numbers, margin notes (the roles of
// workers/furniture.py). Shown by role on the page and in its text, left out of the Markdown view.
export const FURNITURE_ROLES = new Set(["header", "footer", "page_number", "line_numbers", "margin_note"]);
export const SOURCE_NAMES = { text_layer: "PDF text layer", ocr: "OCR" };
export const CHECK_NAMES = { agrees: "agrees with the text layer", differs: "differs from the text layer" };

export function regionTrust(region) {
  const lines = region.lines || [];
  const scored = lines.filter((line) => typeof line.confidence === "number");
  const lowLines = lines.filter((line) => line.low_confidence).length;
  const differingLines = lines.filter((line) => line.layer_text !== null && line.layer_text !== undefined).length;
  const why = [];
  if (region.status === "failed") why.push("not read");
  if (region.status === "fallback") why.push("from the PDF text layer after recognition failed");
  if (lowLines) why.push(`${lowLines} low-confidence line${lowLines === 1 ? "" : "s"}`);
  if (region.text_layer_check === "differs") why.push(CHECK_NAMES.differs);
  return {
    source: SOURCE_NAMES[region.source] || null,
    check: CHECK_NAMES[region.text_layer_check] || null,
    // The mean of the lines' confidences, 0-1; null when the recogniser gave none (the text layer gives none).
    confidence: scored.length ? scored.reduce((sum, line) => sum + line.confidence, 0) / scored.length : null,
    lowLines,
    differingLines,
    needsLook: why.length > 0,
    why,
  };
}

export function isFurniture(region) {
  return FURNITURE_ROLES.has(region.role);
}

export function percent(value) {
  return `${Math.round(value * 100)}%`;
}
