// The jobs list: every job of this key, updated without a reload: a running
// job's progress comes live from its event stream (job_streams.js), and a job
// whose stream fails is polled every second instead; the list itself is polled
// slowly for jobs made elsewhere. Each job's element is built once and then
// updated in place, so focus and a half-confirmed delete survive the next poll.

import { byId, el, formatTime, plural, showMessage } from "./dom.js";
import { JobStreams } from "./job_streams.js";

const ACTIVE_POLL_MS = 1000;      // while a queued or running job has no live stream
const IDLE_POLL_MS = 5000;
const MAX_PAGE_CHIPS = 200;       // past this many pages, the counts say the rest
const CONFIRM_WINDOW_MS = 5000;   // a Delete click must be confirmed within this long
const ACTIVE_STATES = new Set(["queued", "running"]);
const STATE_RANK = { queued: 0, running: 1, done: 2, failed: 2, cancelled: 2 };
const LIST_LIMIT = 100;           // the API's largest page of jobs

export class JobsPanel {
  constructor(getApi, onOpen, onDeleted, announce) {
    this.getApi = getApi;
    this.onOpen = onOpen;
    this.onDeleted = onDeleted;
    this.announce = announce;
    this.list = byId("job-list");
    this.empty = byId("jobs-empty");
    this.error = byId("jobs-error");
    this.items = new Map();   // job id -> {node, parts, job, detailStamp, note}
    this.timer = null;
    this.running = false;
    this.session = 0;   // bumped on sign-out: answers for an earlier session are dropped
    this.streams = new JobStreams(getApi, (jobId, data) => this.applyEvent(jobId, data), () => this.refresh());
    byId("refresh-jobs").addEventListener("click", () => this.refresh());
    // A background tab polls slowly; coming back catches up at once.
    document.addEventListener("visibilitychange", () => { if (!document.hidden) this.refresh(); });
  }

  start() {
    this.running = true;
    this.refresh();
  }

  // On sign-out: no job, note or error of this user stays, and a list still on its way is dropped.
  stop() {
    this.running = false;
    this.session += 1;
    clearTimeout(this.timer);
    this.streams.closeAll();
    this.items.clear();
    this.list.replaceChildren();
    showMessage(this.error, "");
    this.empty.hidden = false;
    byId("jobs-more").hidden = true;
  }

  // Called after an upload: show the job at once, before the next poll.
  add(job) {
    this.upsert(job, true);
    this.order([job.id, ...[...this.items.keys()].filter((id) => id !== job.id)]);
    this.refresh();
  }

  async refresh() {
    clearTimeout(this.timer);
    if (!this.running) return;
    const session = this.session;
    const api = this.getApi();
    try {
      const { jobs } = await api.listJobs(LIST_LIMIT);
      if (!this.running || session !== this.session) return;
      byId("jobs-more").hidden = jobs.length < LIST_LIMIT;
      // Per-page states come with each job's own view: fetched while a job runs, and once more
      // whenever the job has changed since (it has just ended, say).
      // A job with a live stream is updated by its events instead.
      const stale = jobs.filter((job) => (ACTIVE_STATES.has(job.state) && !this.streams.isLive(job.id)) ||
                                         this.items.get(job.id)?.detailStamp !== stamp(job));
      for (const summary of jobs) this.upsert(summary, false);
      const listed = new Set(jobs.map((job) => job.id));
      for (const id of [...this.items.keys()]) if (!listed.has(id)) this.drop(id);
      this.order(jobs.map((job) => job.id));
      const answers = await Promise.allSettled(stale.map((job) => api.getJob(job.id)));
      if (session !== this.session) return;
      for (const answer of answers) if (answer.status === "fulfilled") this.upsert(answer.value, true);
      for (const job of jobs) if (ACTIVE_STATES.has(job.state)) this.streams.watch(job.id);
      // A job deleted since the list was read answers 404; the next poll drops it.
      const failure = answers.find((answer) => answer.status === "rejected" && answer.reason.status !== 404);
      if (failure) throw failure.reason;
      showMessage(this.error, "");
    } catch (error) {
      if (error.status === 401 || session !== this.session) return;   // signed out
      showMessage(this.error, `The jobs list could not be updated: ${error.message}`);
    }
    if (!this.running || session !== this.session) return;
    const active = [...this.items.values()].some((item) => ACTIVE_STATES.has(item.job.state) &&
                                                              !this.streams.isLive(item.job.id));
    this.timer = setTimeout(() => this.refresh(), active && !document.hidden ? ACTIVE_POLL_MS : IDLE_POLL_MS);
  }

  // One event of a job's stream: a page's new state, or the job's; at the job's end, its whole view.
  // A stream starts by replaying the job's log, so nothing here moves a state or a count backwards.
  applyEvent(jobId, data) {
    const item = this.items.get(jobId);
    if (!item) return;
    const counts = { pages_done: Math.max(data.pages_done, item.job.pages_done || 0), pages_total: data.pages_total };
    if (data.type.startsWith("page.")) {
      const pages = (item.job.pages || []).map((page) => page.file === data.file && page.page === data.page
        ? { ...page, state: data.state, reason: data.reason } : page);
      this.upsert({ ...item.job, ...counts, pages }, false);
      return;
    }
    if (STATE_RANK[data.state] <= STATE_RANK[item.job.state]) {
      this.render(item);   // a replayed state: only how the progress arrives has changed
      return;
    }
    this.upsert({ ...item.job, ...counts, state: data.state, error: data.error || item.job.error }, false);
    if (!ACTIVE_STATES.has(data.state)) this.refresh();
  }

  upsert(job, detailed) {
    let item = this.items.get(job.id);
    if (!item) {
      item = this.build(job);
      this.items.set(job.id, item);
    } else if (item.job.state !== job.state && ACTIVE_STATES.has(item.job.state)) {
      this.announce(`${jobName(job)}: ${job.state}`);
    }
    item.job = { ...item.job, ...job };
    if (detailed) item.detailStamp = stamp(job);
    this.render(item);
  }

  order(ids) {
    const nodes = ids.map((id) => this.items.get(id)?.node).filter(Boolean);
    nodes.forEach((node, index) => {
      if (this.list.children[index] !== node) this.list.insertBefore(node, this.list.children[index] || null);
    });
    this.empty.hidden = this.items.size > 0;
  }

  drop(id) {
    this.items.get(id)?.node.remove();
    this.items.delete(id);
    this.empty.hidden = this.items.size > 0;
  }

  build(job) {
    const parts = {
      name: el("span", { class: "job-name" }),
      state: el("span", { class: "badge" }),
      progress: el("progress", { max: "1", value: "0" }),
      count: el("span", { class: "job-count" }),
      schema: el("p", { class: "job-schema", hidden: true }),
      chips: el("ol", { class: "page-chips", "aria-label": "Page states" }),
      error: el("p", { class: "job-error", role: "alert", hidden: true }),
      created: el("time", { class: "job-time" }),
      open: el("button", { type: "button", class: "primary", text: "Open result" }),
      cancel: el("button", { type: "button", text: "Cancel" }),
      remove: el("button", { type: "button", class: "danger", text: "Delete" }),
    };
    parts.open.addEventListener("click", () => this.onOpen(job.id));
    parts.cancel.addEventListener("click", () => this.cancel(job.id, parts.cancel));
    parts.remove.addEventListener("click", () => this.remove(job.id, parts.remove));
    const node = el("li", { class: "job", dataset: { jobId: job.id } },
      el("div", { class: "job-head" }, parts.name, parts.state),
      el("div", { class: "job-progress" }, parts.progress, parts.count),
      parts.chips, parts.schema, parts.error,
      el("div", { class: "job-foot" }, parts.created,
        el("span", { class: "job-actions" }, parts.open, parts.cancel, parts.remove)));
    return { node, parts, job, detailStamp: null, note: null };
  }

  render({ node, parts, job, note }) {
    const name = jobName(job);
    parts.name.textContent = name;
    parts.name.title = job.files.map((file) => file.filename).join("\n");
    parts.state.textContent = job.state;
    parts.state.className = `badge state-${job.state}`;
    node.dataset.state = job.state;
    node.dataset.progress = this.streams.isLive(job.id) ? "stream" : "poll";   // how its progress arrives
    parts.progress.max = Math.max(1, job.pages_total);
    parts.progress.value = job.pages_done;
    parts.progress.setAttribute("aria-label", `Progress of ${name}`);
    const failed = (job.pages || []).filter((page) => page.state === "failed").length;
    parts.count.textContent = `${job.pages_done} of ${plural(job.pages_total, "page")} done` +
                              (failed ? ` · ${failed} failed` : "");
    if (job.pages) this.renderChips(parts.chips, job);
    const extraction = job.extraction ? ` (${job.extraction.state})` : "";
    showMessage(parts.schema, job.schema_name ? `Extracts fields with ${job.schema_name}${extraction}` : "");
    showMessage(parts.error, job.error || note || "");
    parts.created.dateTime = job.created_at;
    parts.created.textContent = formatTime(job.created_at);
    parts.open.hidden = job.state !== "done";
    parts.open.setAttribute("aria-label", `Open result of ${name}`);
    parts.cancel.hidden = !ACTIVE_STATES.has(job.state);
    parts.cancel.setAttribute("aria-label", `Cancel ${name}`);
    parts.remove.hidden = ACTIVE_STATES.has(job.state);
    if (!parts.remove.dataset.confirming) parts.remove.setAttribute("aria-label", `Delete ${name}`);
  }

  renderChips(list, job) {
    const many = new Set(job.pages.map((page) => page.file)).size > 1;
    const chips = job.pages.slice(0, MAX_PAGE_CHIPS).map((page) => {
      const where = many ? `file ${page.file}, page ${page.page}` : `page ${page.page}`;
      const notes = [page.reason, page.regions_fallback ? `${page.regions_fallback} region(s) from the PDF text layer`
        : null, page.regions_failed ? `${page.regions_failed} region(s) not read` : null].filter(Boolean);
      const marked = page.state === "done" && (page.regions_fallback || page.regions_failed) ? " marked" : "";
      return el("li", { class: `chip page-${page.state}${marked}`, title: [`${where}: ${page.state}`, ...notes].join("\n") },
        el("span", { "aria-hidden": "true", text: many ? `${page.file}·${page.page}` : String(page.page) }),
        el("span", { class: "sr-only", text: `${where}: ${page.state}${notes.length ? ` (${notes.join("; ")})` : ""}` }));
    });
    if (job.pages.length > MAX_PAGE_CHIPS) {
      chips.push(el("li", { class: "chip more", text: `+${job.pages.length - MAX_PAGE_CHIPS} more` }));
    }
    list.replaceChildren(...chips);
  }

  async cancel(jobId, button) {
    button.disabled = true;
    this.items.get(jobId).note = null;
    try {
      this.upsert(await this.getApi().cancel(jobId), true);
    } catch (error) {
      this.showJobError(jobId, `It could not be cancelled: ${error.message}`);
    } finally {
      button.disabled = false;
    }
  }

  async remove(jobId, button) {
    if (!button.dataset.confirming) {
      button.dataset.confirming = "yes";
      button.textContent = "Confirm delete";
      button.setAttribute("aria-label", `Confirm: delete ${jobName(this.items.get(jobId).job)} and its results`);
      setTimeout(() => this.resetDelete(button), CONFIRM_WINDOW_MS);
      return;
    }
    button.disabled = true;
    try {
      await this.getApi().remove(jobId);
      this.drop(jobId);
      this.onDeleted(jobId);
      this.announce("Job deleted.");
      byId("refresh-jobs").focus();
    } catch (error) {
      button.disabled = false;
      this.resetDelete(button);
      this.showJobError(jobId, `It could not be deleted: ${error.message}`);
    }
  }

  resetDelete(button) {
    delete button.dataset.confirming;
    button.textContent = "Delete";
  }

  showJobError(jobId, message) {
    const item = this.items.get(jobId);
    if (!item) return;
    item.note = message;   // kept across polls, unlike a message the next render would clear
    showMessage(item.parts.error, message);
  }
}

function stamp(job) {
  return `${job.state} ${job.updated_at}`;
}

export function jobName(job) {
  const files = job.files || [];
  if (!files.length) return `Job ${job.id.slice(0, 8)}`;
  return files.length === 1 ? files[0].filename : `${files[0].filename} and ${plural(files.length - 1, "more file")}`;
}
