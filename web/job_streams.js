// Live progress for the jobs list: one EventSource per queued or running job on
// GET /v1/jobs/{id}/events (Server-Sent Events: page done, page failed, job state).
// EventSource sends no Authorization header, so each stream is opened with a
// one-minute token for that one job (POST /v1/jobs/{id}/events/token). A stream
// that cannot be opened, or that keeps failing, is given up for its job, and the
// list polls that job as it did before streams existed.

const FINAL_STATES = new Set(["done", "failed", "cancelled"]);
const MAX_ERRORS = 2;   // failures in a row, with no event between, before falling back to polling
const MAX_REOPENS = 3;  // a stream that worked and was cut is opened again (a fresh token) this often
const MAX_STREAMS = 3;  // open at once (the service allows a key 4 by default): more running jobs are polled

export class JobStreams {
  constructor(getApi, onEvent, onLost) {
    this.getApi = getApi;
    this.onEvent = onEvent;   // (jobId, data) for every event; data.type is "page.done", "job.running", ...
    this.onLost = onLost;     // (jobId) when its stream is given up: poll it
    this.sources = new Map(); // job id -> EventSource, or null while its token is fetched
    this.failed = new Set();  // jobs whose progress is polled
    this.reopens = new Map(); // job id -> streams opened again after a cut
    this.session = 0;
  }

  isLive(jobId) {
    return this.sources.has(jobId);
  }

  // `lastId`: the last event seen, when a cut stream is opened again (its token may have expired,
  // and a new EventSource sends no Last-Event-ID of its own).
  async watch(jobId, lastId = "") {
    if (this.sources.has(jobId) || this.failed.has(jobId) || this.sources.size >= MAX_STREAMS) return;
    if (typeof EventSource !== "function") {
      this.failed.add(jobId);
      return;
    }
    const session = this.session;
    this.sources.set(jobId, null);
    let token;
    try {
      ({ token } = await this.getApi().eventsToken(jobId));
    } catch (error) {
      if (session === this.session) this.giveUp(jobId);
      return;
    }
    if (session !== this.session || !this.sources.has(jobId)) return;
    const resume = lastId ? `&last_event_id=${encodeURIComponent(lastId)}` : "";
    const url = `/v1/jobs/${encodeURIComponent(jobId)}/events?token=${encodeURIComponent(token)}${resume}`;
    const source = new EventSource(url);
    this.sources.set(jobId, source);
    let errors = 0;
    let heard = false;
    const deliver = (message) => {
      errors = 0;
      heard = true;
      lastId = message.lastEventId || lastId;
      let data;
      try {
        data = JSON.parse(message.data);
      } catch (error) {
        return;
      }
      this.onEvent(jobId, data);
      if (message.type === "job" && FINAL_STATES.has(data.state)) this.close(jobId);
    };
    source.addEventListener("page", deliver);
    source.addEventListener("job", deliver);
    source.addEventListener("gone", () => this.close(jobId));
    // EventSource retries a dropped connection by itself (sending Last-Event-ID); a refused one
    // (expired token, 4xx, 5xx) closes it. Either way, too many failures mean polling.
    source.addEventListener("error", () => {
      errors += 1;
      if (source.readyState !== EventSource.CLOSED && errors < MAX_ERRORS) return;
      const reopened = this.reopens.get(jobId) || 0;
      if (heard && reopened < MAX_REOPENS && session === this.session) {
        this.reopens.set(jobId, reopened + 1);
        this.close(jobId);
        this.watch(jobId, lastId);
      } else {
        this.giveUp(jobId);
      }
    });
  }

  close(jobId) {
    this.sources.get(jobId)?.close();
    this.sources.delete(jobId);
  }

  giveUp(jobId) {
    this.close(jobId);
    this.failed.add(jobId);
    this.onLost(jobId);
  }

  // On sign-out: every stream closed, and answers still on their way dropped.
  closeAll() {
    this.session += 1;
    for (const jobId of [...this.sources.keys()]) this.close(jobId);
    this.failed.clear();
    this.reopens.clear();
  }
}
