// Drawing one page of a result: the page image with its regions over it (an
// SVG whose viewBox is the page's pixel size, so boxes in page pixels land on
// the image at any display size), the regions' text in reading order, and a
// legend. Everything is built from elements and text, never from HTML strings.
// Region elements carry data-region (their index on the page), which is how
// the result view links a box to its text.

import { el, plural, svgEl } from "./dom.js";

export const STATUS_NOTES = { fallback: "from the PDF text layer", failed: "not read" };

export function drawPageNote(node, page) {
  const regions = page.regions || [];
  const count = (status) => regions.filter((region) => region.status === status).length;
  const parts = [plural(regions.length, "region")];
  if (count("fallback")) parts.push(`${count("fallback")} from the PDF text layer`);
  if (count("failed")) parts.push(`${count("failed")} not read`);
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
    const label = `Region ${region.reading_index + 1}: ${region.label}` +
                  (STATUS_NOTES[region.status] ? `, ${STATUS_NOTES[region.status]}` : "");
    return svgEl("g", { class: `region label-${safeClass(region.label)} status-${safeClass(region.status)}`,
                        "data-region": index, tabindex: 0, role: "button", "aria-label": label,
                        "aria-pressed": "false" },
      svgEl("title", { text: region.reason ? `${label}. ${region.reason}` : label }),
      svgEl("rect", { x: x0, y: y0, width: Math.max(1, x1 - x0), height: Math.max(1, y1 - y0),
                      class: "region-box" }),
      svgEl("text", { x: x0 + fontSize * 0.2, y: y0 - fontSize * 0.25 < fontSize ? y0 + fontSize : y0 - fontSize * 0.25,
                      class: "region-tag", "font-size": fontSize, "aria-hidden": "true",
                      text: String(region.reading_index + 1) }));
  });
  canvas.replaceChildren(defs, background, ...regions);
}

export function listRegions(list, page) {
  const items = (page.regions || []).map((region, index) => {
    const text = region.text || "";
    const body = region.task === "skip" && !text
      ? el("p", { class: "region-text muted", text: "A figure: no text to read." })
      : el("p", { class: "region-text", text: text || "(no text)" });
    return el("li", { class: `region-item label-${safeClass(region.label)} status-${safeClass(region.status)}`,
                      "data-region": index, tabindex: 0, role: "button", "aria-pressed": "false" },
      el("div", { class: "region-meta" },
        el("span", { class: "region-number", text: String(region.reading_index + 1) }),
        el("span", { class: `label-tag label-${safeClass(region.label)}`, text: region.label.replace(/_/g, " ") }),
        region.role !== "body" && region.role !== region.label
          ? el("span", { class: "role-tag", text: region.role }) : null,
        STATUS_NOTES[region.status]
          ? el("span", { class: `status-tag status-${safeClass(region.status)}`, text: STATUS_NOTES[region.status] })
          : null),
      body,
      region.reason ? el("p", { class: "region-reason", text: region.reason }) : null);
  });
  list.replaceChildren(...items);
  return items.length;
}

export function drawLegend(legend, page) {
  const labels = [...new Set((page.regions || []).map((region) => region.label))].sort();
  const statuses = [...new Set((page.regions || []).map((region) => region.status))].filter((s) => STATUS_NOTES[s]);
  legend.replaceChildren(
    ...labels.map((label) => el("li", {}, el("span", { class: `swatch label-${safeClass(label)}`, "aria-hidden": "true" }),
                                label.replace(/_/g, " "))),
    ...statuses.map((status) => el("li", {}, el("span", { class: `swatch status-${status}`, "aria-hidden": "true" }),
                                   STATUS_NOTES[status])));
}

// Labels and statuses come from the service; only known-safe characters reach a class name.
function safeClass(value) {
  return String(value).replace(/[^a-z0-9_-]/gi, "_");
}
