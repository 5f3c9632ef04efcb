// A run's inspection page. The server renders the header and a page of node runs; this
// script reads the whole record from GET /api/executions/{id} and keeps the page live
// while the run goes on (one request a second, no reload): the status, the graph's
// colours, the timeline, the progress, the escalation, and the open node's panel; once the
// run has ended, its evaluation and quality gate as soon as a worker has scored it. The
// node panel draws a node run with node_run.js; authors re-run the run from a node there
// (rerun_form.js), and a re-run's copies say which node run they were copied from. A gate's
// run (a person's step) shows what it asks, the data shown, who may decide and its time-out,
// and to those who may decide it (the server says who: `gates`) a form that posts the
// decision to POST /api/executions/{id}/node-runs/{node_run_id}/decision.
// What the run cost is shown beside its tokens (cost.js): its total in the header (with the
// judge's calls), each node's in the graph's label and tooltip, the timeline and the table,
// and each node run's calls in its panel; a run stopped by its budget (BUDGET_EXCEEDED)
// says so above the graph, with the limit, what was spent and the refused call's bound.
(function () {
  "use strict";

  const { api, el, jsonData, fmt, nodeRun, cost: money } = window.switchyard;
  const data = jsonData("execution-data");
  const root = document.getElementById("execution-page");
  const rerunSection = document.getElementById("rerun-form"); // authors only
  const canSteer = root.dataset.canSteer === "true";
  const ACTIVE = new Set(["pending", "running", "escalated", "waiting"]); // waiting: gates open for people
  const DONE = new Set(["success", "skipped"]);
  const COPIES = new Set(["reused", "edited"]); // a re-run's copies of the runs it reuses
  const POLL_MS = 1000;
  const MAX_ATTEMPTS_SHOWN = 20;
  const MAX_TRAIL = 12;
  const apiPath = `/executions/${encodeURIComponent(data.execution_id)}`;
  // Node runs that ran a Tree-of-Thoughts search (the template lists them): their tree's page.
  const thoughtTrees = new Map([...document.querySelectorAll("tr[data-thought-tree-run]")].map((row) =>
    [Number(row.dataset.thoughtTreeRun), row.querySelector("a[data-thought-tree]").getAttribute("href")]));

  const page = {
    record: null,
    selected: null, // node id
    selectedRun: null, // node run id asked for (timeline bar, table link)
    panelKey: "",
    escalationKey: undefined,
    open: new Map(), // node run id → open? (kept across live re-renders)
    gateDrafts: new Map(), // a gate's node run id → {comment, output} as typed (kept across re-renders)
    gateNotes: new Map(), // a gate's node run id → why the last decision sent was refused
    gatesKey: undefined,
    budgetKey: undefined,
    judgeKey: undefined,
    cy: null,
    failures: 0,
  };

  // -- helpers -----------------------------------------------------------------------------

  function badge(status, extra) {
    return el("span", { class: `badge ${status}${extra ? ` ${extra}` : ""}` }, status);
  }

  function cssVar(name, fallback) {
    const value = getComputedStyle(document.documentElement).getPropertyValue(name).trim();
    return value || fallback;
  }

  function runsByNode(record) {
    const map = new Map();
    for (const run of record.node_runs || []) {
      if (!map.has(run.node_id)) map.set(run.node_id, []);
      map.get(run.node_id).push(run);
    }
    return map;
  }

  // The status a node is drawn in: its latest run's, or "escalated" for the node a run
  // waits on, or "none" when it has not run.
  function nodeStatus(nodeId, runs, record) {
    if (record && record.status === "escalated" && record.escalation && record.escalation.node_id === nodeId) return "escalated";
    const list = runs.get(nodeId);
    return list && list.length ? list[list.length - 1].status : "none";
  }

  function nodeStatusFromServer(nodeId) {
    const state = data.states[nodeId];
    return state ? state.status : "none";
  }

  // What node runs cost together, added exactly: {value (USD decimal), complete, called
  // (whether any of them called a model), tokens in and out}.
  function costOf(list) {
    const total = { sum: 0n, complete: true, called: false, tokensIn: 0, tokensOut: 0 };
    for (const run of list) {
      if (run.calls && run.calls.length) total.called = true;
      total.sum += money.units(run.cost) ?? 0n;
      if (run.cost_complete === false) total.complete = false;
      total.tokensIn += run.tokens_in || 0;
      total.tokensOut += run.tokens_out || 0;
    }
    return { value: money.decimal(total.sum), complete: total.complete, called: total.called,
      tokensIn: total.tokensIn, tokensOut: total.tokensOut };
  }

  // A cost in one short line: "$0.0012", "≥ $0.0012" when not every call was priced.
  function costLine(value, complete) {
    return `${complete === false ? "≥ " : ""}${money.text(value)}`;
  }

  // A node run's cost, or a dash when it called no model (a gate, a copy, a run not yet done).
  function runCost(run) {
    return run.calls && run.calls.length ? money.shown(run.cost, run.cost_complete)
      : el("span", { class: "muted", title: "No model call" }, "—");
  }

  // -- the graph ---------------------------------------------------------------------------

  const COLOURS = {
    none: ["#ffffff", "#9aa4b2", "#1d2430"],
    pending: [cssVar("--pending", "#9aa4b2"), cssVar("--pending", "#9aa4b2"), "#ffffff"],
    running: [cssVar("--running", "#2f6fdb"), "#1b4ea6", "#ffffff"],
    success: [cssVar("--success", "#2c8a4b"), "#1f6637", "#ffffff"],
    failed: [cssVar("--failed", "#c23b3b"), "#8d2424", "#ffffff"],
    skipped: [cssVar("--skipped", "#b9c0ca"), "#8e97a3", "#1d2430"],
    cancelled: [cssVar("--cancelled", "#7d8590"), "#5b626b", "#ffffff"],
    escalated: [cssVar("--escalated", "#c98a12"), "#8f610b", "#ffffff"],
    waiting: [cssVar("--waiting", "#7b4fc9"), "#57358f", "#ffffff"],
  };
  const GATE_LINE = "a person decides"; // the third line of a gate's label in the graph

  // A node's label and size: its id and agent, "a person decides" for a gate (drawn as a
  // hexagon), and once it has called a model, what its runs cost.
  function nodeBox(node, cost) {
    const lines = [node.id, String(node.agent), ...(node.gate ? [GATE_LINE] : []), ...(cost ? [cost] : [])];
    const longest = Math.max(...lines.map((line) => line.length));
    return { label: lines.join("\n"), width: Math.max(90, longest * 7.4 + 26) + (node.gate ? 34 : 0),
      height: (node.gate ? 58 : 42) + (cost ? 14 : 0) };
  }

  function graphElements() {
    const nodes = data.graph.nodes.map((node) => ({
      group: "nodes",
      data: { id: node.id, status: nodeStatusFromServer(node.id), gate: node.gate ? "yes" : "no", ...nodeBox(node, "") },
      position: node.layout ? { x: node.layout.x, y: node.layout.y } : undefined,
    }));
    const edges = data.graph.edges.map((edge, index) => ({
      group: "edges",
      data: {
        id: `e${index}`, source: edge.source, target: edge.target, kind: edge.kind,
        label: edge.condition ? (edge.condition.length > 34 ? `${edge.condition.slice(0, 33)}…` : edge.condition) : "",
        condition: edge.condition || "",
      },
    }));
    return [...nodes, ...edges];
  }

  function initGraph() {
    const container = document.getElementById("graph");
    if (!window.cytoscape || !data.graph.nodes.length) {
      container.append(el("p", { class: "muted small" }, data.graph.nodes.length ? "The graph library did not load." : "This workflow has no node."));
      return;
    }
    if (window.cytoscapeDagre && !window.cytoscape.__switchyardDagre) {
      window.cytoscape.use(window.cytoscapeDagre);
      window.cytoscape.__switchyardDagre = true;
    }
    const preset = data.graph.nodes.every((node) => node.layout && typeof node.layout.x === "number");
    const style = [
      { selector: "node", style: {
        shape: "round-rectangle", label: "data(label)", "text-wrap": "wrap", "text-valign": "center", "text-halign": "center",
        "font-size": 11, "font-family": "ui-monospace, Menlo, monospace", width: "data(width)", height: "data(height)",
        "background-color": COLOURS.none[0], "border-width": 2, "border-color": COLOURS.none[1], color: COLOURS.none[2],
        "border-style": "dashed",
      } },
      ...Object.entries(COLOURS).filter(([status]) => status !== "none").map(([status, [fill, border, ink]]) => ({
        selector: `node[status = "${status}"]`,
        style: { "background-color": fill, "border-color": border, color: ink, "border-style": "solid" },
      })),
      { selector: 'node[status = "running"]', style: { "border-width": 4, "border-style": "double" } },
      { selector: 'node[gate = "yes"]', style: { shape: "hexagon" } },
      { selector: 'node[status = "waiting"]', style: { "border-width": 4 } },
      { selector: "node.selected", style: { "overlay-color": "#2f6fdb", "overlay-opacity": 0.16, "overlay-padding": 7 } },
      { selector: "edge", style: {
        width: 1.6, "line-color": "#aab3c0", "target-arrow-color": "#aab3c0", "target-arrow-shape": "triangle",
        "curve-style": "bezier", label: "data(label)", "font-size": 9, color: "#5d6878", "text-rotation": "autorotate",
        "text-background-color": "#ffffff", "text-background-opacity": 0.9, "text-background-padding": 2,
      } },
      { selector: 'edge[kind = "data"]', style: { "line-style": "dashed", width: 1, "line-color": "#c9d0da", "target-arrow-color": "#c9d0da" } },
      { selector: "edge.taken", style: { width: 2.6, "line-color": "#5d6878", "target-arrow-color": "#5d6878" } },
    ];
    page.cy = window.cytoscape({
      container, elements: graphElements(), style,
      layout: preset ? { name: "preset", padding: 24 } : { name: window.cytoscapeDagre ? "dagre" : "breadthfirst", rankDir: "LR", nodeSep: 40,
        rankSep: data.graph.edges.some((edge) => edge.condition) ? 170 : 80, padding: 24 },
      maxZoom: 1.4, userZoomingEnabled: false, userPanningEnabled: false, boxSelectionEnabled: false, autoungrabify: true,
    });
    page.cy.on("tap", "node", (event) => select(event.target.id(), null, true));
    window.switchyard.executionGraph = page.cy; // for the console, and for tests that click a node
    // A node's tooltip: its status, runs, tokens and cost (paintGraph keeps it current).
    page.cy.on("mouseover", "node", (event) => {
      container.style.cursor = "pointer";
      container.title = event.target.data("title") || "";
    });
    page.cy.on("mouseout", "node", () => {
      container.style.cursor = "";
      container.title = "";
    });
    window.addEventListener("resize", () => page.cy && page.cy.fit(undefined, 24));
  }

  function paintGraph(record, runs) {
    if (!page.cy) return;
    page.cy.batch(() => {
      page.cy.nodes().forEach((node) => {
        const status = nodeStatus(node.id(), runs, record);
        node.data("status", status);
        const list = runs.get(node.id()) || [];
        const cost = costOf(list);
        const shown = cost.called ? costLine(cost.value, cost.complete) : "";
        const box = nodeBox(data.graph.nodes.find((item) => item.id === node.id()) || { id: node.id(), agent: "" }, shown);
        if (node.data("label") !== box.label) node.data(box);
        node.data("cost", cost.called ? cost.value : "");
        node.data("title", `${node.id()}: ${status}${list.length > 1 ? ` (${list.length} runs)` : ""}` +
          (list.length ? ` · ${fmt.n(cost.tokensIn)} → ${fmt.n(cost.tokensOut)} tokens` : "") +
          (cost.called ? ` · cost ${cost.complete ? "" : "at least "}${money.text(cost.value)}` +
            `${cost.complete ? "" : " (not every call priced)"}` : ""));
        node.toggleClass("selected", node.id() === page.selected);
      });
      page.cy.edges().forEach((edge) => {
        const source = runs.get(edge.data("source")) || [];
        const target = runs.get(edge.data("target")) || [];
        const taken = source.some((run) => run.status === "success") && target.length > 0 &&
          (edge.data("kind") !== "transition" || source.some((run) => run.decision && run.decision.node_id === edge.data("target")));
        edge.toggleClass("taken", taken);
      });
    });
  }

  // -- the header --------------------------------------------------------------------------

  function renderHeader(record, runs) {
    const status = record.status;
    const badgeEl = document.getElementById("run-status");
    badgeEl.className = `badge big ${status}`;
    badgeEl.textContent = status;
    badgeEl.dataset.status = status;
    const active = ACTIVE.has(status);
    document.getElementById("run-live").hidden = !active;
    document.getElementById("run-started").textContent = fmt.time(record.started_at) || "not yet";
    const ended = document.getElementById("run-ended");
    ended.replaceChildren(record.completed_at ? fmt.time(record.completed_at)
      : el("span", { class: "muted" }, active ? (status === "escalated" || status === "waiting" ? "waiting for a person" : "still going") : "—"));
    const started = record.started_at ? Date.parse(record.started_at) : null;
    const end = record.completed_at ? Date.parse(record.completed_at) : Date.now();
    document.getElementById("run-duration").textContent = started ? `${fmt.ms(end - started)}${record.completed_at ? "" : " so far"}` : "—";
    const reason = document.getElementById("run-ended-reason");
    reason.hidden = !record.ended_reason;
    reason.querySelector("span").textContent = record.ended_reason || "";
    const failed = (record.node_runs || []).filter((run) => run.status === "failed").length;
    document.getElementById("run-counts").replaceChildren(String((record.node_runs || []).length),
      failed ? el("span", { class: "muted small" }, ` (${failed} failed)`) : "");
    renderCost(record);
    document.getElementById("run-input").textContent = JSON.stringify(record.input || {}, null, 2);
    document.getElementById("run-state").textContent = JSON.stringify(record.state || {}, null, 2);

    // Progress: nodes whose latest run is done, of the workflow's nodes.
    const progress = document.getElementById("run-progress");
    progress.hidden = !active;
    const total = data.graph.nodes.length;
    const done = data.graph.nodes.filter((node) => DONE.has(nodeStatus(node.id, runs, record))).length;
    const running = data.graph.nodes.filter((node) => nodeStatus(node.id, runs, record) === "running").map((node) => node.id);
    progress.querySelector(".progress > span").style.width = `${total ? Math.round((100 * done) / total) : 0}%`;
    progress.querySelector(".progress").setAttribute("aria-valuenow", String(done));
    progress.querySelector(".progress-text").textContent = `${done} of ${total} nodes done`;
    const waiting = data.graph.nodes.filter((node) => nodeStatus(node.id, runs, record) === "waiting").map((node) => node.id);
    progress.querySelector(".progress-running").textContent = [running.length ? `· running: ${running.join(", ")}` : "",
      waiting.length ? `· waiting for a person's decision: ${waiting.join(", ")}` : ""].filter(Boolean).join(" ");
  }

  // -- what the run cost ---------------------------------------------------------------------

  // The run's cost (its node runs' and the judge's calls), and the judge's calls.
  function renderCost(record) {
    const judge = record.calls || [];
    const judgeCost = judge.reduce((sum, call) => sum + (money.units(call.cost) ?? 0n), 0n);
    const nodes = costOf(record.node_runs || []);
    document.getElementById("run-cost").replaceChildren(money.shown(record.cost, record.cost_complete),
      judge.length ? el("span", { class: "muted small run-cost-split" },
        ` (nodes ${money.text(nodes.value)}, the judge's calls ${money.text(money.decimal(judgeCost))})`) : "");
    const key = JSON.stringify(judge);
    if (key === page.judgeKey) return;
    page.judgeKey = key;
    const box = document.getElementById("run-judge-calls");
    box.hidden = !judge.length;
    box.querySelector(".calls-box").replaceChildren(judge.length ? money.callsTable(judge, money.decimal(judgeCost),
      judge.every((call) => call.usage === "builtin" || (call.cost !== null && call.cost !== undefined))) : "");
  }

  // A run stopped by its budget: a call that could have crossed max_cost (the run's) or
  // max_node_cost (a node run's) was refused before it was made (agents/backends/metering.py);
  // its node run failed with BUDGET_EXCEEDED and the figures in its error_details.
  function renderBudgetStop(record) {
    const box = document.getElementById("budget-stop");
    const refused = (record.node_runs || []).filter((run) => run.error_code === "BUDGET_EXCEEDED");
    const run = refused.length ? refused[refused.length - 1] : null;
    const key = JSON.stringify(run ? [run.node_run_id, run.error_details, record.status] : null);
    if (key === page.budgetKey) return;
    page.budgetKey = key;
    box.hidden = !run;
    if (!run) {
      box.replaceChildren();
      return;
    }
    const details = run.error_details || {};
    const { fact } = nodeRun;
    const limit = details.limit === "max_cost" || details.limit === "max_node_cost" ? details.limit : "";
    const spent = limit === "max_cost" ? details.run_spent : details.node_spent;
    const whose = limit === "max_cost" ? "the run" : "the node run";
    const limitUnits = money.units(details[limit]);
    const spentUnits = money.units(spent);
    const left = limitUnits !== null && spentUnits !== null
      ? money.decimal(limitUnits > spentUnits ? limitUnits - spentUnits : 0n) : null;
    const figure = (name, ...content) => el("span", { "data-figure": name }, ...content);
    const node = el("a", { class: "mono", href: `?node=${encodeURIComponent(run.node_id)}&run=${run.node_run_id}#node-panel`,
      onclick: (event) => { event.preventDefault(); select(run.node_id, run.node_run_id, true); } }, run.node_id);
    const model = [details.backend, details.model].filter(Boolean).join(" / ");
    let why;
    let facts = [];
    if (limit) {
      why = el("p", {}, "The next call could have cost up to ", el("strong", {}, money.text(details.estimate)), ", and ", whose,
        " had spent ", el("strong", {}, money.text(spent)), " of its ", el("code", {}, limit), " ", el("strong", {}, money.text(details[limit])),
        ": the call was not made.");
      facts = [
        fact("Limit", figure("limit", el("code", {}, limit), " ", money.text(details[limit]))),
        fact(limit === "max_cost" ? "Spent by the run" : "Spent by the node run", figure("spent", money.text(spent))),
        fact("Left", figure("left", left === null ? "—" : money.text(left))),
        fact("The refused call's bound", figure("estimate", money.text(details.estimate)),
          el("span", { class: "muted small" }, ` (${fmt.n(details.tokens_in)} tokens in and up to ${fmt.n(details.max_tokens)} out, priced)`)),
        fact("Backend / model", model || "—"),
      ];
    } else {
      why = el("p", {}, "The model ", el("code", {}, model || "?"), " has no prices in the catalogue, so a call to it could cost anything: ",
        "a run with a cost limit does not make it.");
      facts = [fact("Backend / model", figure("model", model || "—"))];
    }
    const next = record.status === "escalated" ? "The run waits for a person (on_budget: escalate)."
      : ACTIVE.has(record.status) ? "" : "The node is not retried nor handed to the fallback agent, which would spend more.";
    box.replaceChildren(
      el("h2", {}, "Stopped by its budget at node ", node),
      why,
      el("dl", { class: "facts compact-facts budget-figures" }, facts),
      next ? el("p", { class: "muted small" }, next) : null);
  }

  // -- the escalation ----------------------------------------------------------------------

  function renderEscalation(record) {
    const section = document.getElementById("escalation");
    const escalation = record.status === "escalated" ? record.escalation : null;
    const key = JSON.stringify(escalation);
    if (key === page.escalationKey) return;
    page.escalationKey = key;
    section.hidden = !escalation;
    if (!escalation) {
      section.replaceChildren();
      return;
    }
    const children = [
      el("h2", {}, "Waiting for a person: node ", el("span", { class: "mono" }, escalation.node_id), " escalated"),
      el("dl", { class: "facts" },
        el("div", {}, el("dt", {}, "Error"), el("dd", {}, el("code", {}, escalation.error_code || ""), " ", escalation.error || "")),
        el("div", {}, el("dt", {}, "Escalated to"), el("dd", {}, escalation.escalate_to || "—")),
        el("div", {}, el("dt", {}, "When"), el("dd", {}, fmt.time(escalation.at)))),
      el("p", { class: "small" }, el("a", { href: "#node-panel", onclick: (event) => { event.preventDefault(); select(escalation.node_id, null, true); } },
        `Open ${escalation.node_id}: its attempts and fallbacks`)),
    ];
    // What a person has typed survives a re-render (the first poll rebuilds what the server drew).
    const typed = section.querySelector("#resume-output");
    if (canSteer) {
      children.push(el("div", { class: "steer" },
        el("label", {}, "Output to go on with (JSON) ", el("textarea", { id: "resume-output", spellcheck: "false" }, "{}")),
        el("p", { class: "field-error", "data-for": "resume-output", hidden: true }),
        el("div", { class: "row" },
          el("button", { type: "button", class: "primary", "data-steer": "resume" }, "Resume with this output"),
          el("button", { type: "button", "data-steer": "retry" }, "Retry the node"),
          el("button", { type: "button", class: "danger", "data-steer": "abort" }, "Abort the run"))));
    } else {
      children.push(el("p", { class: "muted small" }, "Only authors can resume, retry or abort a run."));
    }
    const typedValue = typed ? typed.value : null;
    section.replaceChildren(...children);
    if (typedValue !== null && section.querySelector("#resume-output")) section.querySelector("#resume-output").value = typedValue;
  }

  async function steer(button) {
    const action = button.dataset.steer;
    const section = document.getElementById("escalation");
    const fieldError = section.querySelector(".field-error");
    const textarea = section.querySelector("#resume-output");
    let message = section.querySelector(".steer-error");
    if (!message) {
      message = el("p", { class: "error steer-error", hidden: true });
      section.querySelector(".steer").append(message);
    }
    message.hidden = true;
    fieldError.hidden = true;
    textarea.classList.remove("invalid");
    let body;
    if (action === "resume") {
      try {
        body = { output: JSON.parse(textarea.value) };
      } catch (error) {
        fieldError.textContent = `This is not JSON: ${error.message}`;
        fieldError.hidden = false;
        textarea.classList.add("invalid");
        textarea.focus();
        return;
      }
    }
    if (action === "abort" && button.dataset.confirming !== "true") {
      button.dataset.confirming = "true";
      button.textContent = "Click again to abort";
      setTimeout(() => { button.dataset.confirming = ""; button.textContent = "Abort the run"; }, 5000);
      return;
    }
    const buttons = section.querySelectorAll("button[data-steer]");
    buttons.forEach((b) => { b.disabled = true; });
    const label = button.textContent;
    button.textContent = { resume: "Resuming…", retry: "Retrying…", abort: "Aborting…" }[action];
    try {
      const record = await api.post(`${apiPath}/${action}`, body);
      update(record);
      schedule(POLL_MS);
    } catch (error) {
      buttons.forEach((b) => { b.disabled = false; });
      button.textContent = label;
      const where = error.details && error.details.where ? ` (${error.details.where})` : "";
      if (action === "resume" && error.status === 422) {
        fieldError.textContent = `${error.message}${where}`;
        fieldError.hidden = false;
        textarea.classList.add("invalid");
      } else {
        message.textContent = `${error.message}${where}`;
        message.hidden = false;
      }
    }
  }

  // -- the timeline ------------------------------------------------------------------------

  function timelineRows(runs) {
    const ids = data.graph.nodes.map((node) => node.id);
    for (const nodeId of runs.keys()) if (!ids.includes(nodeId)) ids.push(nodeId);
    return ids;
  }

  function renderTimeline(record, runs) {
    const box = document.getElementById("timeline");
    const all = record.node_runs || [];
    const started = all.filter((run) => run.started_at);
    if (!started.length) {
      const queued = all.filter((run) => run.status === "pending").map((run) => run.node_id);
      box.replaceChildren(el("p", { class: "muted small" }, ACTIVE.has(record.status)
        ? `Waiting for the first node to start…${queued.length ? ` (queued: ${queued.join(", ")})` : ""}` : "No node run started."));
      document.getElementById("timeline-span").textContent = "";
      return;
    }
    const now = Date.now();
    const t0 = Math.min(...started.map((run) => Date.parse(run.started_at)));
    const queued = record.started_at ? t0 - Date.parse(record.started_at) : 0;
    const ends = started.map((run) => (run.completed_at ? Date.parse(run.completed_at) : now));
    let t1 = Math.max(...ends, record.completed_at ? Date.parse(record.completed_at) : 0);
    if (ACTIVE.has(record.status) && record.status !== "escalated") t1 = Math.max(t1, now);
    const span = Math.max(1, t1 - t0);
    document.getElementById("timeline-span").textContent = `${fmt.ms(span)} from the first node's start` +
      (queued >= 1000 ? `, which waited ${fmt.ms(queued)} for a worker` : "");
    const position = (time) => `${((100 * (time - t0)) / span).toFixed(3)}%`;

    const axis = el("div", { class: "tl-axis" }, el("div", { class: "tl-label" }),
      el("div", { class: "tl-track" }, [0, 0.25, 0.5, 0.75, 1].map((f) => el("span", { class: "tl-tick", style: { left: `${(f * 100).toFixed(1)}%` } }, `+${fmt.ms(f * span)}`))),
      el("div", { class: "tl-cost muted" }, "cost"));
    const rows = timelineRows(runs).map((nodeId) => {
      const list = runs.get(nodeId) || [];
      const bars = list.filter((run) => run.started_at).map((run) => {
        const start = Date.parse(run.started_at);
        const end = run.completed_at ? Date.parse(run.completed_at) : (run.status === "running" || run.status === "waiting" ? now : start);
        const label = `${run.kind === "first" ? "" : `${run.kind} `}#${run.attempt}${run.status === "waiting" ? " waiting" : ""}`;
        return el("button", {
          type: "button", class: `tl-bar ${run.status} kind-${run.kind}${run.node_run_id === page.selectedRun ? " chosen" : ""}`,
          // A gate that still waits ends now, at the right edge: drawn from there, so its
          // width (at least what its label takes) never runs past the track.
          style: run.status === "waiting" && end === now
            ? { right: "0", width: `${((100 * Math.max(0, end - start)) / span).toFixed(3)}%` }
            : { left: position(start), width: `${((100 * Math.max(0, end - start)) / span).toFixed(3)}%` },
          "data-run": run.node_run_id,
          title: `${run.node_id} · ${run.kind} #${run.attempt}${COPIES.has(run.kind) ? " (not run in this execution)" : ""}` +
            ` · ${run.agent_ref} · ${run.status}` +
            ` · ${run.duration_ms !== null && run.duration_ms !== undefined ? fmt.ms(run.duration_ms) : fmt.ms(end - start) + " so far"}` +
            (run.tokens_in !== null && run.tokens_in !== undefined ? ` · ${fmt.n(run.tokens_in)} → ${fmt.n(run.tokens_out)} tokens` : "") +
            (run.calls && run.calls.length ? ` · ${costLine(run.cost, run.cost_complete)}` : "") +
            (run.error_code ? ` · ${run.error_code}` : ""),
          onclick: () => select(nodeId, run.node_run_id, true),
        }, el("span", {}, label));
      });
      const queued = list.filter((run) => !run.started_at && run.status === "pending").length;
      const cost = costOf(list);
      return el("div", { class: `tl-row${nodeId === page.selected ? " chosen" : ""}`, "data-node": nodeId },
        el("button", { type: "button", class: "tl-label mono", title: `${nodeId}: ${list.length} run(s)`, onclick: () => select(nodeId, null, true) },
          el("i", { class: `dot ${nodeStatus(nodeId, runs, record)}` }), nodeId),
        el("div", { class: "tl-track" }, bars, queued ? el("span", { class: "tl-queued small" }, `${queued} queued`) : ""),
        el("div", { class: "tl-cost", "data-cost": cost.called ? cost.value : "",
          title: cost.called ? `What ${nodeId}'s runs cost${cost.complete ? "" : " at least: not every call was priced"}` : "No model call" },
        cost.called ? costLine(cost.value, cost.complete) : el("span", { class: "muted" }, "—")));
    });
    box.replaceChildren(axis, ...rows);
  }

  // -- gates: a person's step --------------------------------------------------------------
  // A gate's run waits (status "waiting") until one of its deciders approves the data it
  // shows, rejects it, or passes on an edited version (engine/gates.py); its `gate` says
  // what was asked, of whom, what was shown and, once decided, what was decided, by whom,
  // when and why. Whether the signed-in user may decide comes from the server (`gates`).

  const DECISION_LABELS = { approve: "Approve", reject: "Reject", edit: "Pass on the edited data" };
  const DECIDING_LABELS = { approve: "Approving…", reject: "Rejecting…", edit: "Passing on the edit…" };
  const ON_TIMEOUT_TEXT = { approve: "approved as shown", reject: "rejected", escalate: "sent to a person (escalated)" };

  function gateInfo(nodeId) {
    return (data.gates || {})[nodeId] || { deciders: "", may_decide: false };
  }

  /** Who may decide, as the server words it; for a gate the page was not told of, from the run. */
  function decidersText(run) {
    const info = gateInfo(run.node_id);
    if (info.deciders) return info.deciders;
    const deciders = run.gate.deciders || {};
    const parts = (deciders.roles || []).length ? [`a user with the ${deciders.roles.join(" or ")} role`] : [];
    return [...parts, ...(deciders.users || [])].join(", or ");
  }

  function untilText(iso) {
    const left = Date.parse(iso) - Date.now();
    return Number.isNaN(left) ? "" : left > 0 ? `in ${fmt.ms(left)}` : "due now";
  }

  function timeoutText(run) {
    const gate = run.gate;
    if (!gate.timeout_seconds) return "none: it waits until a person decides";
    const outcome = ON_TIMEOUT_TEXT[gate.on_timeout] || gate.on_timeout;
    const when = run.status === "waiting" && run.decide_by ? `, at ${fmt.time(run.decide_by)} (${untilText(run.decide_by)})` : "";
    return `after ${fmt.ms(gate.timeout_seconds * 1000)} undecided, ${outcome}${when}`;
  }

  /** A gate's run in one line, after its agent in the attempt's summary. */
  function gateSummaryText(run) {
    const gate = run.gate;
    if (gate.decision) {
      const by = gate.timed_out ? "its time-out" : gate.decided_by || "—";
      return ` · ${gate.decision} by ${by}${run.duration_ms !== null && run.duration_ms !== undefined ? ` after ${fmt.ms(run.duration_ms)}` : ""}`;
    }
    return run.status === "waiting" ? " · waiting for a person's decision" : ` · ${run.status}, not decided`;
  }

  function decisionBadge(decision) {
    return el("span", { class: `badge decision-${decision}` }, decision);
  }

  function gateBlock(run) {
    const gate = run.gate;
    const { fact } = nodeRun;
    const waiting = run.status === "waiting";
    const names = Object.keys(gate.shown || {});
    const missing = gate.missing || [];
    const note = page.gateNotes.get(run.node_run_id);
    let action = null;
    if (waiting && gateInfo(run.node_id).may_decide) action = gateForm(run);
    else if (waiting) {
      action = el("p", { class: "gate-not-yours notice" }, `Waiting for ${decidersText(run)} to decide. `,
        "You may not decide this gate: the form is shown to its deciders only.");
    } else if (!gate.decision) {
      action = el("p", { class: "muted" }, `Not decided: this gate's run is ${run.status}.`);
    }
    return el("section", { class: `gate-box${waiting ? " waiting" : ""}`, "data-gate": run.node_run_id },
      el("div", { class: "row gate-head" }, el("h3", {}, "A person's decision"),
        waiting ? badge("waiting", "gate-state") : gate.decision ? decisionBadge(gate.decision) : badge(run.status, "gate-state")),
      el("p", { class: "gate-prompt" }, gate.prompt || "Decide on the data below."),
      el("section", { class: "gate-shown" }, el("h4", {}, "The data shown"),
        names.length ? el("dl", { class: "gate-data" }, names.flatMap((name) => [
          el("dt", { class: "mono" }, name),
          el("dd", {}, el("pre", { class: "gate-value", "data-shown": name }, fmt.json(gate.shown[name])))]))
          : el("p", { class: "muted small" }, "Nothing: none of the gate's named inputs was found in the run.")),
      missing.length ? el("section", { class: "gate-missing" }, el("h4", {}, `Missing (${missing.length})`),
        el("ul", {}, missing.map((item) => el("li", { "data-missing": item.name },
          el("strong", { class: "mono" }, item.name), " ", el("code", {}, item.path), `: ${item.error}`))),
        el("p", { class: "muted small" }, "Not in the run when the gate opened: an approval passes on only the data found.")) : null,
      el("dl", { class: "facts compact-facts gate-facts" },
        fact("Who may decide", el("span", { class: "gate-deciders" }, decidersText(run))),
        fact("Decisions offered", (gate.decisions || []).join(", ")),
        fact("Time-out", el("span", { class: "gate-timeout" }, timeoutText(run))),
        fact("Opened", fmt.time(run.started_at) || "—")),
      gate.decision ? el("dl", { class: "facts compact-facts gate-decision", "data-decision": gate.decision },
        fact("Decision", decisionBadge(gate.decision)),
        fact("Decided by", el("span", { class: "gate-decided-by" }, gate.timed_out ? "its time-out" : gate.decided_by || "—")),
        fact("When", el("span", { class: "gate-decided-at" }, fmt.time(gate.decided_at))),
        fact("Timed out", el("span", { class: "gate-timed-out" }, gate.timed_out ? "yes: nobody decided in time" : "no")),
        fact("Comment", gate.comment ? el("span", { class: "gate-comment" }, gate.comment) : el("span", { class: "gate-comment muted" }, "none")))
        : null,
      note ? el("p", { class: "error gate-error", role: "alert" }, note) : null,
      action);
  }

  function gateForm(run) {
    const gate = run.gate;
    let draft = page.gateDrafts.get(run.node_run_id);
    if (!draft) {
      draft = { comment: "", output: JSON.stringify(gate.shown || {}, null, 2) };
      page.gateDrafts.set(run.node_run_id, draft);
    }
    const fieldError = (name) => el("p", { class: "field-error", "data-for": name, hidden: true });
    const comment = el("textarea", { class: "gate-comment-input", rows: "3", "data-gate-field": "comment",
      placeholder: "why (kept with the decision)", oninput: (event) => { draft.comment = event.target.value; } });
    comment.value = draft.comment;
    const offersEdit = (gate.decisions || []).includes("edit");
    const output = offersEdit ? el("textarea", { class: "gate-output-input", rows: "8", spellcheck: "false",
      "data-gate-field": "output", oninput: (event) => { draft.output = event.target.value; } }) : null;
    if (output) output.value = draft.output;
    const form = el("form", { class: "gate-form", "data-gate-form": run.node_run_id, onsubmit: (event) => event.preventDefault() },
      el("h4", {}, "Your decision"),
      el("label", {}, "Comment", comment), fieldError("comment"),
      output ? el("label", {}, "Edited data (JSON): passed on instead of the data shown if you choose to pass on the edit", output) : null,
      output ? fieldError("output") : null,
      el("div", { class: "row gate-buttons" }, (gate.decisions || []).map((decision) => el("button", {
        type: "button", "data-decision": decision,
        class: decision === "approve" ? "primary" : decision === "reject" ? "danger" : "",
        onclick: (event) => decide(run, decision, form, event.currentTarget),
      }, DECISION_LABELS[decision] || decision))),
      fieldError("decision"),
      el("p", { class: "error gate-form-error", role: "alert", hidden: true }));
    return form;
  }

  function showGateProblem(form, name, text) {
    const place = form.querySelector(`.field-error[data-for="${name}"]`);
    const control = form.querySelector(`[data-gate-field="${name}"]`);
    if (place) {
      place.textContent = text;
      place.hidden = false;
      if (control) {
        control.classList.add("invalid");
        control.focus();
      }
      return;
    }
    const message = form.querySelector(".gate-form-error");
    message.textContent = text;
    message.hidden = false;
  }

  async function decide(run, decision, form, button) {
    const draft = page.gateDrafts.get(run.node_run_id);
    form.querySelectorAll(".field-error, .gate-form-error").forEach((place) => { place.hidden = true; place.textContent = ""; });
    form.querySelectorAll(".invalid").forEach((control) => control.classList.remove("invalid"));
    page.gateNotes.delete(run.node_run_id);
    const body = { decision, comment: draft.comment };
    if (decision === "edit") {
      try {
        body.output = JSON.parse(draft.output);
      } catch (error) {
        showGateProblem(form, "output", `The edited data is not JSON: ${error.message}`);
        return;
      }
    }
    const buttons = form.querySelectorAll("button[data-decision]");
    buttons.forEach((item) => { item.disabled = true; });
    const label = button.textContent;
    button.textContent = DECIDING_LABELS[decision] || "Sending…";
    try {
      await api.post(`${apiPath}/node-runs/${run.node_run_id}/decision`, body);
      page.gateDrafts.delete(run.node_run_id);
      schedule(0); // the run goes on: read it again now
    } catch (error) {
      buttons.forEach((item) => { item.disabled = false; });
      button.textContent = label;
      const field = (error.where || "").split(/[.[]/)[0];
      if (error.status === 422 && ["output", "comment", "decision"].includes(field)) {
        showGateProblem(form, field, error.message);
      } else if (error.status === 409) {
        // Decided meanwhile (the message says by whom), or the run ended: show it as it is now.
        page.gateNotes.set(run.node_run_id, `Your decision was not recorded: ${error.message}`);
        schedule(0);
        showGateProblem(form, "", `Your decision was not recorded: ${error.message}`);
      } else {
        showGateProblem(form, "", error.status === 403 ? `Not allowed: ${error.message}` : error.message);
      }
    }
  }

  // The gates waiting for a decision, above the graph: each links to its panel.
  function renderGatesWaiting(record) {
    const section = document.getElementById("gates-waiting");
    const open = (record.node_runs || []).filter((run) => run.status === "waiting" && run.gate);
    const key = JSON.stringify(open.map((run) => run.node_run_id));
    if (key === page.gatesKey) return;
    page.gatesKey = key;
    section.hidden = !open.length;
    if (!open.length) {
      section.replaceChildren();
      return;
    }
    section.replaceChildren(
      el("h2", {}, open.length === 1 ? "Waiting for a person's decision" : `Waiting for ${open.length} decisions by people`),
      el("ul", { class: "gates-list" }, open.map((run) => el("li", { "data-gate-waiting": run.node_run_id },
        el("a", { class: "mono", href: `?node=${encodeURIComponent(run.node_id)}&run=${run.node_run_id}#node-panel`,
          onclick: (event) => { event.preventDefault(); select(run.node_id, run.node_run_id, true); } }, run.node_id),
        ": ", run.gate.prompt || "a decision on its data",
        el("span", { class: "muted small" }, ` · decided by ${decidersText(run)}`,
          run.decide_by ? ` · time-out ${fmt.time(run.decide_by)}, then ${ON_TIMEOUT_TEXT[run.gate.on_timeout] || run.gate.on_timeout}` : ""),
        gateInfo(run.node_id).may_decide ? el("strong", { class: "gate-yours small" }, " · yours to decide") : null))));
    keepGraphAligned();
  }

  // -- the node panel ----------------------------------------------------------------------

  // A re-run's reused and edited node runs were not run in it: each copies a node run of
  // the run it was re-run from (a trial's: of its source run), edited ones with an output
  // a person gave instead. The note links to that node run.
  function copyOrigin(run) {
    if (!COPIES.has(run.kind)) return null;
    const record = page.record || {};
    const source = record.rerun_of || (record.rerun && record.rerun.source);
    const original = source && run.reused_from ? el("a", {
      class: "mono", href: `/executions/${encodeURIComponent(source)}/?node=${encodeURIComponent(run.node_id)}&run=${run.reused_from}#node-panel`,
    }, `${source} · ${run.node_id}`) : null;
    if (run.kind === "reused") {
      return el("p", { class: "copy-origin" }, "Not run in this execution: reused from ", original || "an earlier run", ".");
    }
    return el("p", { class: "copy-origin edited" }, "Not run in this execution: edited by a person",
      original ? ["; the original: ", original] : " (typed by hand: no run made it)", ".");
  }

  function attemptBody(run) {
    const thoughtTree = thoughtTrees.has(run.node_run_id) ? el("p", { class: "thought-tree-link" },
      el("a", { class: "button small-button", href: thoughtTrees.get(run.node_run_id) }, "Thought tree"),
      el("span", { class: "muted small" }, " this run's Tree-of-Thoughts search: its tree, scores and messages")) : null;
    return nodeRun.record(run, run.gate ? gateBlock(run) : null, copyOrigin(run), thoughtTree);
  }

  function attemptBlock(run, open) {
    const details = el("details", { class: `attempt ${run.status}${COPIES.has(run.kind) ? " copy" : ""}`, "data-run": run.node_run_id, id: `run-${run.node_run_id}` },
      el("summary", {},
        badge(run.status), " ",
        el("strong", {}, `${run.kind} #${run.attempt}`), " ",
        el("span", { class: "mono" }, run.agent_ref),
        el("span", { class: "muted small" }, run.gate ? gateSummaryText(run)
          : ` · ${run.duration_ms !== null && run.duration_ms !== undefined ? fmt.ms(run.duration_ms) : run.status}` +
          ` · ${fmt.n(run.tokens_in)} → ${fmt.n(run.tokens_out)} tokens` +
          (run.calls && run.calls.length ? ` · ${costLine(run.cost, run.cost_complete)}` : "")),
        run.error_code ? el("code", { class: "error-code" }, run.error_code) : ""));
    let built = false;
    const build = () => {
      if (!built && details.open) {
        built = true;
        details.append(attemptBody(run));
      }
    };
    details.addEventListener("toggle", () => {
      page.open.set(run.node_run_id, details.open);
      build();
    });
    if (open) {
      details.open = true;
      build();
    }
    return details;
  }

  function trail(list, escalation) {
    const chips = [];
    // A node that ran many times (a loop) shows its first runs and its last ones.
    const skipped = list.length > MAX_TRAIL ? list.length - MAX_TRAIL + 1 : 0;
    const shown = skipped ? [...list.slice(0, 2), null, ...list.slice(2 + skipped)] : list;
    shown.forEach((run, index) => {
      if (index) chips.push(el("span", { class: "trail-arrow" }, "→"));
      if (run === null) {
        chips.push(el("span", { class: "trail-chip" }, `… ${skipped} more runs …`));
        return;
      }
      chips.push(el("a", { class: `trail-chip ${run.status}`, href: `#run-${run.node_run_id}`,
        onclick: (event) => { event.preventDefault(); select(run.node_id, run.node_run_id, true); } },
      `${run.kind} #${run.attempt} `, el("span", { class: "mono" }, run.agent_ref), ` ${run.status}`));
    });
    if (escalation) {
      chips.push(el("span", { class: "trail-arrow" }, "→"));
      chips.push(el("span", { class: "trail-chip escalated" }, `escalated to ${escalation.escalate_to || "a person"}`));
    }
    return el("div", { class: "trail", "aria-label": "Attempts in order" }, chips);
  }

  // An author may re-run a run from one of its nodes once it has ended or waits for a
  // person; a node tried alone is not a run of the workflow (try the node again instead).
  function rerunnable(record) {
    return canSteer && rerunSection !== null && !record.trial && record.status !== "pending" && record.status !== "running";
  }

  function openRerun(nodeId) {
    window.switchyard.rerunForm.open({ section: rerunSection, record: page.record, nodeId, graph: data.graph,
      downstream: data.downstream });
  }

  function renderPanel(record, runs, force) {
    const panel = document.getElementById("node-panel");
    const nodeId = page.selected;
    if (!nodeId) return;
    const list = runs.get(nodeId) || [];
    const escalation = record.status === "escalated" && record.escalation && record.escalation.node_id === nodeId ? record.escalation : null;
    // (Whether it may be re-run changes when the run ends, maybe after this node's last change.)
    const key = JSON.stringify([nodeId, page.selectedRun, list, escalation, rerunnable(record)]);
    if (!force && key === page.panelKey) return;
    page.panelKey = key;
    const node = data.graph.nodes.find((item) => item.id === nodeId);
    const status = nodeStatus(nodeId, runs, record);
    const planHref = data.plan_url.replace("/NODE/", `/${encodeURIComponent(nodeId)}/`);
    const shown = list.length > MAX_ATTEMPTS_SHOWN ? list.slice(-MAX_ATTEMPTS_SHOWN) : list;
    if (page.selectedRun && !shown.some((run) => run.node_run_id === page.selectedRun)) {
      const chosen = list.find((run) => run.node_run_id === page.selectedRun);
      if (chosen) shown.unshift(chosen);
    }
    const openId = page.selectedRun || (list.length ? list[list.length - 1].node_run_id : null);
    const cost = costOf(list);
    panel.replaceChildren(...[
      el("div", { class: "row panel-head" },
        el("h2", {}, "Node ", el("span", { class: "mono" }, nodeId)), badge(status === "none" ? "not run" : status, status === "none" ? "pending" : ""),
        node && node.gate ? el("span", { class: "gate-tag", title: "The run stops here for a person to approve, reject or edit" }, "gate: a person decides") : null,
        el("span", { class: "muted" }, node ? `agent ${node.agent}` : ""),
        cost.called ? el("span", { class: "node-cost small", title: "What this node's runs cost together" },
          `cost ${costLine(cost.value, cost.complete)}${list.length > 1 ? ` over ${list.length} runs` : ""}`) : null,
        el("span", { class: "spacer" }),
        node ? el("a", { class: "button small-button", href: planHref, title: "The context a run of this node would get now, without calling a model" }, "Plan this node") : null,
        node && rerunnable(record) ? el("button", { type: "button", class: "small-button", "data-rerun-from": nodeId,
          title: "A new run that reuses this run's outputs before this node (edited if you like) and runs it and what follows",
          onclick: () => openRerun(nodeId) }, "Re-run from here") : null,
        el("button", { type: "button", class: "small-button", onclick: () => select(null) }, "Close")),
      list.length ? trail(list, escalation) : el("p", { class: "muted" }, ACTIVE.has(record.status) ? "This node has not run yet; it will show here when it does." : "This node did not run."),
      list.length > shown.length ? el("p", { class: "muted small" }, `Showing the last ${MAX_ATTEMPTS_SHOWN} of ${list.length} runs of this node.`) : null,
      ...shown.slice().reverse().map((run) => attemptBlock(run, page.open.has(run.node_run_id) ? page.open.get(run.node_run_id) : run.node_run_id === openId)),
    ].filter(Boolean));
  }

  // -- the node runs table (one page, kept in step with the record) --------------------------

  function preview(output) {
    if (output === null || output === undefined) return "";
    const text = (typeof output === "string" ? output : JSON.stringify(output, null, 1)).split(/\s+/).join(" ");
    return text.length <= 160 ? text : `${text.slice(0, 159)}…`;
  }

  function tableRow(run, number) {
    const error = run.error && run.error.length > 160 ? `${run.error.slice(0, 159)}…` : run.error || "";
    return el("tr", {},
      el("td", {}, String(run.sequence ?? number)),
      el("td", {}, el("a", { class: "mono", href: `?node=${encodeURIComponent(run.node_id)}&run=${run.node_run_id}#node-panel`,
        "data-node": run.node_id, "data-run": run.node_run_id }, run.node_id)),
      el("td", { class: "mono" }, run.agent_ref),
      el("td", {}, `${run.attempt} `, el("span", { class: `kind ${run.kind}` }, run.kind)),
      el("td", {}, badge(run.status)),
      el("td", {}, `${run.tokens_in ?? "—"} / ${run.tokens_out ?? "—"}`),
      el("td", { class: "cost-cell" }, runCost(run)),
      el("td", {}, run.duration_ms !== null && run.duration_ms !== undefined ? `${run.duration_ms} ms` : el("span", { class: "muted" }, "—")),
      el("td", { class: "small error-cell" }, run.error_code ? el("code", {}, run.error_code) : "", run.error_code ? " " : "", error),
      el("td", { class: "small output-preview" }, preview(run.output)));
  }

  function pager(total, perPage) {
    const pages = Math.max(1, Math.ceil(total / perPage));
    const current = Math.min(pages, Number(new URLSearchParams(window.location.search).get("page")) || 1);
    if (pages === 1) return el("p", { class: "pager muted" }, `${total} in all`);
    const link = (number, text) => el("a", { href: `?page=${number}` }, text);
    return el("nav", { class: "pager", "aria-label": "Pages" },
      current > 1 ? link(current - 1, "← Previous") : "",
      el("span", { class: "muted" }, `page ${current} of ${pages} · ${total} in all`),
      current < pages ? link(current + 1, "Next →") : "");
  }

  let tableKey = "";
  function renderTable(record) {
    const table = document.querySelector("table.node-runs");
    const offset = Math.max(0, Number(table.dataset.offset) || 0);
    const perPage = Number(table.dataset.perPage) || 50;
    const all = record.node_runs || [];
    const rows = all.slice(offset, offset + perPage);
    const key = JSON.stringify([all.length, rows.map((run) => [run.node_run_id, run.status, run.completed_at])]);
    if (key === tableKey) return;
    const first = !tableKey;
    tableKey = key;
    if (first && Number(table.dataset.total) === all.length && table.tBodies[0].rows.length === rows.length &&
        all.every((run) => !ACTIVE.has(run.status))) return; // the server's rows are these
    table.tBodies[0].replaceChildren(...(rows.length ? rows.map((run, index) => tableRow(run, offset + index + 1))
      : [el("tr", {}, el("td", { colspan: "10", class: "muted" }, "No node has run yet."))]));
    document.getElementById("runs-pager").replaceChildren(pager(all.length, perPage));
  }

  // -- selection ----------------------------------------------------------------------------

  function select(nodeId, runId, scroll) {
    page.selected = nodeId;
    page.selectedRun = runId || null;
    if (runId) page.open.set(runId, true);
    const url = new URL(window.location.href);
    if (nodeId) {
      url.searchParams.set("node", nodeId);
      if (runId) url.searchParams.set("run", String(runId));
      else url.searchParams.delete("run");
    } else {
      url.searchParams.delete("node");
      url.searchParams.delete("run");
    }
    window.history.replaceState(null, "", url.toString());
    const panel = document.getElementById("node-panel");
    if (!nodeId) {
      page.panelKey = "";
      panel.replaceChildren(el("h2", {}, "Node"), el("p", { class: "muted" }, "Click a node in the graph or a bar in the timeline to see it here."));
    }
    if (page.record) {
      const runs = runsByNode(page.record);
      paintGraph(page.record, runs);
      renderTimeline(page.record, runs);
      if (nodeId) renderPanel(page.record, runs, true);
    } else if (nodeId) {
      panel.replaceChildren(el("h2", {}, "Node ", el("span", { class: "mono" }, nodeId)), el("p", { class: "muted" }, "Loading…"));
    }
    if (scroll && nodeId) {
      const target = runId ? document.getElementById(`run-${runId}`) : panel;
      (target || panel).scrollIntoView({ behavior: "smooth", block: "start" });
    }
  }

  // -- live updates -------------------------------------------------------------------------

  function update(record) {
    page.record = record;
    for (const run of record.node_runs || []) { // name the runs of the thought trees' table
      const cell = thoughtTrees.has(run.node_run_id) && document.querySelector(`tr[data-thought-tree-run="${run.node_run_id}"] .thought-tree-run`);
      if (cell) cell.textContent = `${run.node_id} · ${run.kind} #${run.attempt}`;
    }
    const runs = runsByNode(record);
    renderHeader(record, runs);
    renderEscalation(record);
    renderBudgetStop(record);
    renderGatesWaiting(record);
    paintGraph(record, runs);
    renderTimeline(record, runs);
    renderPanel(record, runs, false);
    renderTable(record);
    keepGraphAligned();
  }

  // -- the evaluation ----------------------------------------------------------------------
  // A worker scores a run a moment after it ends in success or failure. Until the page has
  // the evaluation it asks GET /api/evaluations for it, then shows the overall score, the
  // result and the quality gate's outcome (the same line the server writes).

  const EVALUATED = new Set(["success", "failed"]);
  const EVALUATION_POLL_MS = 1000;
  const EVALUATION_POLL_LIMIT = 120;
  const evaluationBox = document.getElementById("run-evaluation");
  const evaluationState = {
    shown: evaluationBox.dataset.shown === "true",
    // Expected: the run ended moments ago (the server says so), or this page saw it end.
    expected: evaluationBox.dataset.awaiting === "true" || ACTIVE.has(data.status),
    waiting: false,
  };
  const SCORE_LABELS = { overall_score: "overall score" };

  function scorebar(label, value) {
    const level = value < 0.5 ? "low" : value < 0.75 ? "mid" : "high";
    return el("div", { class: "scorebar overall", title: `${label}: ${value.toFixed(2)}` },
      el("span", { class: "scorebar-label" }, label),
      el("span", { class: "scorebar-track" }, el("span", { class: level, style: { width: `${Math.round(value * 100)}%` } })),
      el("span", { class: "scorebar-value" }, value.toFixed(2)));
  }

  const minimumText = (minimum) => (Math.round(minimum * 100) / 100 === minimum ? minimum.toFixed(2) : String(minimum));
  function belowText(value, minimum) { // as many digits as it takes not to look equal to the minimum
    for (const digits of [2, 3, 4]) if (Number(value.toFixed(digits)) < minimum) return value.toFixed(digits);
    return String(value);
  }

  /** "Quality gate failed: accuracy 0.50 < 0.80" from an evaluation's details.quality_gate. */
  function gateSummary(gate) {
    const order = ["accuracy", "completeness", "efficiency", "overall_score"]; // as the server lists them
    const rank = (score) => (order.includes(score) ? order.indexOf(score) : order.length);
    const minimums = Object.entries((gate && gate.gate) || {}).filter(([, value]) => typeof value === "number")
      .sort(([a], [b]) => rank(a) - rank(b) || a.localeCompare(b));
    if (!minimums.length) return null;
    const failed = (gate.failed || []).filter((item) => item && typeof item.value === "number" && typeof item.minimum === "number");
    if (failed.length || gate.run_failed === true) { // a run that failed never meets its gate
      const parts = failed.map((item) =>
        `${SCORE_LABELS[item.score] || item.score} ${belowText(item.value, item.minimum)} < ${minimumText(item.minimum)}`);
      if (gate.run_failed === true) parts.unshift("the run failed");
      return { passed: false, text: "Quality gate failed: " + parts.join(", ") };
    }
    return { passed: true, text: "Quality gate passed: " + minimums.map(([score, minimum]) =>
      `${SCORE_LABELS[score] || score} ≥ ${minimumText(minimum)}`).join(", ") };
  }

  function renderEvaluation(evaluation) {
    const href = `${evaluationBox.dataset.evaluationsUrl}${encodeURIComponent(evaluation.evaluation_id)}/`;
    evaluationBox.replaceChildren(
      el("strong", { class: "run-evaluation-title" }, "Evaluation"),
      scorebar("overall", evaluation.overall_score),
      el("span", { class: `badge ${evaluation.pass ? "pass" : "fail"}`, "data-field": "evaluation-result" }, evaluation.pass ? "pass" : "fail"),
      el("span", { class: "small" }, "action: ", el("strong", { "data-field": "evaluation-action" }, evaluation.action)),
      el("a", { id: "evaluation-link", class: "small", href }, "How it was scored →"));
    evaluationBox.hidden = false;
    const gate = gateSummary((evaluation.details || {}).quality_gate);
    const banner = document.getElementById("quality-gate");
    if (gate) {
      banner.className = `gate ${gate.passed ? "passed" : "failed"}`;
      banner.textContent = gate.text;
      banner.hidden = false;
    }
    evaluationState.shown = true;
    keepGraphAligned();
  }

  async function awaitEvaluation() {
    if (evaluationState.shown || evaluationState.waiting) return;
    evaluationState.waiting = true;
    if (!document.getElementById("evaluation-waiting")) {
      evaluationBox.replaceChildren(el("strong", { class: "run-evaluation-title" }, "Evaluation"), " ",
        el("span", { class: "muted small", id: "evaluation-waiting" }, "Scoring the run… it shows here as soon as a worker has scored it."));
    }
    evaluationBox.hidden = false;
    keepGraphAligned();
    const query = new URLSearchParams({ target_type: "execution", target_id: data.execution_id, method: "computed", limit: "1" });
    for (let attempt = 0; attempt < EVALUATION_POLL_LIMIT; attempt += 1) {
      try {
        const found = await api.get(`/evaluations?${query}`);
        if (found.items && found.items.length) {
          renderEvaluation(found.items[0]);
          return;
        }
      } catch (error) {
        // A passing network problem: ask again.
      }
      await new Promise((resolve) => setTimeout(resolve, EVALUATION_POLL_MS));
    }
    document.getElementById("evaluation-waiting").textContent =
      "Not scored yet: a worker scores each run when it ends. Reload the page later to see it.";
  }

  // Cytoscape keeps where its canvas is on the page; when the header above it grows or
  // shrinks (the progress bar goes, an escalation comes) it must be told, or clicks miss.
  let graphTop = null;
  function keepGraphAligned() {
    if (!page.cy) return;
    const top = document.getElementById("graph").getBoundingClientRect().top + window.scrollY;
    if (graphTop !== null && top !== graphTop) page.cy.resize();
    graphTop = top;
  }

  let timer = null;
  function schedule(ms) {
    clearTimeout(timer);
    timer = setTimeout(poll, ms);
  }

  async function poll() {
    const began = performance.now();
    const connection = document.getElementById("run-connection");
    try {
      const record = await api.get(apiPath);
      page.failures = 0;
      connection.hidden = true;
      update(record);
      if (ACTIVE.has(record.status)) {
        evaluationState.expected = true;
        // A large record takes longer to read: never ask more often than twice its cost.
        schedule(Math.max(POLL_MS, 2 * (performance.now() - began)));
      } else if (EVALUATED.has(record.status) && evaluationState.expected) {
        awaitEvaluation();
      }
    } catch (error) {
      page.failures += 1;
      connection.textContent = error.status === 404 ? "This run no longer exists." : `Could not refresh (${error.message}); trying again…`;
      connection.hidden = false;
      if (error.status !== 404 && error.status !== 403) schedule(Math.min(10000, POLL_MS * 2 ** page.failures));
    }
  }

  // -- start --------------------------------------------------------------------------------

  document.getElementById("escalation").addEventListener("click", (event) => {
    const button = event.target.closest("button[data-steer]");
    if (button) steer(button);
  });
  document.querySelector("table.node-runs").addEventListener("click", (event) => {
    const link = event.target.closest("a[data-node]");
    if (!link) return;
    event.preventDefault();
    select(link.dataset.node, Number(link.dataset.run), true);
  });

  initGraph();
  const params = new URLSearchParams(window.location.search);
  if (params.get("node")) select(params.get("node"), Number(params.get("run")) || null, false);
  poll();
})();
