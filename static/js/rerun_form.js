// The form that re-runs a past run from one of its nodes (POST /api/executions/{id}/rerun),
// opened by an author from a node's panel on the run's page. Before anything is sent it
// shows what the re-run will do, as engine/replay.py decides it: the outputs it reuses
// (each editable; only a changed one is sent, in `outputs`) and, for each node that runs
// again, its agent version ("as in this run" unless another is picked: `agent_versions`).
// The server checks everything again; its errors are shown at the field they name.
// The run's record summarises its node runs (each node's latest run, with its output); a
// state machine's form reads the run's node runs, light, a page at a time to find its
// recorded path, and the outputs it reuses by their node run.
(function () {
  "use strict";

  const { api, el, fmt } = window.switchyard;
  const DONE = new Set(["success", "skipped"]);
  const ROUND_STARTS = new Set(["first", "reused", "edited"]);
  const CURRENT = "current";
  const PAGE = 500; // node runs read at a time (the API's largest page)
  const READERS = 4; // pages read at once
  const PATH_SHOWN = 8; // the steps a step's option names (the last ones, after "…")

  // A state machine's steps, in order (engine/replay.py `recorded_path`): each node's round
  // (its first attempt, then any retry, fallback or person's output) ends with the run
  // that decided how it went.
  function recordedPath(runs) {
    const path = [];
    for (const run of runs) {
      const last = path[path.length - 1];
      if (ROUND_STARTS.has(run.kind) || !last || last.node_id !== run.node_id) path.push(run);
      else path[path.length - 1] = run;
    }
    return path;
  }

  // What a re-run from `nodeId` does (engine/replay.py `split`): `reused`, the node runs it
  // copies, in the run's order; `again`, the nodes that may run, the chosen one first;
  // `refused`, why the server would refuse it. A state machine starts at a step of its
  // recorded path (by default the node's last) and may run any node after it; the other
  // topologies run the node and everything downstream of it (`downstream`, from the
  // server) and reuse the latest run of every other node, which must be done.
  function outline(form, step) {
    const { runs, nodeId, graph, downstream } = form;
    const nodes = graph.nodes.map((node) => node.id);
    if (graph.topology === "state_machine") {
      const path = recordedPath(runs);
      const steps = path.map((run, index) => (run.node_id === nodeId ? index + 1 : 0)).filter(Boolean);
      if (!steps.length) {
        const shown = path.map((run) => run.node_id).join(" → ") || "nothing ran";
        return { path, steps, reused: [], again: [nodeId],
          refused: `${nodeId} is not on this run's path (${shown}): a re-run starts at a step the run took.` };
      }
      const chosen = steps.includes(step) ? step : steps[steps.length - 1];
      return { path, steps, step: chosen, reused: path.slice(0, chosen - 1).filter((run) => DONE.has(run.status)),
        again: [nodeId, ...nodes.filter((id) => id !== nodeId)] };
    }
    const again = new Set([nodeId, ...(downstream[nodeId] || [])]);
    const latest = new Map(runs.map((run) => [run.node_id, run]));
    const reused = [];
    let refused = "";
    for (const id of nodes) {
      if (again.has(id)) continue;
      const run = latest.get(id);
      if (run && DONE.has(run.status)) reused.push(run);
      else if (!refused) {
        refused = `${id}, whose output a re-run from ${nodeId} reuses, ${run ? `ended ${run.status}` : "never ran"} ` +
          `in this run: re-run from ${id} or a node before it.`;
      }
    }
    const order = new Map(runs.map((run, index) => [run.node_run_id, index]));
    reused.sort((a, b) => order.get(a.node_run_id) - order.get(b.node_run_id));
    return { reused, again: [nodeId, ...nodes.filter((id) => id !== nodeId && again.has(id))], refused };
  }

  // The version each node runs by default: the one its agent ran it with in this run (its
  // last such run: most often the node's latest, else one of its last hundred), or the
  // agent's latest when it did not run here (no entry).
  async function versionsInThisRun(form, nodeIds) {
    const found = new Map();
    await Promise.all(nodeIds.map(async (nodeId) => {
      const agent = form.graph.nodes.find((node) => node.id === nodeId).agent;
      const node = form.summary.get(nodeId);
      if (!node) return;
      const ranBy = (run) => run.agent_ref === agent && run.agent_version;
      if (ranBy(node.latest)) {
        found.set(nodeId, node.latest.agent_version);
        return;
      }
      const query = new URLSearchParams({ node: nodeId, order: "-sequence", limit: "100" });
      const page = await api.get(`${form.apiPath}/node-runs?${query}`).catch(() => null);
      const run = page && page.items.find(ranBy);
      if (run) found.set(nodeId, run.agent_version);
    }));
    return found;
  }

  // Every node run of the run, light, in order: a state machine's recorded path is made of
  // them. `progress(read, count)` is told as pages come.
  async function allRuns(form, progress) {
    const first = await api.get(`${form.apiPath}/node-runs?limit=${PAGE}`);
    const pages = [first.items];
    progress(first.items.length, first.count);
    const offsets = [];
    for (let offset = PAGE; offset < first.count; offset += PAGE) offsets.push(offset);
    let read = first.items.length;
    const reader = async () => {
      while (offsets.length) {
        const offset = offsets.shift();
        const page = await api.get(`${form.apiPath}/node-runs?limit=${PAGE}&offset=${offset}`);
        pages[offset / PAGE] = page.items;
        read += page.items.length;
        progress(read, first.count);
      }
    };
    await Promise.all(Array.from({ length: READERS }, reader));
    return pages.flat();
  }

  // The run whose output a reused node shows: its last one (a state machine may reuse a
  // node at several steps; an edit replaces the output of each).
  function shownRuns(plan) {
    return [...new Map(plan.reused.map((run) => [run.node_id, run])).values()];
  }

  /** Read the outputs the plan shows that the form does not have; whether any was read. */
  async function readOutputs(form, plan) {
    const missing = shownRuns(plan).filter((run) => !form.outputs.has(run.node_run_id));
    const records = await Promise.all(missing.map((run) => api.get(`${form.apiPath}/node-runs/${run.node_run_id}`)));
    records.forEach((record) => form.outputs.set(record.node_run_id, record.output));
    return records.length > 0;
  }

  async function agentVersions(graph, nodeIds) {
    const agents = [...new Set(graph.nodes.filter((node) => nodeIds.includes(node.id)).map((node) => node.agent))];
    const found = await Promise.all(agents.map((agent) =>
      api.get(`/agents/${encodeURIComponent(agent)}`).then((detail) => detail.versions || [], () => null)));
    return new Map(agents.map((agent, index) => [agent, found[index]]));
  }

  function pretty(value) {
    return JSON.stringify(value === undefined ? null : value, null, 2);
  }

  function fieldError(name) {
    return el("p", { class: "field-error", "data-for": name, hidden: true });
  }

  // -- drawing -------------------------------------------------------------------------------

  function outputsBlock(form, plan) {
    const byNode = new Map();
    for (const run of plan.reused) {
      if (!byNode.has(run.node_id)) byNode.set(run.node_id, []);
      byNode.get(run.node_id).push(run);
    }
    if (!byNode.size) {
      return [el("p", { class: "muted small" }, plan.refused ? "—" : "None: the re-run starts at the workflow's first node.")];
    }
    return [...byNode.entries()].map(([nodeId, runs]) => {
      const run = runs[runs.length - 1]; // a state machine may have reused a node at several steps
      const stepsText = plan.path && runs.length > 1
        ? ` · steps ${runs.map((item) => plan.path.indexOf(item) + 1).join(", ")}: an edit replaces the output of each`
        : "";
      const known = form.outputs.has(run.node_run_id);
      const textarea = el("textarea", { "data-output": nodeId, spellcheck: "false", rows: "6", disabled: !known,
        "aria-label": `Output of ${nodeId}` }, form.typed.has(nodeId) ? form.typed.get(nodeId)
        : known ? pretty(form.outputs.get(run.node_run_id)) : "Reading its output…");
      return el("div", { class: "rerun-output", "data-node": nodeId },
        el("div", { class: "row" },
          el("strong", { class: "mono" }, nodeId),
          el("span", { class: `badge ${run.status}` }, run.status),
          el("span", { class: "muted small" }, `${run.agent_ref} · node run ${run.node_run_id}${stepsText}`)),
        textarea, fieldError(`outputs.${nodeId}`));
    });
  }

  /** Whether a node's agent is called when it runs: a node drawn as an agent's (page_selectors.py). */
  function callsAgent(node) {
    return node.shape === "agent";
  }

  function versionsTable(form, plan, versions) {
    // A gate's agent stands for the people who decide it, a sub-workflow node's is on record
    // only: neither is called, so neither has a version to pick (only an agent's node, by its shape).
    const called = plan.again.filter((nodeId) => callsAgent(form.graph.nodes.find((node) => node.id === nodeId)));
    const rows = called.map((nodeId) => {
      const agent = form.graph.nodes.find((node) => node.id === nodeId).agent;
      const known = versions.get(agent);
      const ran = form.ran.get(nodeId);
      const select = el("select", { "data-version": nodeId, "aria-label": `Agent version of ${nodeId}` },
        el("option", { value: "" }, ran ? `as in this run (${ran})` : "the agent's latest (it did not run here)"),
        (known || []).map((version, index) => el("option", { value: version.version },
          `${version.version}${index === 0 ? " (the latest)" : ""}`)),
        el("option", { value: CURRENT }, "current: the agent's latest when the re-run starts"));
      return el("tr", { "data-node": nodeId },
        el("td", {}, el("span", { class: "mono" }, nodeId), nodeId === form.nodeId ? el("span", { class: "muted small" }, " (from here)") : ""),
        el("td", { class: "mono" }, agent),
        el("td", {}, select, known === null ? el("p", { class: "muted small" }, "Its versions could not be read; pick another later.") : "",
          fieldError(`agent_versions.${nodeId}`)));
    });
    return el("table", { class: "compact rerun-versions" },
      el("thead", {}, el("tr", {}, el("th", {}, "Node"), el("th", {}, "Agent"), el("th", {}, "Version"))),
      el("tbody", {}, rows));
  }

  // A step's path in its option: the nodes up to it, the last PATH_SHOWN of a long one.
  function pathText(path, number) {
    const nodes = path.slice(Math.max(0, number - PATH_SHOWN), number).map((run) => run.node_id);
    return `${number > PATH_SHOWN ? "… → " : ""}${nodes.join(" → ")}`;
  }

  function chooseStep(form, step) {
    keepTyped(form);
    draw(form, step);
    readOutputs(form, form.plan).then((read) => {
      if (read && shown === form && !form.section.hidden) {
        keepTyped(form);
        draw(form, form.plan.step);
      }
    }, (error) => showError(form, "", `Could not read the outputs reused: ${error.message}`));
  }

  function draw(form, step) {
    const { section, nodeId } = form;
    const machine = form.graph.topology === "state_machine";
    if (!form.runs) { // a state machine's path, still being read
      section.replaceChildren(
        el("div", { class: "row" },
          el("h2", {}, "Re-run from ", el("span", { class: "mono" }, nodeId)),
          el("span", { class: "spacer" }),
          el("button", { type: "button", class: "small-button", onclick: () => close(form) }, "Close")),
        el("p", { class: "muted small", id: "rerun-reading" }, form.reading || "Reading the run's path…"),
        el("p", { class: "error rerun-error", hidden: true }));
      return;
    }
    const plan = outline(form, step);
    form.plan = plan;
    const outputsKnown = shownRuns(plan).every((run) => form.outputs.has(run.node_run_id));
    const stepSelect = machine && plan.steps.length ? el("label", {}, "Start at step ",
      el("select", { id: "rerun-step", onchange: (event) => chooseStep(form, Number(event.target.value)) },
        plan.steps.map((number) => el("option", { value: String(number), selected: number === plan.step },
          `step ${number} of ${plan.path.length}: ${pathText(plan.path, number)}`))),
      fieldError("step")) : null;
    section.replaceChildren(...[
      el("div", { class: "row" },
        el("h2", {}, "Re-run from ", el("span", { class: "mono" }, nodeId)),
        el("span", { class: "spacer" }),
        el("button", { type: "button", class: "small-button", onclick: () => close(form) }, "Close")),
      el("p", { class: "small muted" }, "A new run of this workflow: the outputs below are copied from this run as they " +
        "are — not run again, not billed — unless you change them; then ", el("span", { class: "mono" }, nodeId),
        machine ? " and the steps after it run on the workers." : " and the nodes after it run on the workers."),
      el("p", { class: "error rerun-error", hidden: true }),
      stepSelect,
      plan.refused ? el("p", { class: "error rerun-refused" }, plan.refused) : null,
      el("h3", {}, `Outputs reused (${new Set(plan.reused.map((run) => run.node_id)).size})`),
      ...outputsBlock(form, plan),
      el("h3", {}, `Runs again (${plan.again.length})`),
      form.versions ? versionsTable(form, plan, form.versions) : el("p", { class: "muted small" }, "Reading the agents' versions…"),
      el("div", { class: "row rerun-actions" },
        el("button", { type: "button", class: "primary", id: "rerun-submit", disabled: Boolean(plan.refused) || !form.versions || !outputsKnown,
          onclick: () => submit(form) }, `Re-run from ${nodeId}`),
        el("span", { class: "muted small", id: "rerun-status" })),
    ].filter(Boolean));
  }

  // What was typed in the outputs survives choosing another step.
  function keepTyped(form) {
    for (const box of form.section.querySelectorAll("textarea[data-output]:not(:disabled)")) form.typed.set(box.dataset.output, box.value);
  }

  // -- sending ---------------------------------------------------------------------------------

  function showError(form, where, text) {
    const fields = [...form.section.querySelectorAll(".field-error[data-for]")].map((box) => box.dataset.for)
      .filter((name) => where === name || where.startsWith(`${name}.`) || where.startsWith(`${name}[`))
      .sort((a, b) => b.length - a.length);
    if (!fields.length) {
      const top = form.section.querySelector(".rerun-error");
      top.textContent = text;
      top.hidden = false;
      top.scrollIntoView({ block: "nearest" });
      return;
    }
    const box = form.section.querySelector(`.field-error[data-for="${CSS.escape(fields[0])}"]`);
    box.textContent = text;
    box.hidden = false;
    const input = box.parentElement.querySelector("textarea, select");
    if (input) {
      input.classList.add("invalid");
      input.focus();
    }
  }

  function clearErrors(form) {
    form.section.querySelectorAll(".field-error, .rerun-error").forEach((box) => { box.hidden = true; });
    form.section.querySelectorAll(".invalid").forEach((input) => input.classList.remove("invalid"));
  }

  async function submit(form) {
    clearErrors(form);
    const body = { from_node: form.nodeId };
    if (form.plan.step) body.step = form.plan.step;
    const outputs = {};
    const latest = new Map(shownRuns(form.plan).map((run) => [run.node_id, run]));
    for (const box of form.section.querySelectorAll("textarea[data-output]")) {
      const nodeId = box.dataset.output;
      let value;
      try {
        value = JSON.parse(box.value);
      } catch (error) {
        showError(form, `outputs.${nodeId}`, `The output of ${nodeId} is not JSON: ${error.message}`);
        return;
      }
      if (JSON.stringify(value) !== JSON.stringify(form.outputs.get(latest.get(nodeId).node_run_id) ?? null)) outputs[nodeId] = value;
    }
    if (Object.keys(outputs).length) body.outputs = outputs;
    const versions = {};
    for (const select of form.section.querySelectorAll("select[data-version]")) {
      if (select.value) versions[select.dataset.version] = select.value;
    }
    if (Object.keys(versions).length) body.agent_versions = versions;

    const button = form.section.querySelector("#rerun-submit");
    const status = form.section.querySelector("#rerun-status");
    button.disabled = true;
    status.textContent = "Starting the re-run…";
    try {
      const started = await api.post(`${form.apiPath}/rerun`, body);
      status.textContent = `Started ${started.execution_id}; opening it…`;
      window.location.assign(`/executions/${encodeURIComponent(started.execution_id)}/`);
    } catch (error) {
      button.disabled = false;
      status.textContent = "";
      showError(form, error.where, error.message);
    }
  }

  // -- opening and closing -------------------------------------------------------------------

  function close(form) {
    form.section.hidden = true;
    form.section.replaceChildren();
  }

  /** Open the form in `section` for a re-run of `record` (GET /api/executions/{id}) from
   *  `nodeId`; `graph` is the page's drawing of the workflow, `downstream` each node's
   *  descendants (seq, par, dag). */
  let shown = null; // the form in the section now (another node's may have replaced it)

  async function open({ section, record, nodeId, graph, downstream }) {
    const summary = new Map(record.node_runs_summary.nodes.map((node) => [node.node_id, node]));
    const latest = [...summary.values()].map((node) => node.latest).sort((a, b) => a.sequence - b.sequence);
    const machine = graph.topology === "state_machine";
    const form = {
      section, record, nodeId, graph, downstream, summary,
      apiPath: `/executions/${encodeURIComponent(record.execution_id)}`,
      runs: machine ? null : latest, // the runs the plan is made of: a state machine's every one, else each node's latest
      outputs: new Map(latest.map((run) => [run.node_run_id, run.output])), // node run id → its output, as read
      ran: new Map(), typed: new Map(), versions: null, reading: "",
    };
    shown = form;
    section.hidden = false;
    draw(form);
    section.scrollIntoView({ behavior: "smooth", block: "start" });
    const still = () => shown === form && !section.hidden;
    try {
      if (machine) {
        form.runs = await allRuns(form, (read, count) => {
          form.reading = `Reading the run's path: ${fmt.n(read)} of ${fmt.n(count)} node runs…`;
          const line = section.querySelector("#rerun-reading");
          if (line && still()) line.textContent = form.reading;
        });
        if (still()) draw(form);
      }
      const called = graph.nodes.filter(callsAgent).map((node) => node.id);
      const again = outline(form).again.filter((id) => called.includes(id));
      const [versions, ran] = await Promise.all([agentVersions(graph, again), versionsInThisRun(form, again),
        readOutputs(form, outline(form))]);
      Object.assign(form, { versions, ran });
    } catch (error) {
      if (still()) showError(form, "", `Could not read this run: ${error.message}`);
      return;
    }
    if (still()) {
      keepTyped(form);
      draw(form, form.plan.step);
    }
  }

  window.switchyard.rerunForm = { open };
})();
