// The "New job" panel: files from drag-and-drop or the picker, job options,
// and the upload itself. The service enforces every limit; the page shows the
// limits up front, flags files that will be refused, and shows the service's
// own message when one is.

import { byId, el, formatBytes, plural, showMessage } from "./dom.js";

// What the API documents, used until /v1/limits answers (or if it cannot).
const DOCUMENTED_LIMITS = {
  max_upload_bytes: 100 * 1024 * 1024, max_files_per_job: 20, max_pages: 1000, render_dpi: 150,
  max_render_dpi: 600, formats: ["md", "json", "txt", "pdf", "hocr", "alto"],
  default_formats: ["md", "json", "txt", "pdf"],
  file_types: ["pdf", "png", "jpeg", "tiff", "docx", "odt", "rtf", "pptx", "odp", "xlsx", "ods", "html", "epub"],
  file_extensions: [".pdf", ".png", ".jpg", ".jpeg", ".tif", ".tiff", ".docx", ".docm", ".odt", ".rtf", ".pptx",
                    ".pptm", ".odp", ".xlsx", ".xlsm", ".ods", ".html", ".htm", ".xhtml", ".epub"],
  text_layer: "auto",
};
const FORMAT_NAMES = { md: "Markdown", json: "JSON", txt: "Text", pdf: "Searchable PDF", hocr: "hOCR", alto: "ALTO XML" };

export class UploadPanel {
  constructor(getApi, onSubmitted) {
    this.getApi = getApi;
    this.onSubmitted = onSubmitted;
    this.files = [];
    this.limits = DOCUMENTED_LIMITS;
    this.form = byId("upload-form");
    this.dropZone = byId("drop-zone");
    this.fileInput = byId("file-input");
    this.fileList = byId("selected-files");
    this.submitButton = byId("upload-button");
    this.messages = byId("upload-messages");
    this.session = 0;   // bumped on sign-out; an upload still running for an older session writes nothing
    this.bindEvents();
    this.setLimits(DOCUMENTED_LIMITS);
  }

  bindEvents() {
    byId("choose-files").addEventListener("click", () => this.fileInput.click());
    this.fileInput.addEventListener("change", () => {
      this.addFiles(this.fileInput.files);
      this.fileInput.value = "";
    });
    for (const name of ["dragenter", "dragover"]) {
      this.dropZone.addEventListener(name, (event) => {
        event.preventDefault();
        this.dropZone.classList.add("dragging");
      });
    }
    for (const name of ["dragleave", "drop"]) {
      this.dropZone.addEventListener(name, () => this.dropZone.classList.remove("dragging"));
    }
    this.dropZone.addEventListener("drop", (event) => {
      event.preventDefault();
      this.addFiles(event.dataTransfer.files);
    });
    // A file dropped beside the zone would otherwise replace the page with the file.
    window.addEventListener("dragover", (event) => event.preventDefault());
    window.addEventListener("drop", (event) => event.preventDefault());
    this.form.addEventListener("submit", (event) => {
      event.preventDefault();
      this.submit();
    });
  }

  setLimits(limits) {
    this.limits = { ...DOCUMENTED_LIMITS, ...limits };
    const kinds = this.limits.file_types.map((kind) => kind.toUpperCase()).join(", ");
    byId("limits").textContent = `${kinds} · up to ${formatBytes(this.limits.max_upload_bytes)} per file · ` +
      `${plural(this.limits.max_pages, "page")} per document · ${plural(this.limits.max_files_per_job, "file")} per job`;
    this.fileInput.accept = this.limits.file_extensions.join(",");
    const dpi = byId("option-dpi");
    dpi.max = String(this.limits.max_render_dpi);
    dpi.placeholder = `${this.limits.render_dpi} (default)`;
    byId("option-text-layer").value = this.limits.text_layer;   // the service's default
    const formats = byId("option-formats");
    formats.replaceChildren(...this.limits.formats.map((format) => el("label", { class: "check" },
      el("input", { type: "checkbox", name: "formats", value: format,
                    checked: (this.limits.default_formats || DOCUMENTED_LIMITS.default_formats).includes(format),
                    disabled: format === "json", title: format === "json" ? "JSON is always produced" : null }),
      ` ${FORMAT_NAMES[format] || format}`)));
    this.renderFiles();
  }

  // Registered extraction schemas (GET /v1/schemas); the choice is offered only when there are some.
  setSchemas(schemas) {
    const select = byId("option-schema");
    select.replaceChildren(el("option", { value: "", text: "No extraction" }), ...schemas.map((schema) =>
      el("option", { value: schema.name, text: schema.title ? `${schema.name} — ${schema.title}` : schema.name })));
    const hint = byId("schema-hint");
    const describe = () => {
      const chosen = schemas.find((schema) => schema.name === select.value);
      hint.textContent = chosen ? `${chosen.description ? `${chosen.description} ` : ""}Fields: ` +
                                  `${chosen.properties.join(", ") || "none listed"}.` : "";
      hint.hidden = !chosen;
    };
    select.onchange = describe;
    for (const node of this.form.querySelectorAll(".schema-option")) node.hidden = schemas.length === 0;
    describe();
  }

  // On sign-out: nothing the last user picked, typed, chose or was told stays for the next one.
  reset() {
    this.session += 1;
    this.files = [];
    this.form.reset();               // pages, DPI, text layer, schema, "one job", and the file input
    this.fileInput.value = "";
    this.dropZone.classList.remove("dragging");
    for (const details of this.form.querySelectorAll("details")) details.open = false;
    this.messages.replaceChildren();
    this.messages.hidden = true;
    this.setSchemas([]);             // the schema choice and its hint are hidden again
    this.setLimits(DOCUMENTED_LIMITS);   // re-renders the (now empty) file list and the Upload button
  }

  addFiles(fileList) {
    for (const file of fileList) {
      const known = this.files.some((f) => f.name === file.name && f.size === file.size &&
                                          f.lastModified === file.lastModified);
      if (!known) this.files.push(file);
    }
    showMessage(this.messages, "");
    this.renderFiles();
  }

  renderFiles() {
    const items = this.files.map((file, index) => {
      const warnings = this.warningsFor(file);
      return el("li", { class: warnings.length ? "file warn" : "file" },
        el("span", { class: "file-name", text: file.name }),
        el("span", { class: "file-size", text: formatBytes(file.size) }),
        el("button", { type: "button", class: "link-button", text: "Remove",
                       "aria-label": `Remove ${file.name}`, onclick: () => this.removeFile(index) }),
        ...warnings.map((text) => el("p", { class: "file-warning", text })));
    });
    this.fileList.replaceChildren(...items);
    this.submitButton.disabled = this.files.length === 0;
    this.submitButton.textContent = this.files.length > 1 ? `Upload ${this.files.length} files` : "Upload";
  }

  warningsFor(file) {
    const warnings = [];
    if (file.size > this.limits.max_upload_bytes) {
      warnings.push(`Larger than the ${formatBytes(this.limits.max_upload_bytes)} limit: the service will refuse it.`);
    }
    const extension = file.name.includes(".") ? file.name.slice(file.name.lastIndexOf(".")).toLowerCase() : "";
    if (!this.limits.file_extensions.includes(extension)) {
      warnings.push("Not named like a document the service reads (PDF, image, office, HTML or EPUB); " +
                    "it decides by its content.");
    }
    return warnings;
  }

  removeFile(index) {
    this.files.splice(index, 1);
    this.renderFiles();
    (this.fileList.querySelector("button") || byId("choose-files")).focus();
  }

  options() {
    const pages = byId("option-pages").value.trim();
    const dpi = byId("option-dpi").value.trim();
    const formats = [...this.form.querySelectorAll("input[name=formats]:checked")].map((input) => input.value);
    return { pages, dpi, formats, schema: byId("option-schema").value, textLayer: byId("option-text-layer").value,
             languages: byId("option-languages").value.trim() };
  }

  async submit() {
    const api = this.getApi();
    if (!this.files.length || !api) return;
    const session = this.session;
    const { pages, dpi, formats, schema, textLayer, languages } = this.options();
    const oneJob = byId("option-one-job").checked;
    const batches = oneJob ? [this.files] : this.files.map((file) => [file]);
    this.submitButton.disabled = true;
    this.messages.replaceChildren();
    this.messages.hidden = false;
    const refused = [];
    for (const batch of batches) {
      const names = batch.map((file) => file.name).join(", ");
      const line = el("p", { class: "upload-line", text: `${names}: uploading…` });
      const bar = el("progress", { max: "1", value: "0", "aria-label": `Upload of ${names}` });
      this.messages.append(el("div", { class: "upload-status" }, line, bar));
      const form = new FormData();
      for (const file of batch) form.append("files", file, file.name);
      if (pages) form.append("pages", pages);
      if (dpi) form.append("dpi", dpi);
      if (textLayer) form.append("text_layer", textLayer);
      if (languages) form.append("languages", languages);
      form.append("formats", formats.join(","));
      if (schema) form.append("schema", schema);
      try {
        const job = await api.submit(form, (fraction) => { bar.value = fraction; });
        if (session !== this.session) return;   // signed out meanwhile: the page belongs to someone else now
        line.textContent = `${names}: queued (${plural(job.pages_total, "page")}).`;
        bar.remove();
        this.onSubmitted(job);
      } catch (error) {
        if (session !== this.session) return;
        bar.remove();
        line.textContent = `${names} was refused: ${error.message}`;
        line.className = "upload-line error";
        line.setAttribute("role", "alert");
        refused.push(...batch);
      }
    }
    // Keep only what was refused, so it can be fixed (options) or removed and sent again.
    this.files = refused;
    this.renderFiles();
  }
}
