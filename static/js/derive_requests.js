// A derive request's page: approvers approve or reject it through the API
// (POST /api/derive-requests/{id}/approve|reject); the page shows the decision without a
// reload, the API's refusal (e.g. 409: decided already) next to the buttons, and — once
// approved — the child agent as soon as a worker has created it.
(function () {
  "use strict";
  const { api, el } = window.switchyard;
  const root = document.getElementById("derive-request");
  if (!root) return;
  const id = root.dataset.id;
  const path = `/derive-requests/${encodeURIComponent(id)}`;
  const POLL_MS = 2000;
  const POLL_LIMIT = 60;  // two minutes; after that, say so rather than ask forever

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
    return false;
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
    if (document_.status === "approved" && !showResult(document_)) {
      field("result").replaceChildren(el("span", { class: "muted", id: "result-waiting" },
        "Being created by a worker… this page shows it as soon as it exists."));
      waitForResult(0);
    }
  }

  async function waitForResult(attempt) {
    if (attempt >= POLL_LIMIT) {
      document.getElementById("result-waiting").textContent =
        "Not created yet. A worker creates it from the approved request; reload this page later.";
      return;
    }
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    try {
      const latest = await api.get(path);
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
        buttons.forEach((b) => { b.disabled = false; });
        progress.hidden = true;
        if (error.status === 409) {  // someone else decided meanwhile: show their decision
          try { show(await api.get(path)); } catch (ignored) { /* keep the message */ }
        }
      }
    }));
  }

  if (root.dataset.status === "approved" && !root.dataset.result) waitForResult(0);
})();
