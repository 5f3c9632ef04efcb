// A node's context plan: POST /api/workflows/{id}/nodes/{node}/plan, drawn with the same
// budget bar, actions and resolution failures as a run's node panel. No model is called.
(function () {
  "use strict";

  const { api, el, jsonData, fmt, budget } = window.switchyard;
  const data = jsonData("plan-data");
  const path = `/workflows/${encodeURIComponent(data.workflow_id)}/nodes/${encodeURIComponent(data.node_id)}/plan`;
  const $ = (id) => document.getElementById(id);
  const FIELDS = ["outputs", "input", "state"];

  function fact(label, ...value) {
    return el("div", {}, el("dt", {}, label), el("dd", {}, ...value));
  }

  function show(plan, took) {
    const ready = plan.outcome === "ready";
    $("plan-outcome").replaceChildren(el("span", { class: `badge big ${ready ? "success" : "failed"}` }, ready ? "ready" : "would abort"));
    $("plan-status").replaceChildren(`planned at ${new Date().toISOString().slice(11, 19)} UTC in ${fmt.ms(took)}`);
    const calls = plan.model_calls_skipped || [];
    $("plan-facts").replaceChildren(el("dl", { class: "facts" },
      fact("Agent", el("span", { class: "mono" }, plan.agent_ref)),
      fact("Backend / model", [plan.backend, plan.model].filter(Boolean).join(" / ") || "—"),
      fact("Outputs from", plan.outputs_from
        ? el("a", { class: "mono", href: `/executions/${encodeURIComponent(plan.outputs_from)}/` }, plan.outputs_from)
        : el("span", { class: "muted" }, "given, or no earlier run")),
      fact("Backend calls a run would make", `${fmt.n(plan.batch_count)} (one per batch)`),
      fact("Model calls skipped", calls.length
        ? el("ul", { class: "plain small" }, calls.map((call) => el("li", { title: call.note || "" }, `${call.purpose}: ${fmt.n(call.calls)}`)))
        : "none"),
      fact("Waits skipped", `${(plan.waits_skipped_seconds || 0).toFixed(1)} s of retry delays`)));
    $("plan-budget").replaceChildren(ready
      ? budget.bar(plan.context_management)
      : el("p", { class: "error" }, "A run would stop here: a reference failed and its fallback says to abort the node. The resolution failures say which."));
    $("plan-actions").replaceChildren(budget.actions(plan.context_management));
    $("plan-failures").replaceChildren(budget.failures(plan.resolution_failures));
    $("plan-inputs").replaceChildren(budget.inputs(plan.resolved_inputs));
    $("plan-compression-card").hidden = !plan.compression;
    if (plan.compression) $("plan-compression").replaceChildren(budget.compression(plan.compression));
  }

  function clearErrors() {
    $("plan-error").hidden = true;
    for (const name of FIELDS) {
      const box = document.querySelector(`textarea[data-field="${name}"]`);
      box.classList.remove("invalid");
      const message = document.querySelector(`.field-error[data-for="${name}"]`);
      message.hidden = true;
    }
  }

  function fieldError(name, text) {
    document.querySelector(`textarea[data-field="${name}"]`).classList.add("invalid");
    const message = document.querySelector(`.field-error[data-for="${name}"]`);
    message.textContent = text;
    message.hidden = false;
    $("plan-overrides").open = true;
  }

  function overrides() {
    const body = {};
    let ok = true;
    for (const name of FIELDS) {
      const text = document.querySelector(`textarea[data-field="${name}"]`).value.trim();
      if (!text) continue;
      try {
        body[name] = JSON.parse(text);
      } catch (error) {
        fieldError(name, `This is not JSON: ${error.message}`);
        ok = false;
      }
    }
    return ok ? body : null;
  }

  // Where an API error points: details.where, the first problem's, or the "where: …"
  // that starts a document error's message.
  function whereOf(error) {
    const details = error.details;
    if (details && !Array.isArray(details) && details.where) return String(details.where);
    if (Array.isArray(details) && details[0] && details[0].where) return String(details[0].where);
    const match = /^([\w.[\]-]+): /.exec(error.message || "");
    return match ? match[1] : "";
  }

  async function plan(withOverrides) {
    clearErrors();
    const body = withOverrides ? overrides() : {};
    if (body === null) return;
    $("plan-status").replaceChildren(el("span", { class: "spinner" }), " Planning…");
    document.querySelectorAll("#plan-again, #plan-with").forEach((button) => { button.disabled = true; });
    const began = performance.now();
    try {
      show(await api.post(path, body), performance.now() - began);
    } catch (error) {
      $("plan-status").replaceChildren("");
      const where = whereOf(error);
      const field = FIELDS.find((name) => where.split(/[.[\]]/).includes(name));
      if (field) fieldError(field, error.message);
      $("plan-error").textContent = `Could not plan the node: ${error.message}`;
      $("plan-error").hidden = false;
    } finally {
      document.querySelectorAll("#plan-again, #plan-with").forEach((button) => { button.disabled = false; });
    }
  }

  $("plan-again").addEventListener("click", () => plan(false));
  $("plan-with").addEventListener("click", () => plan(true));
  plan(false);
})();
