// The result view: one job's result, page by page (drawn by page_drawing.js,
// its text by region_list.js), with a region on the page and its text linked
// both ways, a filter down to what needs a person's look, page navigation, the
// Markdown view (built from the result JSON by result_markdown.js, rendered by
// markdown_view.js), the extracted fields when the job had a schema, and
// downloads. Every image and file is fetched with the key and shown from a
// blob: URL, since a plain src or href cannot carry the Authorization header.

import { byId, el, plural, saveBlob, showMessage } from "./dom.js";
import { loadRenderer } from "./markdown_view.js";
import { drawLegend, drawPage, drawPageNote } from "./page_drawing.js";
import { listRegions } from "./region_list.js";
import { pageParts } from "./result_markdown.js";

const DOWNLOADS = [["md", "Markdown"], ["json", "JSON"], ["txt", "Text"], ["pdf", "Searchable PDF"], ["hocr", "hOCR"],
  ["alto", "ALTO XML"]];

export class ResultView {
  constructor(getApi, announce) {
    this.getApi = getApi;
    this.announce = announce;
    this.section = byId("result");
    this.placeholder = byId("result-placeholder");
    this.error = byId("result-error");
    this.canvas = byId("page-canvas");
    this.regionList = byId("region-list");
    this.pageSelect = byId("page-select");
    this.docSelect = byId("doc-select");
    this.needsLookOnly = byId("needs-look-only");
    this.imageUrls = new Map();   // "file/page" -> object URL of the fetched page image
    this.token = 0;               // bumped on every navigation; late answers for older ones are dropped
    this.bindEvents();
  }

  bindEvents() {
    byId("close-result").addEventListener("click", () => this.close());
    byId("prev-page").addEventListener("click", () => this.step(-1));
    byId("next-page").addEventListener("click", () => this.step(1));
    this.pageSelect.addEventListener("change", () => this.showPage(this.docIndex, Number(this.pageSelect.value)));
    this.docSelect.addEventListener("change", () => {
      this.showPage(Number(this.docSelect.value), 0);
      if (!byId("markdown-panel").hidden) this.loadMarkdown();
    });
    this.needsLookOnly.addEventListener("change", () => this.applyFilter());
    for (const tab of this.section.querySelectorAll("[role=tab]")) {
      tab.addEventListener("click", () => this.showTab(tab.dataset.tab));
    }
    // On the document, not the section: a page button that just went disabled drops focus to <body>.
    document.addEventListener("keydown", (event) => this.onKey(event));
    const regionOf = (event) => event.target.closest("[data-region]");
    this.canvas.addEventListener("click", (event) => {
      const box = regionOf(event);
      if (box) this.select(Number(box.dataset.region), box);
    });
    // A box on the page is an SVG group with role=button: Enter and Space are ours to handle.
    this.canvas.addEventListener("keydown", (event) => {
      const box = regionOf(event);
      if (!box || (event.key !== "Enter" && event.key !== " ")) return;
      event.preventDefault();
      this.select(Number(box.dataset.region), box);
    });
    // In the text, the item's button selects (keys included, as any button); a click elsewhere on the
    // item does too, unless it ends a text selection or lands in a code block (scrolled, copied).
    this.regionList.addEventListener("click", (event) => {
      const item = regionOf(event);
      const onButton = event.target.closest("button.region-select");
      if (!item || (!onButton && (event.target.closest("pre") || !window.getSelection().isCollapsed))) return;
      this.select(Number(item.dataset.region), item);
    });
    byId("downloads").addEventListener("click", (event) => {
      const button = event.target.closest("button[data-format]");
      if (button) this.download(button.dataset.format, button);
    });
  }

  async open(jobId) {
    const token = ++this.token;
    this.releaseImages();
    showMessage(this.error, "");
    this.section.hidden = false;
    this.placeholder.hidden = true;
    byId("result-title").textContent = "Loading result…";
    try {
      const [job, result] = await Promise.all([this.getApi().getJob(jobId), this.getApi().resultJson(jobId)]);
      if (token !== this.token) return;
      this.job = job;
      this.result = result;
      this.markdownDoc = null;
      this.extractionLoaded = false;
    } catch (error) {
      if (token !== this.token) return;
      byId("result-title").textContent = "Result";
      showMessage(this.error, `The result could not be loaded: ${error.message}`);
      return;
    }
    const documents = this.result.documents;
    byId("result-title").textContent = documents.length === 1 ? documents[0].filename : `${documents.length} documents`;
    this.docSelect.replaceChildren(...documents.map((doc, index) => el("option", { value: index, text: doc.filename })));
    byId("doc-picker").hidden = documents.length < 2;
    this.renderDownloads();
    byId("tab-extraction").hidden = !this.job.extraction;
    history.replaceState(null, "", `#job=${encodeURIComponent(jobId)}`);
    this.showTab("page");
    this.showPage(0, 0);
    byId("result-title").focus();
  }

  close() {
    this.token += 1;
    this.releaseImages();
    this.job = null;
    this.result = null;
    this.section.hidden = true;
    this.placeholder.hidden = false;
    history.replaceState(null, "", location.pathname + location.search);
  }

  // On sign-out: close, and empty every pane, so nothing of this user's documents stays in the page.
  clear() {
    this.close();
    for (const id of ["region-list", "page-canvas", "markdown-preview", "extraction-documents", "downloads",
                      "doc-select", "page-select", "legend"]) {
      byId(id).replaceChildren();
    }
    for (const id of ["result-title", "page-count", "page-note", "extraction-state", "needs-look-count"]) {
      byId(id).textContent = "";
    }
    this.needsLookOnly.checked = false;
    showMessage(this.error, "");
  }

  // The open job was deleted from the list.
  forget(jobId) {
    if (this.job && this.job.id === jobId) this.close();
  }

  step(delta) {
    const next = this.pageIndex + delta;
    if (this.result && next >= 0 && next < this.currentDocument.pages.length) this.showPage(this.docIndex, next);
  }

  onKey(event) {
    if (!this.result || this.section.hidden || event.altKey || event.ctrlKey || event.metaKey) return;
    if (event.target !== document.body && !this.section.contains(event.target)) return;
    // Arrows in a field, or in a box that scrolls sideways (code, a table), stay there.
    if (event.target.closest("input, select, textarea, pre, .md-table, [data-math=display]")) return;
    if (event.target.getAttribute("role") === "tab") return this.onTabKey(event);
    const delta = { ArrowLeft: -1, PageUp: -1, ArrowRight: 1, PageDown: 1 }[event.key];
    if (delta && !byId("page-panel").hidden) {
      event.preventDefault();
      this.step(delta);
    }
  }

  // Arrow keys move between tabs (the WAI-ARIA tabs pattern); Tab leaves the tab list.
  onTabKey(event) {
    const tabs = [...this.section.querySelectorAll("[role=tab]")].filter((tab) => !tab.hidden);
    const delta = { ArrowLeft: -1, ArrowRight: 1 }[event.key];
    if (!delta) return;
    event.preventDefault();
    const next = tabs[(tabs.indexOf(event.target) + delta + tabs.length) % tabs.length];
    next.focus();
    this.showTab(next.dataset.tab);
  }

  get currentDocument() {
    return this.result.documents[this.docIndex];
  }

  showPage(docIndex, pageIndex) {
    const token = ++this.token;
    this.docIndex = docIndex;
    this.pageIndex = pageIndex;
    this.selected = null;
    const pages = this.currentDocument.pages;
    const page = pages[pageIndex];
    this.docSelect.value = String(docIndex);
    this.pageSelect.replaceChildren(...pages.map((p, index) =>
      el("option", { value: index, text: `Page ${p.page}${p.state === "done" ? "" : ` (${p.state})`}` })));
    this.pageSelect.value = String(pageIndex);
    byId("page-count").textContent = `${pageIndex + 1} of ${pages.length}`;
    const [prev, next] = [byId("prev-page"), byId("next-page")];
    prev.disabled = pageIndex === 0;
    next.disabled = pageIndex === pages.length - 1;
    // Keep keyboard focus on the page buttons when the one in use goes disabled at either end.
    if (document.activeElement === prev && prev.disabled) next.focus();
    if (document.activeElement === next && next.disabled) prev.focus();
    drawPageNote(byId("page-note"), page);
    drawPage(this.canvas, page, null);
    byId("no-regions").hidden = listRegions(this.regionList, page) > 0;
    drawLegend(byId("legend"), page);
    this.applyFilter();
    if (page.width) this.loadImage(page, token);
  }

  async loadImage(page, token) {
    const key = `${this.docIndex + 1}/${page.page}`;
    try {
      if (!this.imageUrls.has(key)) {
        const blob = await this.getApi().pageImage(this.job.id, this.docIndex + 1, page.page);
        this.imageUrls.set(key, URL.createObjectURL(blob));
      }
      if (token !== this.token) return;
      drawPage(this.canvas, page, this.imageUrls.get(key));
      this.mark(this.selected);   // the boxes were drawn again, over the image
      this.applyFilter();
    } catch (error) {
      if (token === this.token) showMessage(this.error, `The page image could not be loaded: ${error.message}`);
    }
  }

  // Selects region `index` in both the drawing and the text; `origin` is the element clicked.
  select(index, origin) {
    this.selected = this.selected === index ? null : index;
    this.mark(this.selected);
    if (this.selected === null) return;
    const region = this.currentDocument.pages[this.pageIndex].regions[index];
    const item = this.regionList.querySelector(`[data-region="${index}"]`);
    const box = this.canvas.querySelector(`[data-region="${index}"]`);
    const other = origin && this.canvas.contains(origin) ? item : box;
    other?.scrollIntoView({ block: "nearest", inline: "nearest" });
    this.announce(`Region ${region.reading_index + 1} selected: ${region.label}`);
  }

  mark(index) {
    for (const node of this.section.querySelectorAll("[data-region]")) {
      const on = index !== null && Number(node.dataset.region) === index;
      node.classList.toggle("selected", on);
      const control = node.matches("[role=button]") ? node : node.querySelector("button.region-select");
      control?.setAttribute("aria-pressed", on ? "true" : "false");
    }
  }

  // "Only what needs a look": regions trust.js flags (not read, fallback, low-confidence lines, a
  // reading that differs from the text layer) stay, on the page and in the text; the rest step aside.
  applyFilter() {
    if (!this.result) return;
    const only = this.needsLookOnly.checked;
    const regions = this.currentDocument.pages[this.pageIndex].regions || [];
    const flagged = this.regionList.querySelectorAll("[data-needs-look]").length;
    for (const node of this.section.querySelectorAll("[data-region]")) {
      const shown = !only || node.hasAttribute("data-needs-look");
      node.classList.toggle("filtered-out", !shown);
      if (node.matches("g[role=button]")) node.setAttribute("tabindex", shown ? "0" : "-1");
    }
    byId("needs-look-count").textContent = flagged
      ? `${flagged} of ${plural(regions.length, "region")} on this page need${flagged === 1 ? "s" : ""} a look.`
      : "Nothing on this page needs a look.";
  }

  showTab(name) {
    for (const tab of this.section.querySelectorAll("[role=tab]")) {
      const on = tab.dataset.tab === name;
      tab.setAttribute("aria-selected", on ? "true" : "false");
      tab.tabIndex = on ? 0 : -1;
      byId(tab.getAttribute("aria-controls")).hidden = !on;
    }
    byId("page-nav").hidden = name !== "page";   // pages belong to the page view only
    if (name === "markdown") this.loadMarkdown();
    if (name === "extraction") this.loadExtraction();
  }

  async loadExtraction() {
    if (this.extractionLoaded || !this.job?.extraction) return;
    const job = this.job;
    const { schema_name: schemaName, state, reason } = job.extraction;
    const stateNode = byId("extraction-state");
    const documents = byId("extraction-documents");
    stateNode.textContent = `Schema ${schemaName}: ${state}${reason ? ` — ${reason}` : "."}`;
    stateNode.classList.toggle("error", state === "failed" || state === "partial");
    documents.replaceChildren();
    if (!hasExtraction(job)) return;
    try {
      const extraction = JSON.parse(await this.getApi().resultText(job.id, "extraction"));
      if (this.job !== job) return;
      this.extractionLoaded = true;
      documents.replaceChildren(...extraction.documents.map((doc) => el("section", { class: "extraction-document" },
        el("h3", { text: doc.filename }),
        el("p", { class: doc.state === "done" ? "muted" : "error",
                  text: doc.state === "done" ? "Extracted; the fields validate against the schema."
                                             : `Not extracted: ${doc.reason || "no reason given"}` }),
        doc.data !== null && doc.data !== undefined
          ? el("pre", { class: "extraction-data", text: JSON.stringify(doc.data, null, 2) }) : null)));
    } catch (error) {
      if (this.job === job) documents.replaceChildren(el("p", { class: "error", role: "alert",
        text: `The extracted fields could not be loaded: ${error.message}` }));
    }
  }

  // The current document as Markdown, page by page, furniture left out (result_markdown.js).
  async loadMarkdown() {
    if (!this.result || this.markdownDoc === this.docIndex) return;
    const preview = byId("markdown-preview");
    const job = this.job;
    const docIndex = this.docIndex;
    preview.replaceChildren(el("p", { class: "muted", text: "Loading the Markdown view…" }));
    preview.setAttribute("aria-busy", "true");
    try {
      const render = await loadRenderer();
      if (this.job !== job || this.docIndex !== docIndex) return;
      preview.replaceChildren(...this.currentDocument.pages.map((page) => markdownPage(page, render)));
      this.markdownDoc = docIndex;
      for (const image of preview.querySelectorAll("img[data-figure]")) this.loadFigure(job, image);
    } catch (error) {
      if (this.job === job) preview.replaceChildren(el("p", { class: "error", role: "alert",
        text: `The Markdown view could not be shown: ${error.message}` }));
    } finally {
      preview.removeAttribute("aria-busy");
    }
  }

  async loadFigure(job, image) {
    try {
      const url = URL.createObjectURL(await this.getApi().figure(job.id, image.dataset.figure));
      this.imageUrls.set(`figure/${image.dataset.figure}`, url);
      image.src = url;
    } catch (error) {
      image.replaceWith(el("span", { class: "md-image-ref", text: `[figure ${image.dataset.figure}: ${error.message}]` }));
    }
  }

  renderDownloads() {
    const formats = new Set([...this.job.formats, "json"]);
    const buttons = DOWNLOADS.map(([format, name]) => el("button", {
      type: "button", "data-format": format, disabled: !formats.has(format),
      title: formats.has(format) ? null : `${name} was not requested for this job`,
      text: `${name} (.${format})` }));
    if (hasExtraction(this.job)) {
      buttons.push(el("button", { type: "button", "data-format": "extraction", text: "Extracted fields (.json)" }));
    }
    byId("downloads").replaceChildren(...buttons);
  }

  async download(format, button) {
    button.disabled = true;
    showMessage(this.error, "");
    try {
      const blob = await this.getApi().resultBlob(this.job.id, format);
      saveBlob(blob, `${downloadStem(this.job)}.${format === "extraction" ? "extraction.json" : format}`);
    } catch (error) {
      showMessage(this.error, `The ${format} download failed: ${error.message}`);
    } finally {
      button.disabled = false;
    }
  }

  releaseImages() {
    for (const url of this.imageUrls.values()) URL.revokeObjectURL(url);
    this.imageUrls.clear();
  }
}

// One page of the Markdown view: a page mark, a note when the page was not read in full, its body.
// Code blocks and wide tables scroll sideways; they take focus so the keyboard can scroll them.
function markdownPage(page, render) {
  const section = el("section", { class: "md-page", "aria-label": `Page ${page.page}` },
    el("p", { class: "md-page-mark", "aria-hidden": "true", text: `Page ${page.page}` }));
  if (page.state !== "done") {
    section.append(el("p", { class: "md-note md-warning", text: `Page ${page.page} ${page.state}` +
                                                                (page.reason ? `: ${page.reason}` : ".") }));
  }
  let markdown = [];   // parts in a row render as one text, as they stand in a Markdown file
  const flush = () => {
    if (markdown.length) section.append(render(markdown.join("\n\n")));
    markdown = [];
  };
  for (const part of pageParts(page)) {
    if (part.markdown) {
      markdown.push(part.markdown);
    } else {
      flush();
      section.append(el("p", { class: `md-note${part.warning ? " md-warning" : ""}`, text: part.note }));
    }
  }
  flush();
  for (const table of section.querySelectorAll("table")) {
    const wrapper = el("div", { class: "md-table", tabindex: 0 });
    table.replaceWith(wrapper);
    wrapper.append(table);
  }
  for (const pre of section.querySelectorAll("pre")) pre.tabIndex = 0;
  return section;
}

// An extraction file exists once the job has ended with results (done, partial or failed).
function hasExtraction(job) {
  return Boolean(job.extraction) && ["done", "partial", "failed"].includes(job.extraction.state);
}

function downloadStem(job) {
  if (job.files.length !== 1) return `ocrserve-${job.id.slice(0, 8)}`;
  const name = job.files[0].filename.replace(/\.[A-Za-z0-9]{1,5}$/, "");
  return name.replace(/[^\w.-]+/g, "_").slice(0, 100) || `ocrserve-${job.id.slice(0, 8)}`;
}
