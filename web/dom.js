// Small DOM helpers. Elements are built with textContent and attributes, never
// from HTML strings, so text from documents and from the service cannot become markup.

const SVG_NS = "http://www.w3.org/2000/svg";

// el("button", {class: "primary", text: "Go", onclick: handler}, child, ...)
export function el(tag, props = {}, ...children) {
  return applyProps(document.createElement(tag), props, children);
}

export function svgEl(tag, props = {}, ...children) {
  return applyProps(document.createElementNS(SVG_NS, tag), props, children);
}

function applyProps(node, props, children) {
  for (const [name, value] of Object.entries(props)) {
    if (value === undefined || value === null || value === false) continue;
    if (name === "text") node.textContent = value;
    else if (name === "class") node.setAttribute("class", value);
    else if (name === "dataset") Object.assign(node.dataset, value);
    else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  node.append(...children.filter((child) => child !== null && child !== undefined && child !== false));
  return node;
}

const ESCAPES = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

// For the few places that write HTML text (markdown-it's renderer rules): text as text.
export function escapeHtml(text) {
  return String(text).replace(/[&<>"']/g, (ch) => ESCAPES[ch]);
}

export function byId(id) {
  const node = document.getElementById(id);
  if (!node) throw new Error(`the page has no #${id}`);
  return node;
}

// Shows `message` in `node` (hidden when empty). Alerts use role="alert" in the HTML.
export function showMessage(node, message) {
  node.textContent = message || "";
  node.hidden = !message;
}

export function formatBytes(count) {
  const units = ["bytes", "KB", "MB", "GB"];
  let value = count;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  const shown = unit === 0 ? String(value) : value >= 10 ? value.toFixed(0) : value.toFixed(1).replace(/\.0$/, "");
  return `${shown} ${units[unit]}`;
}

export function formatTime(iso) {
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : date.toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" });
}

// Saves a Blob under `filename` through a temporary link (the key cannot go in a plain href).
export function saveBlob(blob, filename) {
  const url = URL.createObjectURL(blob);
  const link = el("a", { href: url, download: filename, hidden: true });
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}

export function plural(count, word, many = `${word}s`) {
  return `${count} ${count === 1 ? word : many}`;
}
