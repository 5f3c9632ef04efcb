// A node's context plan: POST /api/workflows/{id}/nodes/{node}/plan, drawn with the same
// budget bar, actions and resolution failures as a run's node panel. No model is called.
// What a run of the node would cost at most is estimated from the plan (its cost_estimate):
// the calls, their tokens, the assumption it rests on, and the model's prices with where
// each came from.
// Authors may also try the node (POST …/try): it runs once, alone, on a worker, with the
// same values the plan was given; the page follows the trial (its record summarises its
// node runs) until it ends, then reads its node run's whole record and shows it as a
// run's node panel does.
(function () {
  "use strict";

  const { api, el, jsonData, fmt, budget, nodeRun, cost: money } = window.switchyard;
  const data = jsonData("plan-data");
  const nodePath = `/workflows/${encodeURIComponent(data.workflow_id)}/nodes/${encodeURIComponent(data.node_id)}`;
  const $ = (id) => document.getElementById(id);
  const FIELDS = ["outputs", "input", "state"]; // the overrides, in "Plan with other values"
  const TRY_FIELDS = ["execution", "agent_version"];
  const TRY_POLL_MS = 1000;
  const fact = nodeRun.fact;

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
    $("plan-cost").replaceChildren(...costEstimate(plan.cost_estimate));
  }

  // The catalogue's fields a plan's estimate shows, in this order: field → label, unit.
  const PRICE_FIELDS = [
    ["input_price", "Input", "per million tokens"],
    ["cached_input_price", "Cached input", "per million tokens"],
    ["output_price", "Output", "per million tokens"],
    ["context_window", "Context window", "tokens"],
    ["max_output", "Maximum output", "tokens"],
  ];

  function costEstimate(estimate) {
    if (!estimate) return [el("p", { class: "muted small" }, "No estimate.")];
    const prices = estimate.prices || {};
    const sources = prices.sources || {};
    const model = [estimate.backend, estimate.model].filter(Boolean).join(" / ");
    const priced = estimate.cost !== null && estimate.cost !== undefined;
    const builtin = String(sources.input_price || "").startsWith("builtin");
    const headline = builtin
      ? el("p", { class: "cost-headline" }, "A run of this node would cost ",
        el("strong", { id: "plan-cost-value", class: "cost builtin" }, "nothing"), ": its backend is the builtin engine, which calls no model.")
      : priced
      ? el("p", { class: "cost-headline" }, "A run of this node would cost at most ",
        el("strong", { id: "plan-cost-value", class: "cost" }, money.text(estimate.cost)),
        ` (${fmt.n(estimate.calls)} call${estimate.calls === 1 ? "" : "s"}).`)
      : el("p", { class: "cost-headline" }, el("strong", { id: "plan-cost-value", class: "cost unpriced" }, "No price: "),
        `the model catalogue has no prices for ${estimate.model || "the model"}, so its calls would be recorded with their tokens and no cost.`);
    const arithmetic = priced && prices.input_price !== undefined && prices.output_price !== undefined
      ? el("p", { class: "small muted", id: "plan-cost-arithmetic" },
        `${fmt.n(estimate.tokens_in)} tokens in × ${money.text(prices.input_price)} + ${fmt.n(estimate.tokens_out)} tokens out × `
        + `${money.text(prices.output_price)}, per million tokens = ${money.text(estimate.cost)}`) : null;
    const rows = PRICE_FIELDS.filter(([name]) => prices[name] !== undefined && prices[name] !== null)
      .map(([name, label, unit]) => el("tr", { "data-price": name },
        el("th", { scope: "row" }, label),
        el("td", { class: "num" }, name.endsWith("_price") ? `${money.text(prices[name])} ${unit}` : `${fmt.n(prices[name])} ${unit}`),
        el("td", { class: "small price-source" }, sources[name] || "—")));
    return [
      headline,
      el("dl", { class: "facts compact-facts" },
        fact("Backend / model", el("span", { class: "mono", id: "plan-cost-model" }, model || "—")),
        fact("Calls", `${fmt.n(estimate.calls)} (one per batch)`),
        fact("Tokens in", `${fmt.n(estimate.tokens_in)} (each batch's prompt, counted here)`),
        fact("Tokens out, at most", fmt.n(estimate.tokens_out))),
      el("p", { class: "assumption small", id: "plan-cost-assumption" }, el("strong", {}, "Assumes "), estimate.assumption || "—"),
      arithmetic,
      rows.length ? el("table", { class: "compact calls price-sources", id: "plan-prices" },
        el("thead", {}, el("tr", {}, el("th", {}, "Price or limit"), el("th", {}, "Value"), el("th", {}, "From"))),
        el("tbody", {}, rows))
        : el("p", { class: "muted small" }, "The catalogue knows nothing of this model."),
    ];
  }

  function clearErrors() {
    for (const id of ["plan-error", "try-error"]) if ($(id)) $(id).hidden = true;
    document.querySelectorAll("[data-field].invalid").forEach((box) => box.classList.remove("invalid"));
    document.querySelectorAll(".field-error[data-for]").forEach((message) => { message.hidden = true; });
  }

  function fieldError(name, text) {
    document.querySelector(`[data-field="${name}"]`).classList.add("invalid");
    const message = document.querySelector(`.field-error[data-for="${name}"]`);
    message.textContent = text;
    message.hidden = false;
    if (FIELDS.includes(name)) $("plan-overrides").open = true;
  }

  // The field an API error names (`outputs.task_a` → outputs), of `names`; "" if none.
  function fieldOf(error, names) {
    const parts = error.where.split(/[.[\]]/);
    return names.find((name) => parts[0] === name) || "";
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

  async function plan(withOverrides) {
    clearErrors();
    const body = withOverrides ? overrides() : {};
    if (body === null) return;
    $("plan-status").replaceChildren(el("span", { class: "spinner" }), " Planning…");
    document.querySelectorAll("#plan-again, #plan-with").forEach((button) => { button.disabled = true; });
    const began = performance.now();
    try {
      show(await api.post(`${nodePath}/plan`, body), performance.now() - began);
    } catch (error) {
      $("plan-status").replaceChildren("");
      const field = fieldOf(error, FIELDS);
      if (field) fieldError(field, error.message);
      $("plan-error").textContent = `Could not plan the node: ${error.message}`;
      $("plan-error").hidden = false;
    } finally {
      document.querySelectorAll("#plan-again, #plan-with").forEach((button) => { button.disabled = false; });
    }
  }

  // -- trying the node (authors) ----------------------------------------------------------

  // The runs a trial may read (newest first: the first is the one the plan reads) and the
  // agent's versions; "current" (its latest) stays the default.
  async function loadTryChoices() {
    const source = $("try-source");
    try {
      const runs = await api.get(`/executions?workflow=${encodeURIComponent(data.workflow_id)}&limit=20`);
      source.replaceChildren(
        ...runs.items.map((run, index) => el("option", { value: run.execution_id },
          `${run.execution_id} · ${run.status} · ${fmt.time(run.started_at || run.created_at)}` +
          (index === 0 ? " (the most recent, as the plan)" : ""))),
        el("option", { value: "" }, "no run: only the values given above, under “other values”"));
    } catch (error) {
      source.replaceChildren(el("option", { value: "" }, `no run (the runs could not be read: ${error.message})`));
    }
    try {
      const agent = await api.get(`/agents/${encodeURIComponent(data.agent_id)}`);
      $("try-version").append(...(agent.versions || []).map((version, index) =>
        el("option", { value: version.version }, `${version.version}${index === 0 ? " (the latest)" : ""}`)));
    } catch (error) {
      // Only "current" to choose from; the trial says which version ran.
    }
  }

  function tryProgress(...content) {
    $("try-progress").replaceChildren(...content);
    $("try-progress").hidden = !content.length;
  }

  function trialLink(trial, text) {
    return el("a", { href: `/executions/${encodeURIComponent(trial.execution_id)}/` }, text || trial.execution_id);
  }

  // The tried node in the trial's summary (its latest run, how many it made), or null
  // before it has a run. A trial's other node runs are copies of what it reads.
  function triedNode(trial) {
    return trial.node_runs_summary.nodes.find((node) => node.node_id === data.node_id) || null;
  }

  // While the trial waits for a worker or runs: its status, its node run's, and for how long.
  function following(trial, began) {
    const node = triedNode(trial);
    const run = node && node.latest;
    const doing = !run || run.status === "pending" ? "waiting for a worker"
      : `${run.status}${run.worker ? ` on ${run.worker}` : ""}`;
    tryProgress(el("span", { class: "spinner" }), " Trial ", trialLink(trial), ` ${trial.status}: ${doing} · ${fmt.ms(Date.now() - began)}`);
  }

  // The tried node's last run, whole (not a copy), and how many attempts it made.
  async function triedRun(trial) {
    if (!triedNode(trial)) return { run: null, attempts: 0 };
    const query = new URLSearchParams({ node: data.node_id, order: "-sequence", limit: "50" });
    const found = await api.get(`/executions/${encodeURIComponent(trial.execution_id)}/node-runs?${query}`);
    const ran = found.items.filter((run) => run.kind !== "reused" && run.kind !== "edited");
    if (!ran.length) return { run: null, attempts: 0 };
    const run = await api.get(`/executions/${encodeURIComponent(trial.execution_id)}/node-runs/${ran[0].node_run_id}`);
    return { run, attempts: ran.length };
  }

  async function showTrial(trial) {
    const { run, attempts } = await triedRun(trial);
    tryProgress(el("span", { class: `badge ${trial.status}` }, trial.status), " Trial ", trialLink(trial),
      trial.started_at && trial.completed_at ? ` ended after ${fmt.ms(Date.parse(trial.completed_at) - Date.parse(trial.started_at))}` : "",
      " · ", trialLink(trial, "its page →"));
    $("try-result").replaceChildren(...[
      trial.ended_reason ? el("p", { class: "ended-reason" }, el("strong", {}, "Why it ended: "), trial.ended_reason) : null,
      attempts > 1 ? el("p", { class: "muted small" }, `${attempts} attempts: the last is shown; the trial's page has each.`) : null,
      run ? nodeRun.record(run) : el("p", { class: "muted" }, "The node did not run."),
    ].filter(Boolean));
  }

  async function follow(trial) {
    const began = Date.now();
    let failures = 0;
    while (trial.status === "pending" || trial.status === "running") {
      following(trial, began);
      await new Promise((resolve) => setTimeout(resolve, TRY_POLL_MS));
      try {
        trial = await api.get(`/executions/${encodeURIComponent(trial.execution_id)}`);
        failures = 0;
      } catch (error) {
        failures += 1;
        if (error.status === 404 || failures > 10) {
          tryProgress("Could not follow trial ", trialLink(trial), `: ${error.message}.`);
          return;
        }
      }
    }
    try {
      await showTrial(trial);
    } catch (error) {
      tryProgress("Could not read trial ", trialLink(trial), `: ${error.message}.`);
    }
  }

  async function tryNode() {
    clearErrors();
    const body = overrides();
    if (body === null) return;
    for (const name of TRY_FIELDS) {
      const value = document.querySelector(`[data-field="${name}"]`).value;
      if (value) body[name] = value;
    }
    const button = $("try-node");
    button.disabled = true;
    $("try-result").replaceChildren();
    tryProgress(el("span", { class: "spinner" }), " Starting the trial…");
    $("try-card").scrollIntoView({ behavior: "smooth", block: "start" });
    try {
      await follow(await api.post(`${nodePath}/try`, body));
    } catch (error) {
      tryProgress();
      const field = fieldOf(error, [...FIELDS, ...TRY_FIELDS]);
      if (field) fieldError(field, error.message);
      $("try-error").textContent = `Could not try the node: ${error.message}`;
      $("try-error").hidden = false;
    } finally {
      button.disabled = false;
    }
  }

  $("plan-again").addEventListener("click", () => plan(false));
  $("plan-with").addEventListener("click", () => plan(true));
  if ($("try-node")) {
    $("try-node").addEventListener("click", tryNode);
    loadTryChoices();
  }
  plan(false);
})();
