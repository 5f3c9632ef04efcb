// An experiment's page follows it while it runs: its progress read from the API every few
// seconds; when more items have ended, the figures and the items table are read again from
// the page itself (the server draws them, escaped). It stops once the experiment has ended.
// The Cancel button asks to be pressed twice.
(function () {
  "use strict";

  const { api } = window.switchyard;
  const root = document.getElementById("experiment-page");
  if (!root) return;
  const POLL_MS = 2000;
  const ACTIVE = new Set(["pending", "running"]);
  const apiPath = `/experiments/${encodeURIComponent(root.dataset.experiment)}`;
  let ended = Number(root.dataset.ended);
  let failures = 0;

  const cancel = document.getElementById("cancel-form");
  if (cancel) {
    const button = document.getElementById("cancel-button");
    cancel.addEventListener("submit", (event) => {
      if (button.dataset.confirming) return;
      event.preventDefault();
      button.dataset.confirming = "true";
      button.textContent = "Cancel it: press again to confirm";
      setTimeout(() => { delete button.dataset.confirming; button.textContent = "Cancel the experiment"; }, 5000);
    });
  }

  function seconds(value) {
    return value === null || value === undefined ? "?" : `${Math.round(value)} s`;
  }

  function showProgress(record) {
    const progress = record.progress;
    const percent = progress.total ? Math.round((100 * progress.ended) / progress.total) : 0;
    const bar = document.querySelector("#progress .progress");
    bar.querySelector("span").style.width = `${percent}%`;
    bar.setAttribute("aria-valuenow", String(progress.ended));
    const text = document.getElementById("progress-text");
    text.replaceChildren(window.switchyard.el("strong", {}, `${progress.ended} of ${progress.total}`), " items ended");
    for (const element of document.querySelectorAll("#progress [data-count]")) {
      element.textContent = String(progress.counts[element.dataset.count] || 0);
    }
    document.getElementById("elapsed").textContent = seconds(progress.elapsed_seconds);
    document.getElementById("estimate").textContent = seconds(progress.estimate_seconds);
    const status = document.getElementById("experiment-status");
    status.textContent = record.status;
    status.className = `badge ${record.status}`;
  }

  // The figures and the items as the server draws them now (this page's address, its filters kept).
  async function refreshSections() {
    const response = await fetch(window.location.href, { credentials: "same-origin", headers: { Accept: "text/html" } });
    if (!response.ok) return;
    const fresh = new DOMParser().parseFromString(await response.text(), "text/html");
    for (const id of ["aggregates", "items-section"]) {
      const replacement = fresh.getElementById(id);
      if (replacement) document.getElementById(id).replaceWith(document.adoptNode(replacement));
    }
    for (const element of document.querySelectorAll("#aggregates [data-width], #items-section [data-width]")) {
      element.style.width = `${element.dataset.width}%`;
    }
  }

  function finish() {
    document.getElementById("experiment-live").hidden = true;
    document.getElementById("estimate-wrap").hidden = true;
    if (cancel) cancel.hidden = true;
  }

  async function poll() {
    const connection = document.getElementById("experiment-connection");
    try {
      const record = await api.get(apiPath);
      showProgress(record);
      const over = !ACTIVE.has(record.status);
      if (record.progress.ended !== ended || over) {
        ended = record.progress.ended;
        await refreshSections();
      }
      failures = 0;
      connection.hidden = true;
      if (over) {
        root.dataset.active = "";
        finish();
        return;
      }
      setTimeout(poll, POLL_MS);
    } catch (error) {
      failures += 1;
      connection.textContent = error.status === 404 ? "This experiment no longer exists."
        : `Could not refresh (${error.message}); trying again…`;
      connection.hidden = false;
      if (error.status !== 404 && error.status !== 403) setTimeout(poll, Math.min(10000, POLL_MS * 2 ** failures));
    }
  }

  if (root.dataset.active) setTimeout(poll, POLL_MS);
})();
