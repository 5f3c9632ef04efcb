// A derive request's page: approvers approve or reject it through the API
// (POST /api/derive-requests/{id}/approve|reject); the page shows the decision and the
// history without a reload, the API's refusal (e.g. 409: decided already) next to the
// buttons, and — once approved — "creating the child agent…" until a worker has created it
// (then the child, linked) or has failed to (then why, as an error): it asks
// GET /api/derive-requests/{id} until one of them is there.
(function () {
  "use strict";
  const { api, el } = window.switchyard;
  const root = document.getElementById("derive-request");
  if (!root) return;
  const id = root.dataset.id;
  const path = `/derive-requests/${encodeURIComponent(id)}`;
  const POLL_MS = 1000;
  const POLL_LIMIT = 180;  // three minutes; after that, say so rather than ask forever
  // What each event is called (agents/views.py EVENT_LABELS: the same).
  const EVENT_LABELS = {
    raised: "Raised", approved: "Approved", rejected: "Rejected",
    child_created: "Child agent created", child_failed: "Creating the child agent failed",
  };

  function field(name) { return root.querySelector(`[data-field="${name}"]`); }

  function when(iso) {
    if (!iso) return "—";
    const date = new Date(iso);
    const pad = (n) => String(n).padStart(2, "0");
    return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())} ` +
      `${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}`;
  }

  function setStatus(status) {
    root.dataset.status = status;
    for (const badge of [document.getElementById("dr-status"), field("status")]) {
      badge.className = `badge ${status}`;
      badge.textContent = status;
    }
  }

  function waitingNote() {
    return el("p", { class: "progress-note", id: "result-waiting", role: "status" },
      "Creating the child agent… a worker is making it from the approved request; it shows here as soon as it exists.");
  }

  // The child agent, or why it could not be made; false while neither is known yet.
  function showResult(document_) {
    const result = document.getElementById("result");
    result.hidden = document_.status !== "approved";
    if (document_.result_agent_id) {
      const href = `${root.dataset.agentUrl}${encodeURIComponent(document_.result_agent_id)}/`;
      field("result").replaceChildren(
        el("a", { id: "result-agent", href }, document_.result_agent_id), " ",
        el("span", { class: "small muted" }, "created from this request"),
      );
      return true;
    }
    if (document_.result_error) {
      field("result").replaceChildren(el("p", { class: "error", id: "result-error", role: "alert" },
        `Creating the child agent failed: ${document_.result_error}`));
      return true;
    }
    return false;
  }

  function ruleOf(actor) {
    return actor && actor.startsWith("rule:") ? actor.slice(5).replaceAll("_", " ") : "";
  }

  let shownHistory = "";
  function showHistory(history) {
    const list = document.getElementById("history-list");
    if (!list || !Array.isArray(history) || !history.length) return;
    const key = JSON.stringify(history);
    if (key === shownHistory) return; // the same events: leave the list as it is
    shownHistory = key;
    list.replaceChildren(...history.map((event) => {
      const rule = ruleOf(event.actor);
      return el("li", { class: `history-event ${event.event}`, "data-event": event.event },
        el("div", { class: "history-line" }, el("strong", {}, EVENT_LABELS[event.event] || event.event), " ",
          rule ? ["by the rule ", el("span", { class: "chip rule" }, rule)] : ["by ", el("span", { class: "history-actor" }, event.actor)],
          " ", el("time", { class: "small muted", datetime: event.at }, when(event.at))),
        event.comment ? el("p", { class: "history-comment small" }, event.comment) : null);
    }));
  }

  function show(document_) {
    setStatus(document_.status);
    document.getElementById("decision-facts").hidden = document_.status === "pending";
    field("decided_by").textContent = document_.decided_by || "—";
    field("decided_at").textContent = when(document_.decided_at);
    field("comment").textContent = document_.comment || "No comment.";
    if (document_.status !== "pending") {
      const form = document.getElementById("decide-form");
      if (form) form.remove();
    }
    showHistory(document_.history);
    if (document_.status === "approved" && !showResult(document_)) {
      field("result").replaceChildren(waitingNote());
      waitForResult(0);
    }
  }

  let polling = false;
  async function waitForResult(attempt) {
    if (attempt === 0) {
      if (polling) return; // one loop at a time
      polling = true;
    }
    if (attempt >= POLL_LIMIT) {
      document.getElementById("result-waiting").textContent =
        "Not created yet. A worker creates it from the approved request; reload this page later.";
      document.getElementById("result-waiting").classList.add("stalled");
      return;
    }
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    try {
      const latest = await api.get(path);
      showHistory(latest.history);
      if (showResult(latest)) return;
    } catch (error) {
      // A passing network problem: keep trying until the limit.
    }
    waitForResult(attempt + 1);
  }

  const form = document.getElementById("decide-form");
  if (form) {
    const errorBox = document.getElementById("decide-error");
    const progress = document.getElementById("decide-progress");
    const buttons = form.querySelectorAll("button[data-decision]");
    buttons.forEach((button) => button.addEventListener("click", async () => {
      const decision = button.dataset.decision;
      errorBox.hidden = true;
      buttons.forEach((b) => { b.disabled = true; });
      progress.textContent = decision === "approve" ? "Approving…" : "Rejecting…";
      progress.hidden = false;
      try {
        const decided = await api.post(`${path}/${decision}`, { comment: form.elements.comment.value });
        show(decided);
      } catch (error) {
        const prefix = { 409: "Already decided", 403: "Not allowed", 422: "Not accepted" }[error.status];
        errorBox.textContent = prefix ? `${prefix}: ${error.message}` : error.message;
        errorBox.hidden = false;
        // A button the page blocked (approving a request whose tools the catalogue lacks) stays so.
        buttons.forEach((b) => { b.disabled = b.hasAttribute("data-blocked"); });
        progress.hidden = true;
        if (error.status === 409) {  // someone else decided meanwhile: show their decision
          try { show(await api.get(path)); } catch (ignored) { /* keep the message */ }
        }
      }
    }));
  }

  if (root.dataset.status === "approved" && !root.dataset.result && !root.dataset.resultError) waitForResult(0);
})();
