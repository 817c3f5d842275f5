// The service's public HTTP API, as the page uses it. Every failure becomes an
// ApiError whose message is a sentence to show: the server's own message when
// it sent one ({"error": {"code", "message"}}), otherwise what went wrong in words.

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;   // 0 when the service could not be reached
    this.code = code;
  }
}

const UNREACHABLE = "The service could not be reached. Check that it is running and your connection, then try again.";

export class Api {
  // `key` may be empty: a service with no keys configured accepts requests without one.
  constructor(key, onUnauthorized = () => {}) {
    this.key = key;
    this.onUnauthorized = onUnauthorized;
  }

  headers(extra = {}) {
    return this.key ? { Authorization: `Bearer ${this.key}`, ...extra } : extra;
  }

  async request(method, path, options = {}) {
    let response;
    try {
      response = await fetch(path, { method, headers: this.headers(options.headers), body: options.body,
                                     cache: "no-store" });
    } catch (error) {
      throw new ApiError(0, "unreachable", UNREACHABLE);
    }
    if (!response.ok) {
      const error = await errorFrom(response);
      if (error.status === 401 && !options.quietUnauthorized) this.onUnauthorized(error);
      throw error;
    }
    return response;
  }

  async json(path, options) {
    return (await this.request("GET", path, options)).json();
  }

  // Signing in is checking the key against the cheapest call that needs one.
  checkKey() { return this.json("/v1/jobs?limit=1", { quietUnauthorized: true }); }
  limits() { return this.json("/v1/limits"); }
  schemas() { return this.json("/v1/schemas"); }
  listJobs(limit) { return this.json(`/v1/jobs?limit=${limit}`); }
  getJob(jobId) { return this.json(`/v1/jobs/${encodeURIComponent(jobId)}`); }
  async eventsToken(jobId) {
    return (await this.request("POST", `/v1/jobs/${encodeURIComponent(jobId)}/events/token`)).json();
  }
  resultJson(jobId) { return this.json(`${resultPath(jobId)}?format=json`); }
  async resultText(jobId, format) { return (await this.request("GET", `${resultPath(jobId)}?format=${format}`)).text(); }
  async resultBlob(jobId, format) { return (await this.request("GET", `${resultPath(jobId)}?format=${format}`)).blob(); }
  async cancel(jobId) { return (await this.request("DELETE", `/v1/jobs/${encodeURIComponent(jobId)}`)).json(); }
  async remove(jobId) { await this.request("DELETE", `/v1/jobs/${encodeURIComponent(jobId)}/record`); }

  async pageImage(jobId, fileNumber, pageNumber) {
    const path = `/v1/jobs/${encodeURIComponent(jobId)}/pages/${fileNumber}/${pageNumber}/image`;
    return (await this.request("GET", path)).blob();
  }

  async figure(jobId, name) {
    return (await this.request("GET", `/v1/jobs/${encodeURIComponent(jobId)}/figures/${encodeURIComponent(name)}`)).blob();
  }

  // Uploads go through XMLHttpRequest because fetch cannot report upload progress.
  submit(formData, onProgress = () => {}) {
    return new Promise((resolve, reject) => {
      const xhr = new XMLHttpRequest();
      xhr.open("POST", "/v1/jobs");
      for (const [name, value] of Object.entries(this.headers({ Accept: "application/json" }))) {
        xhr.setRequestHeader(name, value);
      }
      xhr.responseType = "text";
      xhr.upload.addEventListener("progress", (event) => {
        if (event.lengthComputable) onProgress(event.loaded / event.total);
      });
      xhr.addEventListener("load", () => {
        const body = parseJson(xhr.responseText);
        if (xhr.status >= 200 && xhr.status < 300 && body) return resolve(body);
        const error = errorFromBody(xhr.status, xhr.statusText, body);
        if (error.status === 401) this.onUnauthorized(error);
        reject(error);
      });
      // The server may refuse an oversized body before reading it and close the
      // connection; the browser then reports a network error, not the answer.
      xhr.addEventListener("error", () => reject(new ApiError(0, "upload_interrupted",
        "The upload was interrupted: the service closed the connection or could not be reached. " +
        "A file over the size limit is refused this way.")));
      xhr.send(formData);
    });
  }
}

function resultPath(jobId) {
  return `/v1/jobs/${encodeURIComponent(jobId)}/result`;
}

async function errorFrom(response) {
  let body = null;
  try {
    body = parseJson(await response.text());
  } catch (error) {
    body = null;
  }
  return errorFromBody(response.status, response.statusText, body);
}

function errorFromBody(status, statusText, body) {
  const error = body && typeof body === "object" ? body.error : null;
  if (error && typeof error.message === "string") {
    return new ApiError(status, String(error.code || "error"), error.message);
  }
  return new ApiError(status, "http_error", `The service answered HTTP ${status}${statusText ? ` (${statusText})` : ""}.`);
}

function parseJson(text) {
  try {
    return JSON.parse(text);
  } catch (error) {
    return null;
  }
}
