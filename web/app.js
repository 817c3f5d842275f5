// The page's entry point: signing in and out, and wiring the three panels
// (upload, jobs, result) to one API client.
//
// The key lives in sessionStorage: it survives a reload of this tab and is
// gone when the tab closes. A 401 on any call signs the page out and says why.

import { Api } from "./api.js";
import { byId, showMessage } from "./dom.js";
import { JobsPanel } from "./jobs.js";
import { ResultView } from "./result.js";
import { UploadPanel } from "./upload.js";

const KEY_STORAGE = "ocrserve.apiKey";

class App {
  constructor() {
    this.api = null;
    this.announcer = byId("announcer");
    const getApi = () => this.api;
    const announce = (message) => this.announce(message);
    this.result = new ResultView(getApi, announce);
    this.jobs = new JobsPanel(getApi, (jobId) => this.result.open(jobId), (jobId) => this.result.forget(jobId), announce);
    this.upload = new UploadPanel(getApi, (job) => this.jobs.add(job));
    byId("sign-in-form").addEventListener("submit", (event) => {
      event.preventDefault();
      this.signIn(byId("api-key").value.trim());
    });
    byId("sign-out").addEventListener("click", () => this.signOut(""));
  }

  async start() {
    const saved = sessionStorage.getItem(KEY_STORAGE);
    if (saved !== null) await this.signIn(saved, true);
    else this.showSignIn("");
  }

  async signIn(key, restoring = false) {
    const api = new Api(key, (error) => this.signOut(`Signed out: the service refused the API key (${error.message}).`));
    const button = byId("sign-in-button");
    button.disabled = true;
    showMessage(byId("sign-in-error"), "");
    try {
      await api.checkKey();
    } catch (error) {
      button.disabled = false;
      if (error.status === 401) {
        sessionStorage.removeItem(KEY_STORAGE);
        const why = key ? `That API key was not accepted: ${error.message}` : `An API key is required: ${error.message}`;
        this.showSignIn(restoring ? `Your saved key is no longer accepted: ${error.message}` : why);
      } else {
        this.showSignIn(`Could not sign in: ${error.message}`);
      }
      return;
    }
    button.disabled = false;
    this.api = api;
    sessionStorage.setItem(KEY_STORAGE, key);
    byId("api-key").value = "";
    byId("sign-in").hidden = true;
    byId("workspace").hidden = false;
    byId("session").hidden = false;
    byId("session-label").textContent = key ? `Signed in with key …${key.slice(-4)}` : "Signed in (this service needs no key)";
    this.loadLimits();
    this.jobs.start();
    const jobId = /^#job=([0-9a-f]{32})$/.exec(location.hash)?.[1];
    if (jobId) this.result.open(jobId);
    else if (!restoring) byId("choose-files").focus();
  }

  async loadLimits() {
    const [limits, schemas] = await Promise.allSettled([this.api.limits(), this.api.schemas()]);
    // Without an answer the documented limits stay shown (the service still enforces its own),
    // and no schema is offered.
    if (limits.status === "fulfilled") this.upload.setLimits(limits.value);
    else if (limits.reason.status !== 401) this.announce(`The service's limits could not be read: ${limits.reason.message}`);
    this.upload.setSchemas(schemas.status === "fulfilled" ? schemas.value.schemas : []);
  }

  // Everything user-specific goes: the key, jobs, any open result, the "New job" panel (files picked
  // but not sent, options, upload messages) and anything the live region was about to say.
  signOut(message) {
    sessionStorage.removeItem(KEY_STORAGE);
    this.api = null;
    this.jobs.stop();
    this.result.clear();
    this.upload.reset();
    clearTimeout(this.announceTimer);
    this.announcer.textContent = "";
    byId("session-label").textContent = "";
    this.showSignIn(message);
  }

  showSignIn(message) {
    byId("workspace").hidden = true;
    byId("session").hidden = true;
    byId("sign-in").hidden = false;
    showMessage(byId("sign-in-error"), message);
    byId("api-key").focus();
  }

  announce(message) {
    this.announcer.textContent = "";
    // A change after a tick is what makes screen readers speak a repeated message.
    clearTimeout(this.announceTimer);
    this.announceTimer = setTimeout(() => { this.announcer.textContent = message; }, 50);
  }
}

new App().start();
