// Drawing one page of a result: the page image with its regions over it (an
// SVG whose viewBox is the page's pixel size, so boxes in page pixels land on
// the image at any display size), a note on the page and a legend. Lines the
// recogniser flagged low are outlined inside their region; furniture (running
// headers and footers) is drawn muted. Everything is built from elements and
// text, never from HTML strings. Region elements carry data-region (their index
// on the page), which is how the result view links a box to its text
// (region_list.js), and data-needs-look when trust.js says a person should look.

import { el, plural, svgEl } from "./dom.js";
import { isFurniture, regionTrust } from "./trust.js";

export const STATUS_NOTES = { fallback: "from the PDF text layer", failed: "not read" };

export function drawPageNote(node, page) {
  const regions = page.regions || [];
  const count = (status) => regions.filter((region) => region.status === status).length;
  const parts = [plural(regions.length, "region")];
  if (count("fallback")) parts.push(`${count("fallback")} from the PDF text layer`);
  if (count("failed")) parts.push(`${count("failed")} not read`);
  const trusts = regions.map(regionTrust);
  const lowLines = trusts.reduce((sum, trust) => sum + trust.lowLines, 0);
  if (lowLines) parts.push(plural(lowLines, "low-confidence line"));
  const differs = regions.filter((region) => region.text_layer_check === "differs").length;
  if (differs) parts.push(`${differs} differ${differs === 1 ? "s" : ""} from the text layer`);
  let note = parts.join(" · ");
  if (page.state !== "done") note = `This page ${page.state === "failed" ? "failed" : `is ${page.state}`}` +
                                    `${page.reason ? `: ${page.reason}` : "."} ${note}`;
  else if (page.reason) note = `${note}. ${page.reason}`;
  node.textContent = note;
  node.classList.toggle("warn", page.state !== "done" || Boolean(page.reason));
}

export function drawPage(canvas, page, imageUrl) {
  if (!page.width || !page.height) {
    canvas.replaceChildren();
    canvas.setAttribute("viewBox", "0 0 100 140");
    canvas.setAttribute("aria-label", "No image: this page has no result");
    return;
  }
  const { width, height } = page;
  canvas.setAttribute("viewBox", `0 0 ${width} ${height}`);
  canvas.setAttribute("aria-label", `Page ${page.page} with ${plural(page.regions.length, "region")}`);
  canvas.setAttribute("aria-busy", imageUrl ? "false" : "true");
  const hatch = Math.max(6, Math.round(width / 120));
  const defs = svgEl("defs", {}, svgEl("pattern", { id: "hatch-failed", patternUnits: "userSpaceOnUse",
    width: hatch, height: hatch, patternTransform: "rotate(45)" },
    svgEl("line", { x1: 0, y1: 0, x2: 0, y2: hatch, class: "hatch-line", "stroke-width": hatch / 3 })));
  const background = imageUrl
    ? svgEl("image", { href: imageUrl, x: 0, y: 0, width, height, preserveAspectRatio: "none", class: "page-image" })
    : svgEl("rect", { x: 0, y: 0, width, height, class: "page-loading" });
  const fontSize = Math.max(12, Math.round(width / 40));
  const regions = page.regions.map((region, index) => {
    const [x0, y0, x1, y1] = region.bbox;
    const trust = regionTrust(region);
    const label = `Region ${region.reading_index + 1}: ${region.label}` +
                  (isFurniture(region) ? ` (${region.role})` : "") +
                  (STATUS_NOTES[region.status] ? `, ${STATUS_NOTES[region.status]}` : "") +
                  (trust.lowLines ? `, ${plural(trust.lowLines, "low-confidence line")}` : "");
    const lowBoxes = (region.lines || []).filter((line) => line.low_confidence && line.bbox).map((line) => {
      const [lx0, ly0, lx1, ly1] = line.bbox;
      return svgEl("rect", { x: lx0, y: ly0, width: Math.max(1, lx1 - lx0), height: Math.max(1, ly1 - ly0),
                             class: "low-line-box" });
    });
    return svgEl("g", { class: `region label-${safeClass(region.label)} status-${safeClass(region.status)}` +
                               (isFurniture(region) ? " furniture" : ""),
                        "data-region": index, "data-needs-look": trust.needsLook ? "true" : null, tabindex: 0,
                        role: "button", "aria-label": label, "aria-pressed": "false" },
      svgEl("title", { text: region.reason ? `${label}. ${region.reason}` : label }),
      svgEl("rect", { x: x0, y: y0, width: Math.max(1, x1 - x0), height: Math.max(1, y1 - y0),
                      class: "region-box" }),
      ...lowBoxes,
      svgEl("text", { x: x0 + fontSize * 0.2, y: y0 - fontSize * 0.25 < fontSize ? y0 + fontSize : y0 - fontSize * 0.25,
                      class: "region-tag", "font-size": fontSize, "aria-hidden": "true",
                      text: String(region.reading_index + 1) }));
  });
  canvas.replaceChildren(defs, background, ...regions);
}

export function drawLegend(legend, page) {
  const labels = [...new Set((page.regions || []).map((region) => region.label))].sort();
  const statuses = [...new Set((page.regions || []).map((region) => region.status))].filter((s) => STATUS_NOTES[s]);
  const lowLines = (page.regions || []).some((region) => regionTrust(region).lowLines);
  const lowLineKey = el("li", {}, el("span", { class: "swatch low-line", "aria-hidden": "true" }), "low-confidence line");
  legend.replaceChildren(
    ...labels.map((label) => el("li", {}, el("span", { class: `swatch label-${safeClass(label)}`, "aria-hidden": "true" }),
                                label.replace(/_/g, " "))),
    ...statuses.map((status) => el("li", {}, el("span", { class: `swatch status-${status}`, "aria-hidden": "true" }),
                                   STATUS_NOTES[status])),
    ...(lowLines ? [lowLineKey] : []));
}

// Labels and statuses come from the service; only known-safe characters reach a class name.
export function safeClass(value) {
  return String(value).replace(/[^a-z0-9_-]/gi, "_");
}
