// A run's inspection page. The server renders the header and a page of node runs; this
// script keeps the page live while the run goes on (one round of requests a second, no
// reload), reading what it shows in bounded pieces, so that a run of 100,000 node runs
// opens and follows as fast as one of three:
// - GET /api/executions/{id}: the run with its node runs summarised per node (counts by
//   status, cost, tokens, the nodes its transitions chose, its latest run). The header,
//   the graph's colours and labels, the edges taken, the progress, the escalation, a stop
//   by the budget and the gates waiting come from it.
// - GET …/timeline: a window of time, each node's runs counted in slices, or the runs
//   themselves when few enough fall in it (the timeline below zooms and moves the window).
// - GET …/node-runs?node=…: the open node's runs, newest first, a page at a time; each
//   attempt's whole record (GET …/node-runs/{node_run_id}) when it is opened.
// - GET …/node-runs?limit=&offset=: the table's page, when the run's node runs change.
// Once the run has ended, its evaluation and quality gate show as soon as a worker has
// scored it. The node panel draws a node run with node_run.js; authors re-run the run from
// a node there (rerun_form.js), and a re-run's copies say which node run they were copied
// from. A gate's run (a person's step) shows what it asks, the data shown, who may decide
// and its time-out, and to those who may decide it (the server says who: `gates`) a form
// that posts the decision to POST /api/executions/{id}/node-runs/{node_run_id}/decision.
// A sub-workflow node (executions/node_kinds/subworkflow.py) is drawn as a folder with the
// workflow it runs under its id; its run's panel links to the child run that did its work
// (its workflow, status and cost, rolled up into the node's), and a child run's page says,
// above, which run and node it is part of (the server draws that note).
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
  const GOING = new Set(["pending", "running", "waiting"]); // a node run that may still change
  const POLL_MS = 1000;
  const MAX_ATTEMPTS_SHOWN = 20; // a node's runs read at a time into its panel
  const MAX_PANEL_RUNS = 500; // the most the panel lists (the API's largest page); the table has every one
  const MAX_TRAIL = 12;
  const MAX_KEPT_RECORDS = 200; // whole node run records kept for the panel
  const apiPath = `/executions/${encodeURIComponent(data.execution_id)}`;
  // Node runs that ran a Tree-of-Thoughts search (the template lists them): their tree's page.
  const thoughtTrees = new Map([...document.querySelectorAll("tr[data-thought-tree-run]")].map((row) =>
    [Number(row.dataset.thoughtTreeRun), row.querySelector("a[data-thought-tree]").getAttribute("href")]));

  const page = {
    record: null, // the last GET /api/executions/{id}
    nodes: new Map(), // node id → its summary (record.node_runs_summary.nodes)
    selected: null, // node id
    selectedRun: null, // node run id asked for (timeline bar, table link)
    scrollToRun: null, // a node run to bring into view once the panel has it
    // A gate's form asked for by the address (#decide-<node run id>, where the overview's
    // links land): brought into view and focused once the panel has drawn it.
    focusForm: (/^#decide-(\d+)$/.exec(window.location.hash) || [])[1] || null,
    escalationKey: undefined,
    open: new Map(), // node run id → open? (kept across live re-renders)
    gateDrafts: new Map(), // a gate's node run id → {comment, values, confirming} as typed (kept across re-renders)
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

  // An ISO time of the API as milliseconds. The server writes microseconds, which not every
  // date parser reads: milliseconds are enough to draw.
  function when(iso) {
    return iso ? Date.parse(String(iso).replace(/(\.\d{3})\d+/, "$1")) : NaN;
  }

  // The status a node is drawn in: its latest run's, or "escalated" for the node a run
  // waits on, or "none" when it has not run.
  function nodeStatus(nodeId, record) {
    if (record && record.status === "escalated" && record.escalation && record.escalation.node_id === nodeId) return "escalated";
    const node = page.nodes.get(nodeId);
    return node ? node.latest.status : "none";
  }

  function nodeStatusFromServer(nodeId) {
    const state = data.states[nodeId];
    return state ? state.status : "none";
  }

  // The graph's nodes by id, each with the shape its kind is drawn as (page_selectors.py):
  // "agent", "gate" or "workflow" (a sub-workflow node, whose child run does its work).
  const graphNodes = new Map(data.graph.nodes.map((node) => [node.id, node]));
  const runsWorkflow = (nodeId) => (graphNodes.get(nodeId) || {}).shape === "workflow";

  // What a node's runs cost together (the summary adds it exactly): {value (USD decimal),
  // complete, called (whether any of them called a model, or, for a sub-workflow node, its
  // child runs' cost was rolled up into them: once one has ended), tokens in and out, runs}.
  function costOf(nodeId) {
    const node = page.nodes.get(nodeId);
    if (!node) return { value: money.decimal(0n), complete: true, called: false, tokensIn: 0, tokensOut: 0, runs: 0 };
    const rolledUp = runsWorkflow(nodeId) && !GOING.has(node.latest.status);
    return { value: node.cost, complete: node.cost_complete, called: node.called || rolledUp, tokensIn: node.tokens_in,
      tokensOut: node.tokens_out, runs: node.runs };
  }

  // A cost in one short line: "$0.0012", "≥ $0.0012" when not every call was priced.
  function costLine(value, complete) {
    return `${complete === false ? "≥ " : ""}${money.text(value)}`;
  }

  // A node run's cost, or a dash when it called no model (a gate, a copy, a run not yet done)
  // and no child run's cost was rolled up into it (a sub-workflow node's).
  function runCost(run) {
    return run.called || hasCost(run) ? money.shown(run.cost, run.cost_complete)
      : el("span", { class: "muted", title: "No model call" }, "—");
  }

  function hasCost(run) {
    return /[1-9]/.test(String(run.cost || ""));
  }

  // Each node's latest run, in the order they were made.
  function latestRuns() {
    return [...page.nodes.values()].map((node) => node.latest).sort((a, b) => a.sequence - b.sequence);
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
  // A sub-workflow node is a folder: a box with a tab on its top left (cytoscape's polygon
  // points run from -1 to 1 across the node's box).
  const FOLDER_POINTS = "-1 -1 -0.25 -1 -0.15 -0.72 1 -0.72 1 1 -1 1";

  /** The line under a sub-workflow node's id: the workflow it runs, and its version if pinned. */
  function workflowLine(node) {
    const child = node.subworkflow || {};
    return `runs ${child.workflow_ref}${child.version ? ` v${child.version}` : ""}`;
  }

  // A node's label and size: its id and agent, "a person decides" for a gate (drawn as a
  // hexagon), the workflow a sub-workflow node runs under its id (drawn as a folder), and
  // once it has called a model (or rolled up its child run's cost), what its runs cost.
  function nodeBox(node, cost) {
    const folder = node.shape === "workflow";
    const lines = [node.id, ...(folder ? [workflowLine(node)] : []), String(node.agent), ...(node.gate ? [GATE_LINE] : []),
      ...(cost ? [cost] : [])];
    const longest = Math.max(...lines.map((line) => line.length));
    return { label: lines.join("\n"), width: Math.max(90, longest * 7.4 + 26) + (node.gate ? 34 : 0),
      height: (node.gate ? 58 : folder ? 66 : 42) + (cost ? 14 : 0) };
  }

  function graphElements() {
    const nodes = data.graph.nodes.map((node) => ({
      group: "nodes",
      data: { id: node.id, status: nodeStatusFromServer(node.id), gate: node.gate ? "yes" : "no", drawnAs: node.shape,
        ...nodeBox(node, "") },
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
      { selector: 'node[drawnAs = "workflow"]', style: { shape: "polygon", "shape-polygon-points": FOLDER_POINTS,
        "text-margin-y": 4 } },
      { selector: 'node[status = "waiting"]', style: { "border-width": 4 } },
      // A re-run's copy (its latest run reused or edited from the source run): not run here.
      { selector: 'node[copied = "reused"], node[copied = "edited"]', style: {
        "background-color": "#eceff3", "border-color": "#7d8590", color: "#5d6878", "border-style": "dotted" } },
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

  function paintGraph(record) {
    if (!page.cy) return;
    page.cy.batch(() => {
      page.cy.nodes().forEach((node) => {
        const status = nodeStatus(node.id(), record);
        node.data("status", status);
        const cost = costOf(node.id());
        const shown = cost.called ? costLine(cost.value, cost.complete) : "";
        const box = nodeBox(data.graph.nodes.find((item) => item.id === node.id()) || { id: node.id(), agent: "" }, shown);
        if (node.data("label") !== box.label) node.data(box);
        node.data("cost", cost.called ? cost.value : "");
        const latest = (page.nodes.get(node.id()) || {}).latest;
        node.data("copied", latest && COPIES.has(latest.kind) ? latest.kind : "no");
        node.data("title", `${node.id()}: ${status}${node.data("copied") !== "no" ? ` (${node.data("copied")}: copied, not run here)` : ""}${cost.runs > 1 ? ` (${fmt.n(cost.runs)} runs)` : ""}` +
          (cost.runs ? ` · ${fmt.n(cost.tokensIn)} → ${fmt.n(cost.tokensOut)} tokens` : "") +
          (cost.called ? ` · cost ${cost.complete ? "" : "at least "}${money.text(cost.value)}` +
            `${cost.complete ? "" : " (not every call priced)"}` : ""));
        node.toggleClass("selected", node.id() === page.selected);
      });
      // An edge was taken when its source succeeded and its target ran; a transition, when
      // one of its source's runs chose its target (the summary's `next`).
      page.cy.edges().forEach((edge) => {
        const source = page.nodes.get(edge.data("source"));
        const target = page.nodes.get(edge.data("target"));
        const taken = Boolean(source && target && source.counts.success) &&
          (edge.data("kind") !== "transition" || source.next.includes(edge.data("target")));
        edge.toggleClass("taken", taken);
      });
    });
  }

  // -- the header --------------------------------------------------------------------------

  function renderHeader(record) {
    const status = record.status;
    const summary = record.node_runs_summary;
    const badgeEl = document.getElementById("run-status");
    badgeEl.className = `badge big ${status}`;
    badgeEl.textContent = status;
    badgeEl.dataset.status = status;
    const active = ACTIVE.has(status);
    document.getElementById("run-live").hidden = !active;
    document.getElementById("run-started").textContent = fmt.time(record.started_at) || "not yet";
    // A large re-run waits for a worker to copy the node runs it reuses (copy_text on the server).
    const copying = document.getElementById("run-copying");
    copying.hidden = !record.copying;
    copying.textContent = record.copying ? `copying reused node runs: ${fmt.n(record.copying.copied)} of ` +
      `${fmt.n(record.copying.of)}; the run starts once they all are` : "";
    const ended = document.getElementById("run-ended");
    ended.replaceChildren(record.completed_at ? fmt.time(record.completed_at)
      : el("span", { class: "muted" }, active ? (status === "escalated" || status === "waiting" ? "waiting for a person" : "still going") : "—"));
    const started = record.started_at ? Date.parse(record.started_at) : null;
    const end = record.completed_at ? Date.parse(record.completed_at) : Date.now();
    document.getElementById("run-duration").textContent = started ? `${fmt.ms(end - started)}${record.completed_at ? "" : " so far"}` : "—";
    const reason = document.getElementById("run-ended-reason");
    reason.hidden = !record.ended_reason;
    reason.querySelector("span").textContent = record.ended_reason || "";
    const failed = summary.counts.failed || 0;
    document.getElementById("run-counts").replaceChildren(String(summary.total),
      failed ? el("span", { class: "muted small" }, ` (${failed} failed)`) : "");
    renderCost(record);
    document.getElementById("run-input").textContent = JSON.stringify(record.input || {}, null, 2);
    document.getElementById("run-state").textContent = JSON.stringify(record.state || {}, null, 2);

    // Progress: nodes whose latest run is done, of the workflow's nodes.
    const progress = document.getElementById("run-progress");
    progress.hidden = !active;
    const total = data.graph.nodes.length;
    const done = data.graph.nodes.filter((node) => DONE.has(nodeStatus(node.id, record))).length;
    const running = data.graph.nodes.filter((node) => nodeStatus(node.id, record) === "running").map((node) => node.id);
    progress.querySelector(".progress > span").style.width = `${total ? Math.round((100 * done) / total) : 0}%`;
    progress.querySelector(".progress").setAttribute("aria-valuenow", String(done));
    progress.querySelector(".progress-text").textContent = `${done} of ${total} nodes done`;
    const waiting = data.graph.nodes.filter((node) => nodeStatus(node.id, record) === "waiting").map((node) => node.id);
    progress.querySelector(".progress-running").textContent = [running.length ? `· running: ${running.join(", ")}` : "",
      waiting.length ? `· waiting for a person's decision: ${waiting.join(", ")}` : ""].filter(Boolean).join(" ");
  }

  // -- what the run cost ---------------------------------------------------------------------

  // The run's cost (its node runs' and the judge's calls), and the judge's calls.
  function renderCost(record) {
    const judge = record.calls || [];
    const judgeCost = judge.reduce((sum, call) => sum + (money.units(call.cost) ?? 0n), 0n);
    const nodes = [...page.nodes.values()].reduce((sum, node) => sum + (money.units(node.cost) ?? 0n), 0n);
    document.getElementById("run-cost").replaceChildren(money.shown(record.cost, record.cost_complete),
      judge.length ? el("span", { class: "muted small run-cost-split" },
        ` (nodes ${money.text(money.decimal(nodes))}, the judge's calls ${money.text(money.decimal(judgeCost))})`) : "");
    const key = JSON.stringify(judge);
    if (key === page.judgeKey) return;
    page.judgeKey = key;
    const box = document.getElementById("run-judge-calls");
    box.hidden = !judge.length;
    box.querySelector(".calls-box").replaceChildren(judge.length ? money.callsTable(judge, money.decimal(judgeCost),
      judge.every((call) => call.usage === "builtin" || (call.cost !== null && call.cost !== undefined))) : "");
  }

  // A run stopped by its budget: a call that could have crossed max_cost (the run's) or
  // max_node_cost (a node run's) was refused before it was made, or a call made cost more
  // than its bound and the spend crossed the limit (`crossed`: the server counted more than
  // was counted here; agents/backends/metering.py); its node run failed with BUDGET_EXCEEDED
  // and the figures in its error_details. Such a run is the last of its node (nothing was
  // retried), so the nodes' latest runs hold it.
  function renderBudgetStop(record) {
    const box = document.getElementById("budget-stop");
    const refused = latestRuns().filter((run) => run.error_code === "BUDGET_EXCEEDED");
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
    if (limit && details.crossed) {
      const over = limitUnits !== null && spentUnits !== null && spentUnits > limitUnits
        ? money.decimal(spentUnits - limitUnits) : null;
      why = el("p", {}, "A call cost ", el("strong", {}, money.text(details.cost)), " against ",
        el("strong", {}, money.text(details.estimate)), " claimed for it, and ", whose, " had then spent ",
        el("strong", {}, money.text(spent)), ", past its ", el("code", {}, limit), " ", el("strong", {}, money.text(details[limit])),
        ": no call was made after it.");
      facts = [
        fact("Limit", figure("limit", el("code", {}, limit), " ", money.text(details[limit]))),
        fact(limit === "max_cost" ? "Spent by the run" : "Spent by the node run", figure("spent", money.text(spent))),
        fact("Over the limit by", figure("over", over === null ? "—" : money.text(over))),
        fact("The call's cost", figure("cost", money.text(details.cost)),
          el("span", { class: "muted small" }, ` (${fmt.n(details.tokens_in)} tokens in, ${details.usage || "?"}; `
            + `${details.tokens_counted === null || details.tokens_counted === undefined ? "?" : fmt.n(details.tokens_counted)} `
            + "counted here before the call)")),
        fact("Claimed for it", figure("estimate", money.text(details.estimate))),
        fact("Backend / model", model || "—"),
      ];
    } else if (limit) {
      why = el("p", {}, "The next call could have cost up to ", el("strong", {}, money.text(details.estimate)), ", and ", whose,
        " had spent ", el("strong", {}, money.text(spent)), " of its ", el("code", {}, limit), " ", el("strong", {}, money.text(details[limit])),
        ": the call was not made.");
      facts = [
        fact("Limit", figure("limit", el("code", {}, limit), " ", money.text(details[limit]))),
        fact(limit === "max_cost" ? "Spent by the run" : "Spent by the node run", figure("spent", money.text(spent))),
        fact("Left", figure("left", left === null ? "—" : money.text(left))),
        fact("The refused call's bound", figure("estimate", money.text(details.estimate)),
          el("span", { class: "muted small" }, ` (${fmt.n(details.tokens_in)} tokens in and up to ${fmt.n(details.max_tokens)} out, priced`
            + (details.tokens_in_bound ? `; the input taken as ${fmt.n(details.tokens_in_bound)} tokens, as a server may count more)` : ")"))),
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
    const redrawn = page.escalationKey === undefined;  // the first poll redraws what the server drew
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
      children.push(el("p", { class: "muted small steering-refusal" }, data.steering_refusal || "Only authors can resume, retry or abort a run."));
    }
    const typedValue = typed ? typed.value : null;
    // So does what a click on the server's drawing said (this is not JSON, the server refused):
    // the first poll, redrawing the same escalation just after, must not take it away.
    const said = redrawn ? [...section.querySelectorAll(".field-error:not([hidden]), .steer-error:not([hidden])")] : [];
    section.replaceChildren(...children);
    const textarea = section.querySelector("#resume-output");
    if (typedValue !== null && textarea) {
      textarea.value = typedValue;
      if (said.some((message) => message.matches(".field-error"))) textarea.classList.add("invalid");
      said.forEach((message) => (message.matches(".field-error")
        ? section.querySelector(".field-error").replaceWith(message) : section.querySelector(".steer").append(message)));
    }
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
      schedule(0); // the run goes on: read the rest of it now
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
  // One lane per node (the graph's order, then any other node that ran), drawn a window of
  // time at a time from GET …/timeline: the whole run by default (following it while it
  // goes on), or a window zoomed into (the buttons, a click on a slice, ctrl + the wheel)
  // and moved (the buttons, dragging the lanes, a sideways scroll). When no more than 400
  // node runs fall in the window the server gives them, and each is a bar (a click opens
  // its node's panel on it); else each lane shows its runs counted in slices of time, each
  // slice marked with the worst status among its runs and darker the more runs it holds.
  // Either way what is drawn is bounded: lanes × slices, or 400 bars.

  const SLICE_PX = 8; // the narrowest a slice is drawn: the track's width decides how many
  const MIN_WINDOW_MS = 10; // zooming in stops here
  const ZOOM_STEP = 4; // a button's zoom
  const DRAG_PX = 4; // a press that moves less than this is a click
  const WORST_FIRST = ["failed", "cancelled", "waiting", "running", "pending", "skipped", "success"];
  const timeline = {
    since: null, until: null, // the window asked for (ms); null: the whole run
    answer: null, // the last answer drawn
    asked: 0, // the latest request's number: an answer to an older one is dropped
    wheelTimer: null,
    drag: null, // a press on the lanes: {x, pointerId, moved}
    dragged: false, // the press that just ended moved the window: its click is not a click
  };

  // Before the lanes are drawn, their track is the timeline's width but for the label and
  // cost columns (execution.css: 190 px and 104 px, and a margin).
  const LANE_COLUMNS_PX = 300;

  function sliceCount() {
    const track = document.querySelector("#timeline .tl-track");
    const width = track ? track.clientWidth : document.getElementById("timeline").clientWidth - LANE_COLUMNS_PX;
    return Math.max(10, Math.min(400, Math.floor(width / SLICE_PX)));
  }

  /** The timeline of the window asked for, or null when another was asked for meanwhile. */
  async function fetchTimeline() {
    const asked = ++timeline.asked;
    const query = new URLSearchParams({ buckets: String(sliceCount()) });
    if (timeline.since !== null) {
      query.set("since", new Date(timeline.since).toISOString());
      query.set("until", new Date(timeline.until).toISOString());
    }
    const answer = await api.get(`${apiPath}/timeline?${query}`);
    return asked === timeline.asked ? answer : null;
  }

  async function loadTimeline() {
    const box = document.getElementById("timeline");
    box.classList.add("loading");
    try {
      const answer = await fetchTimeline();
      if (answer) {
        timeline.answer = answer;
        renderTimeline();
      }
    } catch (error) {
      document.getElementById("timeline-span").textContent = `Could not read the timeline (${error.message}).`;
    } finally {
      box.classList.remove("loading");
    }
  }

  // The window shown, or asked for and not yet shown: [since, until] in ms.
  function currentWindow() {
    if (timeline.since !== null) return [timeline.since, timeline.until];
    return [when(timeline.answer.since), when(timeline.answer.until)];
  }

  // The run's span as far as the page knows: from its first node run's start to its last
  // one's end (now, while one is going).
  function runSpan() {
    const answer = timeline.answer;
    const start = when(answer.start);
    let end = when(answer.end);
    if (page.record && ACTIVE.has(page.record.status) && page.record.status !== "escalated") end = Math.max(end, Date.now());
    return [start, Math.max(end, start + 1)];
  }

  /** Show [since, until] of the run (kept within it; all of it: the whole run, live).
   *  `soon`: wait for the wheel to stop before asking the server. */
  function showWindow(since, until, soon) {
    if (!timeline.answer || !timeline.answer.start) return;
    const [start, end] = runSpan();
    const span = Math.max(MIN_WINDOW_MS, until - since);
    if (span >= end - start) {
      timeline.since = null;
      timeline.until = null;
    } else {
      timeline.since = Math.min(Math.max(since, start), end - span);
      timeline.until = timeline.since + span;
    }
    clearTimeout(timeline.wheelTimer);
    if (soon) timeline.wheelTimer = setTimeout(loadTimeline, 150);
    else loadTimeline();
  }

  /** Zoom by `factor` (below 1: in) around the moment `at` (the window's middle by default). */
  function zoom(factor, at) {
    const [since, until] = currentWindow();
    const centre = at ?? (since + until) / 2;
    showWindow(centre - (centre - since) * factor, centre + (until - centre) * factor, at !== undefined);
  }

  /** Move the window by `fraction` of its width (below 0: earlier). */
  function pan(fraction, soon) {
    const [since, until] = currentWindow();
    const shift = (until - since) * fraction;
    showWindow(since + shift, until + shift, soon);
  }

  function laneIds(lanes) {
    const ids = data.graph.nodes.map((node) => node.id);
    for (const nodeId of [...page.nodes.keys(), ...lanes.keys()]) if (!ids.includes(nodeId)) ids.push(nodeId);
    return ids;
  }

  function percent(fraction) {
    return `${(100 * fraction).toFixed(3)}%`;
  }

  function countsText(counts) {
    return WORST_FIRST.filter((status) => counts[status]).map((status) => `${fmt.n(counts[status])} ${status}`).join(", ");
  }

  function renderTimeline() {
    const box = document.getElementById("timeline");
    const spanText = document.getElementById("timeline-span");
    const answer = timeline.answer;
    const record = page.record;
    if (!answer || !record) return;
    renderTimelineControls();
    if (!answer.start) {
      const queued = [...page.nodes.values()].filter((node) => node.counts.pending).map((node) => node.node_id);
      box.replaceChildren(el("p", { class: "muted small" }, ACTIVE.has(record.status)
        ? `Waiting for the first node to start…${queued.length ? ` (queued: ${queued.join(", ")})` : ""}` : "No node run started."));
      spanText.textContent = "";
      return;
    }
    const now = Date.now();
    const start = when(answer.start);
    const since = when(answer.since);
    const until = when(answer.until);
    const span = Math.max(1, until - since);
    const whole = timeline.since === null;
    const offset = (time) => `+${fmt.ms(Math.max(0, time - start))}`;
    if (whole) {
      const queued = record.started_at ? start - Date.parse(record.started_at) : 0;
      spanText.textContent = `${fmt.ms(span)} from the first node's start` +
        (queued >= 1000 ? `, which waited ${fmt.ms(queued)} for a worker` : "");
    } else {
      spanText.textContent = `${offset(since)} to ${offset(until)} (${fmt.ms(span)}) of ${fmt.ms(when(answer.end) - start)}`;
    }
    spanText.textContent += answer.node_runs ? "" : ` · ${fmt.n(answer.total)} node runs, counted in slices of ${fmt.ms(answer.bucket_ms)}: click one to zoom in`;
    box.dataset.since = answer.since;
    box.dataset.until = answer.until;
    box.dataset.drawn = answer.node_runs ? "runs" : "slices";

    const marks = (...content) => el("div", { class: "tl-marks" }, ...content);
    const axis = el("div", { class: "tl-axis" }, el("div", { class: "tl-label" }),
      el("div", { class: "tl-track" }, marks([0, 0.25, 0.5, 0.75, 1].map((f) =>
        el("span", { class: "tl-tick", style: { left: percent(f) } }, offset(since + f * span))))),
      el("div", { class: "tl-cost muted" }, "cost"));
    const lanes = new Map(answer.lanes.map((lane) => [lane.node_id, lane]));
    const runsOf = new Map();
    for (const run of answer.node_runs || []) {
      if (!runsOf.has(run.node_id)) runsOf.set(run.node_id, []);
      runsOf.get(run.node_id).push(run);
    }
    // How dark a slice is: by its runs, against the fullest slice of the window (on a log
    // scale, so that a slice of a few runs still shows beside one of thousands).
    let fullest = 1;
    for (const lane of answer.lanes) {
      for (const [, counts] of lane.buckets) fullest = Math.max(fullest, Object.values(counts).reduce((a, b) => a + b, 0));
    }

    const bar = (nodeId, run) => {
      const runStart = when(run.started_at);
      const runEnd = run.completed_at ? when(run.completed_at) : (run.status === "running" || run.status === "waiting" ? now : runStart);
      const from = Math.max(runStart, since);
      const to = Math.min(Math.max(runEnd, from), until);
      const width = percent((to - from) / span);
      const label = `${roundText(run)}${run.status === "waiting" ? " · waiting" : ""}`;
      return el("button", {
        type: "button", class: `tl-bar ${run.status} kind-${run.kind}${run.node_run_id === page.selectedRun ? " chosen" : ""}`,
        // A gate that still waits ends now, at the right edge of the whole run: drawn from
        // there, so its width (at least what its label takes) never runs past the track.
        style: run.status === "waiting" && whole && runEnd === now ? { right: "0", width } : { left: percent((from - since) / span), width },
        "data-run": run.node_run_id,
        title: `${run.node_id} · ${roundText(run)}${COPIES.has(run.kind) ? " (not run in this execution)" : ""}` +
          ` · ${run.agent_ref} · ${run.status}` +
          ` · ${run.duration_ms !== null && run.duration_ms !== undefined ? fmt.ms(run.duration_ms) : fmt.ms(runEnd - runStart) + " so far"}` +
          (run.tokens_in !== null && run.tokens_in !== undefined ? ` · ${fmt.n(run.tokens_in)} → ${fmt.n(run.tokens_out)} tokens` : "") +
          (run.called ? ` · ${costLine(run.cost, run.cost_complete)}` : "") +
          (run.error_code ? ` · ${run.error_code}` : ""),
        onclick: () => select(nodeId, run.node_run_id, true),
      }, el("span", {}, label), callMarks(run, from, to));
    };

    // A node run's tool calls, each a tick inside its bar at the time it started.
    const callMarks = (run, from, to) => (run.tool_call_marks || []).map((call) => {
      const at = when(call.started_at);
      if (!(at >= from && at <= to)) return null;
      return el("i", {
        class: `tl-call${call.status === "success" ? "" : " failed"}`,
        style: { left: percent(to > from ? (at - from) / (to - from) : 0) },
        title: `${call.name} · ${call.status} · ${fmt.ms(call.duration_ms)}`,
      });
    });

    const slice = (nodeId, index, counts) => {
      const runs = Object.values(counts).reduce((a, b) => a + b, 0);
      const worst = WORST_FIRST.find((status) => counts[status]) || Object.keys(counts)[0];
      const most = Object.keys(counts).reduce((a, b) => (counts[b] > counts[a] ? b : a));
      const from = since + index * answer.bucket_ms;
      // Filled with the status most of its runs have, the worst one a band on top: a timeout
      // among fifty successes shows, and does not paint the slice red.
      return el("button", {
        type: "button", class: `tl-slice ${worst}`, "data-slice": index, "data-runs": runs,
        style: { left: percent(index / answer.buckets), width: percent(1 / answer.buckets),
          "--slice-most": `var(--${most})`, "--slice-worst": `var(--${worst})`,
          opacity: (0.35 + (0.65 * Math.log1p(runs)) / Math.log1p(fullest)).toFixed(2) },
        title: `${nodeId} · ${offset(from)} to ${offset(from + answer.bucket_ms)} · ${countsText(counts)} · click to zoom in`,
        onclick: () => showWindow(from, from + answer.bucket_ms),
      });
    };

    const rows = laneIds(lanes).map((nodeId) => {
      const lane = lanes.get(nodeId);
      const node = page.nodes.get(nodeId);
      const cost = costOf(nodeId);
      const queued = node ? node.counts.pending || 0 : 0;
      const drawn = answer.node_runs ? (runsOf.get(nodeId) || []).map((run) => bar(nodeId, run))
        : (lane ? lane.buckets.map(([index, counts]) => slice(nodeId, index, counts)) : []);
      return el("div", { class: `tl-row${nodeId === page.selected ? " chosen" : ""}`, "data-node": nodeId },
        el("button", { type: "button", class: "tl-label mono", onclick: () => select(nodeId, null, true),
          "aria-label": `Show node ${nodeId} in the panel`,
          title: `${nodeId}: ${fmt.n(cost.runs)} run(s)${whole ? "" : `, ${fmt.n(lane ? lane.runs : 0)} in this window`}` },
        el("i", { class: `dot ${nodeStatus(nodeId, record)}` }), nodeId,
        answer.node_runs ? null : el("span", { class: "tl-runs", "data-runs": lane ? lane.runs : 0 }, fmt.n(lane ? lane.runs : 0))),
        el("div", { class: "tl-track" }, marks(drawn),
          queued && whole ? el("span", { class: "tl-queued small" }, `${fmt.n(queued)} queued`) : ""),
        el("div", { class: "tl-cost", "data-cost": cost.called ? cost.value : "",
          title: cost.called ? `What ${nodeId}'s runs cost${cost.complete ? "" : " at least: not every call was priced"}` : "No model call" },
        cost.called ? costLine(cost.value, cost.complete) : el("span", { class: "muted" }, "—")));
    });
    box.replaceChildren(axis, ...rows);
  }

  function renderTimelineControls() {
    const started = Boolean(timeline.answer && timeline.answer.start);
    const controls = document.getElementById("timeline-controls");
    controls.hidden = !started;
    if (!started) return;
    const [start, end] = runSpan();
    const [since, until] = currentWindow();
    const whole = timeline.since === null;
    controls.querySelector("[data-timeline=whole]").disabled = whole;
    controls.querySelector("[data-timeline=out]").disabled = whole;
    controls.querySelector("[data-timeline=in]").disabled = until - since <= MIN_WINDOW_MS;
    controls.querySelector("[data-timeline=earlier]").disabled = whole || since <= start;
    controls.querySelector("[data-timeline=later]").disabled = whole || until >= end;
  }

  function initTimeline() {
    const box = document.getElementById("timeline");
    const actions = {
      in: () => zoom(1 / ZOOM_STEP), out: () => zoom(ZOOM_STEP), earlier: () => pan(-0.5), later: () => pan(0.5),
      whole: () => showWindow(-Infinity, Infinity),
    };
    document.getElementById("timeline-controls").addEventListener("click", (event) => {
      const button = event.target.closest("button[data-timeline]");
      if (button && timeline.answer) actions[button.dataset.timeline]();
    });
    // Ctrl + the wheel (a trackpad's pinch too) zooms around the pointer; a sideways scroll
    // (shift + the wheel) moves the window. The wheel alone scrolls the page, as everywhere.
    box.addEventListener("wheel", (event) => {
      const track = box.querySelector(".tl-axis .tl-track");
      const sideways = Math.abs(event.deltaX) > Math.abs(event.deltaY);
      if (!track || !timeline.answer || !timeline.answer.start || (!event.ctrlKey && !sideways)) return;
      event.preventDefault();
      const rect = track.getBoundingClientRect();
      if (event.ctrlKey) {
        const [since, until] = currentWindow();
        const at = since + ((event.clientX - rect.left) / rect.width) * (until - since);
        zoom(Math.exp(event.deltaY * 0.002), Math.min(until, Math.max(since, at)));
      } else {
        pan(event.deltaX / rect.width, true);
      }
    }, { passive: false });
    // Dragging the lanes moves the window: they follow the pointer, and the window it ends on
    // is read when the button is let go.
    box.addEventListener("pointerdown", (event) => {
      timeline.dragged = false;
      if (event.button !== 0 || !event.target.closest(".tl-track") || !timeline.answer || !timeline.answer.start) return;
      timeline.drag = { x: event.clientX, pointerId: event.pointerId, moved: false };
    });
    box.addEventListener("pointermove", (event) => {
      const drag = timeline.drag;
      if (!drag || event.pointerId !== drag.pointerId) return;
      const dx = event.clientX - drag.x;
      if (!drag.moved && Math.abs(dx) < DRAG_PX) return;
      if (!drag.moved) {
        drag.moved = true;
        box.setPointerCapture(event.pointerId);
        box.classList.add("dragging");
      }
      box.querySelectorAll(".tl-marks").forEach((layer) => { layer.style.transform = `translateX(${dx}px)`; });
    });
    const release = (event, moveWindow) => {
      const drag = timeline.drag;
      if (!drag || event.pointerId !== drag.pointerId) return;
      timeline.drag = null;
      box.classList.remove("dragging");
      if (!drag.moved) return;
      timeline.dragged = true;
      const width = box.querySelector(".tl-axis .tl-track").clientWidth || 1;
      if (moveWindow) pan(-(event.clientX - drag.x) / width);
      else box.querySelectorAll(".tl-marks").forEach((layer) => { layer.style.transform = ""; });
    };
    box.addEventListener("pointerup", (event) => release(event, true));
    box.addEventListener("pointercancel", (event) => release(event, false));
    // The click that ends a drag is not a click on the bar or slice under the pointer.
    box.addEventListener("click", (event) => {
      if (!timeline.dragged) return;
      timeline.dragged = false;
      event.stopPropagation();
      event.preventDefault();
    }, true);
  }

  // -- gates: a person's step --------------------------------------------------------------
  // A gate's run waits (status "waiting") until one of its deciders approves the data it
  // shows, rejects it, or passes on an edited version (engine/gates.py); its `gate` says
  // what was asked, of whom, what was shown and, once decided, what was decided, by whom,
  // when and why. Whether the signed-in user may decide comes from the server (`gates`).

  const DECISION_LABELS = { approve: "Approve", reject: "Reject", edit: "Edit" };
  const DECIDING_LABELS = { approve: "Approving…", reject: "Rejecting…", edit: "Passing on the edit…" };
  const ON_TIMEOUT_TEXT = { approve: "approved as shown", reject: "rejected", escalate: "sent to a person (escalated)" };

  /** Who may decide the gate of `run`, and whether the signed-in user may: as the server said
   * for the workflow's gate nodes; for a gate a node run opened on its tool calls, from the
   * run's own deciders and the user's roles (the server checks again when they decide). */
  function gateInfo(run) {
    const known = (data.gates || {})[run.node_id];
    if (known) return known;
    const deciders = (run.gate && run.gate.deciders) || {};
    const person = data.person || { username: "", roles: [] };
    const mayDecide = (deciders.users || []).includes(person.username)
      || (deciders.roles || []).some((role) => person.roles.includes(role));
    return { deciders: "", may_decide: Boolean(run.gate) && mayDecide };
  }

  /** Who may decide, as the server words it; for a gate the page was not told of, from the run. */
  function decidersText(run) {
    const info = gateInfo(run);
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

  // A gate's output given other than by a decision on its waiting run: by one of its
  // deciders all the same, as their decision (executions/services/gates.py).
  const GIVEN_TEXT = {
    rerun: "edited in this re-run, in place of the decision it copies",
    trial: "typed for this trial, in place of the decision it copies",
    resume: "given to resume the run past the gate",
  };

  /** A gate's run in one line, after its agent in the attempt's summary. */
  function gateSummaryText(run) {
    const gate = run.gate;
    if (gate.decision) {
      const by = gate.timed_out ? "its time-out" : gate.decided_by || "—";
      const given = gate.given === "resume" ? " on resume" : "";
      return ` · ${gate.decision} by ${by}${given}${run.duration_ms !== null && run.duration_ms !== undefined && !gate.given ? ` after ${fmt.ms(run.duration_ms)}` : ""}`;
    }
    return run.status === "waiting" ? " · waiting for a person's decision" : ` · ${run.status}, not decided`;
  }

  /** A node run's place among its node's runs, as people read it: "round 2 · attempt 1",
   * with its kind when it is not a first attempt ("round 1 · attempt 2 · retry"). */
  function roundText(run) {
    return `round ${run.round} · attempt ${run.attempt}${run.kind === "first" ? "" : ` · ${run.kind}`}`;
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
    if (waiting && gateInfo(run).may_decide) action = gateForm(run);
    else if (waiting) {
      action = el("p", { class: "gate-not-yours notice" }, `Waiting for ${decidersText(run)} to decide. `,
        "You may not decide this gate: the form is shown to its deciders only.");
    } else if (!gate.decision) {
      action = el("p", { class: "muted" }, `Not decided: this gate's run is ${run.status}.`);
    }
    return el("section", { class: `gate-box${waiting ? " waiting" : ""}`, "data-gate": run.node_run_id },
      el("div", { class: "row gate-head" }, el("h3", {}, "A person's decision",
        run.round ? el("span", { class: "muted small gate-round" }, ` · round ${run.round}`) : null),
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
        gate.given ? fact("Given", el("span", { class: "gate-given" }, GIVEN_TEXT[gate.given] || gate.given)) : null,
        fact("Timed out", el("span", { class: "gate-timed-out" }, gate.timed_out ? "yes: nobody decided in time" : "no")),
        fact("Comment", gate.comment ? el("span", { class: "gate-comment" }, gate.comment) : el("span", { class: "gate-comment muted" }, "none")))
        : null,
      note ? el("p", { class: "error gate-error", role: "alert" }, note) : null,
      action);
  }

  // The edit: each field of the data shown (and of the gate's schema, `gate.schema`) is a
  // field of the form — text in a text area when it is long or has several lines, numbers
  // and yes/no as such, lists and objects as JSON — checked as it is read; then the edit,
  // against the data shown, to confirm before it is sent; the server holds it to the schema
  // and answers a refusal at the field it names ("output.draft").

  const LONG_TEXT = 80; // characters: longer text (or text of several lines) gets a text area

  function schemaProperties(gate) {
    const schema = gate.schema;
    return schema && typeof schema === "object" && schema.properties && typeof schema.properties === "object" ? schema.properties : {};
  }

  function schemaType(property) {
    const type = property && property.type;
    return Array.isArray(type) ? type.find((item) => item !== "null") : type;
  }

  /** The form's fields: each named input shown, then each the schema names that was not shown. */
  function editFields(gate) {
    const shown = gate.shown || {};
    const properties = schemaProperties(gate);
    const required = new Set(Array.isArray(gate.schema && gate.schema.required) ? gate.schema.required : []);
    return [...new Set([...Object.keys(shown), ...Object.keys(properties)])].map((name) => {
      const property = properties[name] && typeof properties[name] === "object" ? properties[name] : {};
      const known = Object.prototype.hasOwnProperty.call(shown, name);
      const value = known ? shown[name] : undefined;
      const type = known ? (value === null ? "null" : Array.isArray(value) ? "array" : typeof value) : schemaType(property);
      const kind = type === "string" ? "text" : type === "number" || type === "integer" ? "number"
        : type === "boolean" ? "boolean" : "json";
      return { name, known, value, kind, integer: schemaType(property) === "integer", required: required.has(name),
        description: typeof property.description === "string" ? property.description : "" };
    });
  }

  /** A field's value as the form holds it: text for text, numbers and JSON; true/false for yes/no. */
  function fieldText(field) {
    if (!field.known) return field.kind === "boolean" ? false : "";
    if (field.kind === "boolean") return field.value;
    if (field.kind === "json") return JSON.stringify(field.value, null, 2);
    return String(field.value);
  }

  function gateControl(field, draft, id) {
    const where = `output.${field.name}`;
    const value = draft.values[field.name];
    const keep = (event) => { draft.values[field.name] = field.kind === "boolean" ? event.target.checked : event.target.value; };
    const common = { id, "data-gate-field": where, name: field.name, oninput: keep, onchange: keep };
    if (field.kind === "boolean") {
      const box = el("input", { ...common, type: "checkbox" });
      box.checked = Boolean(value);
      return box;
    }
    if (field.kind === "number") {
      const input = el("input", { ...common, type: "number", step: field.integer ? "1" : "any", inputmode: "decimal" });
      input.value = value;
      return input;
    }
    const lines = String(value).split("\n").length;
    if (field.kind === "text" && lines === 1 && String(value).length <= LONG_TEXT) {
      const input = el("input", { ...common, type: "text", spellcheck: "true" });
      input.value = value;
      return input;
    }
    const area = el("textarea", { ...common, class: field.kind === "json" ? "gate-json-input" : "gate-text-input",
      rows: String(Math.min(16, Math.max(3, lines + 1))), spellcheck: field.kind === "json" ? "false" : "true" });
    area.value = value;
    return area;
  }

  /** The edited data read from the form: {output} or {problems: [[where, text]]}. */
  function editedOutput(gate, draft) {
    const output = {};
    const problems = [];
    for (const field of editFields(gate)) {
      const value = draft.values[field.name];
      const where = `output.${field.name}`;
      if (field.kind === "boolean") {
        if (field.known || value) output[field.name] = Boolean(value);
      } else if (!field.known && value === "") {
        // a field of the schema that was not shown, left empty: not passed on
      } else if (field.kind === "text") {
        output[field.name] = value;
      } else if (field.kind === "number") {
        const number = value.trim() === "" ? NaN : Number(value);
        if (Number.isFinite(number)) output[field.name] = number;
        else problems.push([where, `${field.name} is a number: "${value}" is not one`]);
      } else {
        try {
          output[field.name] = JSON.parse(value);
        } catch (error) {
          problems.push([where, `${field.name} is not JSON: ${error.message}`]);
        }
      }
    }
    return problems.length ? { problems } : { output };
  }

  // A line diff of two texts (longest common subsequence: the texts a gate shows are short).
  function lineDiff(before, after) {
    const a = before.split("\n");
    const b = after.split("\n");
    const common = Array.from({ length: a.length + 1 }, () => new Array(b.length + 1).fill(0));
    for (let i = a.length - 1; i >= 0; i -= 1) {
      for (let j = b.length - 1; j >= 0; j -= 1) {
        common[i][j] = a[i] === b[j] ? common[i + 1][j + 1] + 1 : Math.max(common[i + 1][j], common[i][j + 1]);
      }
    }
    const lines = [];
    let i = 0;
    let j = 0;
    while (i < a.length || j < b.length) {
      if (i < a.length && j < b.length && a[i] === b[j]) {
        lines.push(["same", a[i]]);
        i += 1;
        j += 1;
      } else if (j < b.length && (i === a.length || common[i][j + 1] >= common[i + 1][j])) {
        lines.push(["added", b[j]]);
        j += 1;
      } else {
        lines.push(["removed", a[i]]);
        i += 1;
      }
    }
    return lines;
  }

  function diffLines(lines) {
    const mark = { same: "  ", added: "+ ", removed: "- " };
    const tag = { same: "span", added: "ins", removed: "del" };
    return el("pre", { class: "gate-diff-text" },
      lines.map(([how, text]) => el(tag[how], { class: `diff-line ${how}` }, `${mark[how]}${text}\n`)));
  }

  /** The edit against the data shown, field by field: what changed, nothing of what did not. */
  function editDiff(shown, output) {
    const names = [...new Set([...Object.keys(shown), ...Object.keys(output)])];
    const changed = names.filter((name) => JSON.stringify(shown[name]) !== JSON.stringify(output[name]));
    if (!changed.length) {
      return el("p", { class: "gate-diff-none" }, "No field changed: the data shown goes on as it is.");
    }
    const text = (value) => (value === undefined ? "(absent)" : typeof value === "string" ? value : JSON.stringify(value, null, 2));
    return el("dl", { class: "gate-diff" }, changed.flatMap((name) => {
      const before = shown[name];
      const after = output[name];
      const how = before === undefined ? "added" : after === undefined ? "removed" : "changed";
      return [
        el("dt", { "data-diff": name }, el("span", { class: "mono" }, name), " ", el("span", { class: "muted small" }, how)),
        el("dd", { "data-diff": name }, diffLines(lineDiff(before === undefined ? "" : text(before), after === undefined ? "" : text(after))
          .filter(([kind, line]) => !(line === "" && ((kind === "removed" && before === undefined) || (kind === "added" && after === undefined)))))),
      ];
    }));
  }

  function gateForm(run) {
    const gate = run.gate;
    const fields = editFields(gate);
    let draft = page.gateDrafts.get(run.node_run_id);
    if (!draft) {
      draft = { comment: "", values: Object.fromEntries(fields.map((field) => [field.name, fieldText(field)])), confirming: null };
      page.gateDrafts.set(run.node_run_id, draft);
    }
    const fieldError = (name) => el("p", { class: "field-error", "data-for": name, hidden: true });
    const comment = el("textarea", { class: "gate-comment-input", rows: "3", "data-gate-field": "comment",
      placeholder: "why (kept with the decision)", oninput: (event) => { draft.comment = event.target.value; } });
    comment.value = draft.comment;
    const offersEdit = (gate.decisions || []).includes("edit");
    const what = `gate ${run.node_id}`;
    const headingId = `decide-${run.node_run_id}-heading`;
    const form = el("form", { class: "gate-form", id: `decide-${run.node_run_id}`, tabindex: "-1", "aria-labelledby": headingId,
      "data-gate-form": run.node_run_id, onsubmit: (event) => event.preventDefault() });
    // Named for the gate, not only the decision: a page may show a node named "approve" too.
    const decisionButton = (decision) => el("button", {
      type: "button", "data-decision": decision,
      "aria-label": decision === "edit" ? `Review the edit of ${what}` : `${DECISION_LABELS[decision] || decision} the data of ${what}`,
      class: decision === "approve" ? "primary" : decision === "reject" ? "danger" : "",
      onclick: (event) => (decision === "edit" ? reviewEdit(run, form) : decide(run, decision, form, event.currentTarget)),
    }, decision === "edit" ? "Review the edit…" : DECISION_LABELS[decision] || decision);
    const edit = offersEdit ? el("fieldset", { class: "gate-edit" },
      el("legend", {}, "Edit the data"),
      el("p", { class: "muted small" }, "Passed on instead of the data shown if you choose to pass on the edit",
        gate.schema ? `; held to ${gate.schema_from || "the gate's schema"}` : "", "."),
      fieldError("output"),
      fields.map((field, index) => el("div", { class: `gate-field kind-${field.kind}`, "data-field": field.name },
        el("label", { for: `gate-field-${run.node_run_id}-${index}` }, el("span", { class: "mono" }, field.name),
          field.required ? el("span", { class: "muted small" }, " (required)") : null,
          field.kind === "json" ? el("span", { class: "muted small" }, " (JSON)") : null,
          field.description ? el("span", { class: "muted small gate-field-about" }, ` — ${field.description}`) : null),
        gateControl(field, draft, `gate-field-${run.node_run_id}-${index}`),
        fieldError(`output.${field.name}`)))) : null;
    form.append(
      el("h4", { id: headingId }, "Your decision"),
      el("label", {}, "Comment", comment), fieldError("comment"),
      edit,
      el("div", { class: "row gate-buttons" }, (gate.decisions || []).map(decisionButton)),
      fieldError("decision"),
      el("section", { class: "gate-confirm", "aria-label": "Confirm the edit", hidden: true }),
      el("p", { class: "error gate-form-error", role: "alert", hidden: true }));
    if (draft.confirming) showConfirm(run, form, draft.confirming, false);
    return form;
  }

  function clearGateProblems(form) {
    form.querySelectorAll(".field-error, .gate-form-error").forEach((place) => { place.hidden = true; place.textContent = ""; });
    form.querySelectorAll(".invalid").forEach((control) => {
      control.classList.remove("invalid");
      control.removeAttribute("aria-invalid");
    });
  }

  /** Show a problem at its field: the one named, else the closest field holding it
   * ("output.items[2].name" at the JSON field "output.items"), else under the buttons. */
  function showGateProblem(form, where, text) {
    let name = where;
    while (name && !form.querySelector(`.field-error[data-for="${CSS.escape(name)}"]`)) {
      const cut = Math.max(name.lastIndexOf("."), name.lastIndexOf("["));
      name = cut > 0 ? name.slice(0, cut) : "";
    }
    const place = name ? form.querySelector(`.field-error[data-for="${CSS.escape(name)}"]`) : null;
    if (place) {
      place.textContent = text;
      place.hidden = false;
      const control = form.querySelector(`[data-gate-field="${CSS.escape(name)}"]`);
      if (control) {
        control.classList.add("invalid");
        control.setAttribute("aria-invalid", "true");
        control.focus();
      }
      return;
    }
    const message = form.querySelector(".gate-form-error");
    message.textContent = text;
    message.hidden = false;
  }

  // The edit's second step: what changed against the data shown, then confirm (sent) or go back.
  function reviewEdit(run, form) {
    const draft = page.gateDrafts.get(run.node_run_id);
    clearGateProblems(form);
    const read = editedOutput(run.gate, draft);
    if (read.problems) {
      read.problems.slice().reverse().forEach(([where, text]) => showGateProblem(form, where, text));
      return;
    }
    draft.confirming = read.output;
    showConfirm(run, form, read.output, true);
  }

  function showConfirm(run, form, output, focus) {
    const box = form.querySelector(".gate-confirm");
    const back = () => {
      page.gateDrafts.get(run.node_run_id).confirming = null;
      box.hidden = true;
      box.replaceChildren();
      form.querySelectorAll("button[data-decision], .gate-edit input, .gate-edit textarea").forEach((item) => { item.disabled = false; });
      form.querySelector("button[data-decision='edit']").focus();
    };
    const confirm = el("button", { type: "button", class: "primary", "data-confirm": "edit",
      onclick: (event) => decide(run, "edit", form, event.currentTarget, output, back) }, "Pass on the edited data");
    box.replaceChildren(
      el("h4", {}, "Your edit, against the data shown"),
      editDiff(run.gate.shown || {}, output),
      el("div", { class: "row gate-buttons" }, confirm,
        el("button", { type: "button", "data-back": "edit", onclick: back }, "Back to editing")));
    box.hidden = false;
    // While confirming, the fields and the other decisions wait: what is sent is what the diff shows.
    form.querySelectorAll("button[data-decision], .gate-edit input, .gate-edit textarea").forEach((item) => { item.disabled = true; });
    if (focus) confirm.focus();
  }

  async function decide(run, decision, form, button, output, back) {
    const draft = page.gateDrafts.get(run.node_run_id);
    clearGateProblems(form);
    page.gateNotes.delete(run.node_run_id);
    const body = { decision, comment: draft.comment };
    if (decision === "edit") body.output = output;
    const buttons = form.querySelectorAll("button[data-decision], button[data-confirm], button[data-back]");
    const wasDisabled = new Map([...buttons].map((item) => [item, item.disabled]));
    buttons.forEach((item) => { item.disabled = true; });
    const label = button.textContent;
    button.textContent = DECIDING_LABELS[decision] || "Sending…";
    try {
      await api.post(`${apiPath}/node-runs/${run.node_run_id}/decision`, body);
      page.gateDrafts.delete(run.node_run_id);
      schedule(0); // the run goes on: read it again now
    } catch (error) {
      buttons.forEach((item) => { item.disabled = wasDisabled.get(item); });
      button.textContent = label;
      const where = error.where || "";
      const field = where.split(/[.[]/)[0];
      if (error.status === 422 && ["output", "comment", "decision"].includes(field)) {
        if (back) back(); // back to the fields, to show the problem at its own
        const problems = Array.isArray(error.details) && error.details.every((item) => item && item.where)
          ? error.details.map((item) => [item.where, `${item.where}: ${item.message}`]) : [[where, error.message]];
        problems.slice().reverse().forEach(([at, text]) => showGateProblem(form, at, text));
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

  // The gates waiting for a decision, above the graph: each links to its panel. A gate that
  // waits is its node's latest run (the run goes no further on that branch until decided).
  function renderGatesWaiting() {
    const section = document.getElementById("gates-waiting");
    const open = latestRuns().filter((run) => run.status === "waiting" && run.gate);
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
        el("a", { class: "mono", href: `?node=${encodeURIComponent(run.node_id)}&run=${run.node_run_id}#decide-${run.node_run_id}`,
          onclick: (event) => {
            event.preventDefault();
            const yours = gateInfo(run).may_decide;
            page.focusForm = yours ? String(run.node_run_id) : null;
            select(run.node_id, run.node_run_id, !yours); // a decider lands on the form, focused
            bringAskedForm();
          } }, run.node_id),
        ": ", run.gate.prompt || "a decision on its data",
        el("span", { class: "muted small" }, ` · decided by ${decidersText(run)}`,
          run.decide_by ? ` · time-out ${fmt.time(run.decide_by)}, then ${ON_TIMEOUT_TEXT[run.gate.on_timeout] || run.gate.on_timeout}` : ""),
        gateInfo(run).may_decide ? el("strong", { class: "gate-yours small" }, " · yours to decide") : null))));
    keepGraphAligned();
  }

  /** The form the address asked for, once drawn: scrolled to the top and focused, so that
   * the decision's fields and buttons are the first things under the eyes and the keyboard. */
  function bringAskedForm() {
    const form = page.focusForm && document.getElementById(`decide-${page.focusForm}`);
    if (!form) return;
    page.focusForm = null;
    form.scrollIntoView({ block: "start" });
    form.focus({ preventScroll: true });
  }

  // -- whole node run records ----------------------------------------------------------------
  // The panel lists a node's runs light; an attempt opened shows its whole record, read by
  // its id and kept while its light record says it has not changed since.

  const wholeRecords = new Map(); // node run id → its whole record

  // What changes in a node run while it goes: a whole record read before is stale when its
  // light record no longer agrees on these.
  function version(run) {
    return JSON.stringify([run.status, run.completed_at, run.tokens_in, run.tokens_out, run.cost, run.dispatches, run.decide_by]);
  }

  function keepRecord(run) {
    wholeRecords.delete(run.node_run_id);
    wholeRecords.set(run.node_run_id, run);
    if (wholeRecords.size > MAX_KEPT_RECORDS) wholeRecords.delete(wholeRecords.keys().next().value);
  }

  function freshRecord(run) {
    const kept = wholeRecords.get(run.node_run_id);
    return kept && version(kept) === version(run) ? kept : null;
  }

  async function wholeRecord(nodeRunId) {
    const run = await api.get(`${apiPath}/node-runs/${nodeRunId}`);
    keepRecord(run);
    return run;
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
    const who = run.gate && run.gate.decided_by ? run.gate.decided_by : "a person";
    return el("p", { class: "copy-origin edited" }, `Not run in this execution: edited by ${who}`,
      original ? ["; the original: ", original] : " (typed by hand: no run made it)", ".");
  }

  function attemptBody(run) {
    const thoughtTree = thoughtTrees.has(run.node_run_id) ? el("p", { class: "thought-tree-link" },
      el("a", { class: "button small-button", href: thoughtTrees.get(run.node_run_id) }, "Thought tree"),
      el("span", { class: "muted small" }, " this run's Tree-of-Thoughts search: its tree, scores and messages")) : null;
    if (runsWorkflow(run.node_id) && !COPIES.has(run.kind)) return nodeRun.workflowRecord(run, childRunBlock(run), copyOrigin(run));
    return nodeRun.record(run, run.gate ? gateBlock(run) : null, copyOrigin(run), thoughtTree);
  }

  // A sub-workflow node's run hands its work to a child run (a run of another workflow):
  // a link to its page, with its workflow, status and what it cost (rolled up into this run).
  function childRunBlock(run) {
    const child = run.child_run;
    const node = graphNodes.get(run.node_id) || {};
    const title = el("h4", {}, "Child run");
    if (!child) {
      const why = GOING.has(run.status) ? `Not started yet: the node's run is ${run.status}.`
        : `None: this run started no child run${run.error_code ? " (see its error below)" : ""}.`;
      return el("section", { class: "child-run", "data-child-run": "" }, title,
        el("p", { class: "muted small" }, `It runs workflow ${(node.subworkflow || {}).workflow_ref || "?"}. ${why}`));
    }
    return el("section", { class: "child-run", "data-child-run": child.execution_id }, title,
      el("dl", { class: "facts compact-facts" },
        nodeRun.fact("Run", el("a", { class: "mono child-run-link", href: `/executions/${encodeURIComponent(child.execution_id)}/` },
          child.execution_id)),
        nodeRun.fact("Workflow", el("a", { class: "mono child-run-workflow", href: `/workflows/${encodeURIComponent(child.workflow_id)}/` },
          child.workflow_id), (node.subworkflow || {}).version ? el("span", { class: "muted" }, ` version ${node.subworkflow.version}`) : ""),
        nodeRun.fact("Status", el("span", { class: `badge ${child.status} child-run-status` }, child.status)),
        nodeRun.fact("Cost", el("span", { class: "child-run-cost" }, money.text(child.cost)),
          GOING.has(child.status) ? el("span", { class: "muted small" }, " so far") : "")),
      el("p", { class: "muted small" }, "Its tokens and cost are counted in this node's run once it ends; its output is ",
        el("code", {}, "{state, nodes}"), ": the child's final state and its last nodes' outputs."));
  }

  // An attempt's heading (from its light record) and, once opened, its whole record.
  function attemptBlock(run, open) {
    const details = el("details", { class: `attempt ${run.status}${COPIES.has(run.kind) ? " copy" : ""}`, "data-run": run.node_run_id, id: `run-${run.node_run_id}` },
      el("summary", {},
        badge(run.status), " ",
        el("strong", { class: "run-round" }, roundText(run)), " ",
        el("span", { class: "mono" }, run.agent_ref),
        el("span", { class: "muted small" }, run.gate ? gateSummaryText(run)
          : run.kind === "manual" && run.backend === "manual" ? ` · given by ${run.worker || "a person"} on resume`
          : ` · ${run.duration_ms !== null && run.duration_ms !== undefined ? fmt.ms(run.duration_ms) : run.status}` +
          ` · ${fmt.n(run.tokens_in)} → ${fmt.n(run.tokens_out)} tokens` +
          (run.called ? ` · ${costLine(run.cost, run.cost_complete)}` : "")),
        run.error_code ? el("code", { class: "error-code" }, run.error_code) : ""));
    let built = false;
    const build = () => {
      if (built || !details.open) return;
      built = true;
      const whole = freshRecord(run);
      if (whole) {
        details.append(attemptBody(whole));
        bringAskedForm();
        return;
      }
      const loading = el("p", { class: "muted small attempt-loading" }, "Reading this node run…");
      details.append(loading);
      wholeRecord(run.node_run_id).then((record) => { loading.replaceWith(attemptBody(record)); bringAskedForm(); },
        (error) => { loading.textContent = `Could not read this node run: ${error.message}`; });
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

  // The node's runs in order, oldest first: the last ones read, after a chip for the
  // earlier ones when there are more.
  function trail(runs, count, escalation) {
    const shown = runs.slice(-MAX_TRAIL);
    const earlier = count - shown.length;
    const chips = earlier > 0 ? [el("span", { class: "trail-chip" }, `… ${fmt.n(earlier)} earlier run${earlier === 1 ? "" : "s"} …`)] : [];
    shown.forEach((run) => {
      if (chips.length) chips.push(el("span", { class: "trail-arrow" }, "→"));
      chips.push(el("a", { class: `trail-chip ${run.status}`, href: `#run-${run.node_run_id}`,
        onclick: (event) => { event.preventDefault(); select(run.node_id, run.node_run_id, true); } },
      `${roundText(run)} `, el("span", { class: "mono" }, run.agent_ref), ` ${run.status}`));
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
      downstream: data.downstream, apiPath });
  }

  // The open node's runs, newest first (GET …/node-runs?node=…): `runs` the newest `limit`
  // of its `count`, and `chosen`, a run asked for that is older than those.
  const panel = { nodeId: null, limit: MAX_ATTEMPTS_SHOWN, runs: null, count: 0, chosen: null, nodeKey: null, key: "", asked: 0 };

  // What the summary says of a node: when it changes, its panel reads its runs again.
  function nodeKey(nodeId) {
    const node = page.nodes.get(nodeId);
    return JSON.stringify(node ? [node.runs, node.counts, node.latest.node_run_id, version(node.latest)] : null);
  }

  async function loadPanel() {
    const nodeId = page.selected;
    if (!nodeId) return;
    const asked = ++panel.asked;
    const key = nodeKey(nodeId);
    const graphNode = data.graph.nodes.find((item) => item.id === nodeId);
    const query = new URLSearchParams({ node: nodeId, order: "-sequence", limit: String(panel.limit) });
    // A gate's runs called no model: no prompt nor context, small whole records, read at once
    // (their headings say what was decided).
    if (graphNode && graphNode.gate) query.set("full", "true");
    const found = await api.get(`${apiPath}/node-runs?${query}`);
    const wanted = page.selectedRun;
    let chosen = null;
    if (wanted && !found.items.some((run) => run.node_run_id === wanted)) {
      chosen = await wholeRecord(wanted).catch((error) => { if (error.status === 404) return null; throw error; });
      if (chosen && chosen.node_id !== nodeId) chosen = null;
    }
    if (asked !== panel.asked || nodeId !== page.selected) return;
    if (query.has("full")) found.items.forEach(keepRecord);
    Object.assign(panel, { nodeId, runs: found.items, count: found.count, chosen, nodeKey: key });
    renderPanel(false);
  }

  // Read the open node's runs again when the summary says they changed; else draw what the
  // panel has (whether the node may be re-run changes when the run ends, maybe after this
  // node's last change).
  async function refreshPanel() {
    if (!page.selected) return;
    if (panel.nodeId !== page.selected || panel.nodeKey !== nodeKey(page.selected)) await loadPanel();
    else renderPanel(false);
  }

  function renderPanel(force) {
    const box = document.getElementById("node-panel");
    const nodeId = page.selected;
    const record = page.record;
    if (!nodeId) return;
    if (!record || panel.nodeId !== nodeId || !panel.runs) {
      if (!box.querySelector(".panel-loading")) {
        box.replaceChildren(el("h2", {}, "Node ", el("span", { class: "mono" }, nodeId)), el("p", { class: "muted panel-loading" }, "Loading…"));
      }
      return;
    }
    const escalation = record.status === "escalated" && record.escalation && record.escalation.node_id === nodeId ? record.escalation : null;
    const cost = costOf(nodeId);
    const key = JSON.stringify([nodeId, page.selectedRun, panel.runs.map((run) => [run.node_run_id, version(run)]), panel.count,
      panel.chosen && panel.chosen.node_run_id, escalation, rerunnable(record), cost, nodeStatus(nodeId, record)]);
    if (!force && key === panel.key) return;
    panel.key = key;
    const node = data.graph.nodes.find((item) => item.id === nodeId);
    const status = nodeStatus(nodeId, record);
    const planHref = data.plan_url.replace("/NODE/", `/${encodeURIComponent(nodeId)}/`);
    const newestFirst = panel.chosen ? [...panel.runs, panel.chosen] : panel.runs;
    const openId = page.selectedRun || (panel.runs.length ? panel.runs[0].node_run_id : null);
    const older = panel.count - panel.runs.length;
    const more = Math.min(MAX_ATTEMPTS_SHOWN, older, MAX_PANEL_RUNS - panel.runs.length);
    box.replaceChildren(...[
      el("div", { class: "row panel-head" },
        el("h2", { title: `Node ${nodeId}` }, "Node ", el("span", { class: "mono" }, nodeId)), badge(status === "none" ? "not run" : status, status === "none" ? "pending" : ""),
        node && node.gate ? el("span", { class: "gate-tag", title: "The run stops here for a person to approve, reject or edit" }, "gate: a person decides") : null,
        node && node.shape === "workflow" ? el("span", { class: "workflow-tag", title: "Its run hands its work to a child run of this workflow" },
          workflowLine(node), node.subworkflow.version ? "" : " (its latest version)") : null,
        el("span", { class: "muted" }, node ? `agent ${node.agent}` : ""),
        cost.called ? el("span", { class: "node-cost small", title: "What this node's runs cost together" },
          `cost ${costLine(cost.value, cost.complete)}${cost.runs > 1 ? ` over ${fmt.n(cost.runs)} runs` : ""}`) : null,
        el("span", { class: "spacer" }),
        node ? el("a", { class: "button small-button", href: planHref, title: "The context a run of this node would get now, without calling a model" }, "Plan this node") : null,
        node && rerunnable(record) ? el("button", { type: "button", class: "small-button", "data-rerun-from": nodeId,
          title: "A new run that reuses this run's outputs before this node (edited if you like) and runs it and what follows",
          onclick: () => openRerun(nodeId) }, "Re-run from here") : null,
        el("button", { type: "button", class: "small-button", onclick: () => select(null) }, "Close")),
      panel.count ? trail(panel.runs.slice().reverse(), panel.count, escalation)
        : el("p", { class: "muted" }, ACTIVE.has(record.status) ? "This node has not run yet; it will show here when it does." : "This node did not run."),
      older > 0 ? el("p", { class: "muted small panel-more" },
        `Showing the last ${fmt.n(panel.runs.length)} of ${fmt.n(panel.count)} runs of this node. `,
        more > 0 ? el("button", { type: "button", class: "small-button", "data-older": more,
          onclick: (event) => { event.currentTarget.disabled = true; panel.limit += more; loadPanel().catch(panelTrouble); } },
        `Show ${fmt.n(more)} older`) : "The table below lists every one.") : null,
      ...newestFirst.map((run) => attemptBlock(run, page.open.has(run.node_run_id) ? page.open.get(run.node_run_id) : run.node_run_id === openId)),
    ].filter(Boolean));
    if (page.scrollToRun) {
      const target = document.getElementById(`run-${page.scrollToRun}`);
      page.scrollToRun = null;
      if (target) target.scrollIntoView({ behavior: "smooth", block: "start" });
    }
    bringAskedForm();
  }

  function panelTrouble(error) {
    const box = document.getElementById("node-panel");
    box.append(el("p", { class: "error small panel-error" }, `Could not read this node's runs: ${error.message}`));
  }

  // -- the node runs table (one page, kept in step with the run) ------------------------------

  const table = {
    element: document.querySelector("table.node-runs"),
    key: null, // the counts the page was last read at
    previews: new Map(), // node run id → {status, text}: the start of its output
  };
  // The server's rows come with their previews.
  for (const row of table.element.tBodies[0].rows) {
    const link = row.querySelector("a[data-run]");
    if (link) {
      table.previews.set(Number(link.dataset.run), { status: row.querySelector(".badge").textContent,
        text: row.querySelector(".output-preview").textContent });
    }
  }

  function preview(output) {
    if (output === null || output === undefined) return "";
    const text = (typeof output === "string" ? output : JSON.stringify(output, null, 1)).split(/\s+/).join(" ");
    return text.length <= 160 ? text : `${text.slice(0, 159)}…`;
  }

  function tableRow(run) {
    const error = run.error && run.error.length > 160 ? `${run.error.slice(0, 159)}…` : run.error || "";
    const known = table.previews.get(run.node_run_id);
    return el("tr", {},
      el("td", {}, String(run.sequence)),
      el("td", {}, el("a", { class: "mono", href: `?node=${encodeURIComponent(run.node_id)}&run=${run.node_run_id}#node-panel`,
        "data-node": run.node_id, "data-run": run.node_run_id }, run.node_id)),
      el("td", { class: "mono" }, run.agent_ref),
      el("td", { class: "run-round" }, `round ${run.round} · attempt ${run.attempt}`,
        run.kind === "first" ? null : [" ", el("span", { class: `kind ${run.kind}` }, run.kind)]),
      el("td", {}, badge(run.status)),
      el("td", {}, `${run.tokens_in ?? "—"} / ${run.tokens_out ?? "—"}`),
      el("td", { class: "cost-cell" }, runCost(run)),
      el("td", {}, run.duration_ms !== null && run.duration_ms !== undefined ? fmt.ms(run.duration_ms) : el("span", { class: "muted" }, "—")),
      el("td", { class: "small error-cell" }, run.error_code ? el("code", {}, run.error_code) : "", run.error_code ? " " : "", error),
      el("td", { class: "small output-preview", "data-run": run.node_run_id }, known && known.status === run.status ? known.text : ""));
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

  // The table's page is read again (light) when the run's counts change; a run's output,
  // which light records leave out, is read once it has one (an ended run's whole record).
  async function refreshTable(record) {
    const summary = record.node_runs_summary;
    const key = JSON.stringify([summary.total, summary.counts]);
    if (key === table.key) return;
    const going = summary.counts.pending + summary.counts.running + summary.counts.waiting;
    if (table.key === null && Number(table.element.dataset.total) === summary.total && !going) {
      table.key = key; // the server's rows are these
      return;
    }
    const offset = Math.max(0, Number(table.element.dataset.offset) || 0);
    const perPage = Number(table.element.dataset.perPage) || 50;
    const found = await api.get(`${apiPath}/node-runs?limit=${perPage}&offset=${offset}`);
    table.key = key;
    table.element.tBodies[0].replaceChildren(...(found.items.length ? found.items.map(tableRow)
      : [el("tr", {}, el("td", { colspan: "10", class: "muted" }, "No node has run yet."))]));
    document.getElementById("runs-pager").replaceChildren(pager(found.count, perPage));
    const unknown = found.items.filter((run) => {
      const known = table.previews.get(run.node_run_id);
      return !(known && known.status === run.status);
    });
    await Promise.all(unknown.map(async (run) => {
      const text = GOING.has(run.status) ? "" : preview((freshRecord(run) || await wholeRecord(run.node_run_id)).output);
      table.previews.set(run.node_run_id, { status: run.status, text });
      const cell = table.element.querySelector(`.output-preview[data-run="${run.node_run_id}"]`);
      if (cell) cell.textContent = text;
    }));
  }

  // -- selection ----------------------------------------------------------------------------

  function select(nodeId, runId, scroll) {
    const sameNode = nodeId === page.selected;
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
    const box = document.getElementById("node-panel");
    if (!nodeId) {
      Object.assign(panel, { nodeId: null, runs: null, key: "" });
      box.replaceChildren(el("h2", {}, "Node"), el("p", { class: "muted" }, "Click a node in the graph or a bar in the timeline to see it here."));
    } else {
      if (!sameNode) Object.assign(panel, { nodeId: null, runs: null, limit: MAX_ATTEMPTS_SHOWN, chosen: null, key: "" });
      page.scrollToRun = scroll && runId ? runId : null;
      const listed = panel.runs && panel.nodeId === nodeId &&
        (!runId || panel.runs.some((run) => run.node_run_id === runId) || (panel.chosen && panel.chosen.node_run_id === runId));
      if (listed) renderPanel(true);
      else {
        renderPanel(false);
        if (page.record) loadPanel().catch(panelTrouble); // else the first round reads it, with the summary it goes by
      }
    }
    if (page.record) {
      paintGraph(page.record);
      renderTimeline();
    }
    // A run asked for is brought into view by the panel once drawn; until then, the panel.
    if (scroll && nodeId && !(runId && page.scrollToRun === null)) box.scrollIntoView({ behavior: "smooth", block: "start" });
  }

  // -- live updates -------------------------------------------------------------------------

  function update(record) {
    page.record = record;
    page.nodes = new Map(record.node_runs_summary.nodes.map((node) => [node.node_id, node]));
    renderHeader(record);
    renderEscalation(record);
    renderBudgetStop(record);
    renderGatesWaiting();
    paintGraph(record);
    renderTimeline();
    renderPanel(false);
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
    // A failed score with no value was not measured: a gate is not passed on it.
    const failed = (gate.failed || []).filter((item) => item && (typeof item.value === "number" || item.value === null)
      && typeof item.minimum === "number");
    if (failed.length || gate.run_failed === true) { // a run that failed never meets its gate
      const parts = failed.map((item) => item.value === null
        ? `${SCORE_LABELS[item.score] || item.score} not measured (minimum ${minimumText(item.minimum)})`
        : `${SCORE_LABELS[item.score] || item.score} ${belowText(item.value, item.minimum)} < ${minimumText(item.minimum)}`);
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

  // One round: the run's summary and, while it goes on (or on the first round), the
  // timeline's window, read together; then the open panel and the table, when the summary
  // says they changed.
  async function poll() {
    const began = performance.now();
    const connection = document.getElementById("run-connection");
    try {
      const following = !page.record || ACTIVE.has(page.record.status);
      const [record, answer] = await Promise.all([api.get(apiPath), following ? fetchTimeline() : null]);
      if (answer) timeline.answer = answer;
      const ended = page.record && ACTIVE.has(page.record.status) && !ACTIVE.has(record.status);
      update(record);
      // The round that sees the run end reads its timeline once more, as it ended.
      await Promise.all([refreshPanel(), refreshTable(record), ended ? loadTimeline() : null]);
      page.failures = 0;
      connection.hidden = true;
      if (ACTIVE.has(record.status)) {
        evaluationState.expected = true;
        // A large run takes longer to read: never ask more often than twice what a round costs.
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
  table.element.addEventListener("click", (event) => {
    const link = event.target.closest("a[data-node]");
    if (!link) return;
    event.preventDefault();
    select(link.dataset.node, Number(link.dataset.run), true);
  });

  initGraph();
  initTimeline();
  const params = new URLSearchParams(window.location.search);
  if (params.get("node")) select(params.get("node"), Number(params.get("run")) || null, false);
  poll();
})();
