// Two runs of one workflow compared. The server renders both runs' summaries and the table
// of paired node runs; this script reads the same comparison from the json_script block
// and draws the workflow twice, each node coloured by how it compares (same, differs, only
// in this run, not run), and a node's panel: its pairs of runs, the fields side by side,
// both budget bars one above the other, the context decisions side by side and the
// output's differences. Everything from a run is shown as text (switchyard.el).
(function () {
  "use strict";

  const { el, jsonData, fmt, budget } = window.switchyard;
  const data = jsonData("compare-data");
  if (!data) return;
  const SIDES = ["a", "b"];
  const verdicts = new Map(data.nodes.map((node) => [node.node_id, node.verdict]));
  const page = { graphs: {}, node: null, pair: null };

  // Fill, border, ink of each look; the legend's dots use the same colours (execution.css).
  const LOOKS = {
    same: ["#e3f1e7", "#2c8a4b", "#1d2430"],
    differs: ["#c98a12", "#8f610b", "#ffffff"],
    "only-here": ["#2f6fdb", "#1b4ea6", "#ffffff"],
    "not-run": ["#ffffff", "#9aa4b2", "#1d2430"],
  };
  const VERDICT_WORDS = { same: "same", differs: "differs", only_a: "only in A", only_b: "only in B" };

  // How a node is drawn on one side's graph.
  function look(nodeId, side) {
    const verdict = verdicts.get(nodeId);
    if (!verdict) return "not-run";
    if (verdict === "only_a") return side === "a" ? "only-here" : "not-run";
    if (verdict === "only_b") return side === "b" ? "only-here" : "not-run";
    return verdict;
  }

  function sideTag(side) {
    return el("span", { class: `side-tag side-${side}` }, side.toUpperCase());
  }

  function badge(status) {
    return el("span", { class: `badge ${status}` }, status);
  }

  // -- the graphs ---------------------------------------------------------------------------

  function elements(side) {
    // A node that ran but is not in the version this run ran is drawn too, unconnected.
    const graph = data.graphs[side]; // the version of the workflow this run ran
    const drawn = new Set(graph.nodes.map((node) => node.id));
    const nodes = [...graph.nodes, ...data.nodes.filter((node) => !drawn.has(node.node_id))
      .map((node) => ({ id: node.node_id, agent: "not in this version" }))];
    return [
      ...nodes.map((node) => ({
        group: "nodes",
        data: { id: node.id, label: `${node.id}\n${node.agent}`, look: look(node.id, side),
          width: Math.max(90, Math.max(node.id.length, String(node.agent).length) * 7.4 + 26) },
        position: node.layout ? { x: node.layout.x, y: node.layout.y } : undefined,
      })),
      ...graph.edges.map((edge, index) => ({
        group: "edges", data: { id: `e${index}`, source: edge.source, target: edge.target, kind: edge.kind },
      })),
    ];
  }

  function drawGraph(side) {
    const container = document.getElementById(`graph-${side}`);
    if (!window.cytoscape) {
      container.append(el("p", { class: "muted small" }, "The graph library did not load."));
      return;
    }
    if (window.cytoscapeDagre && !window.cytoscape.__switchyardDagre) {
      window.cytoscape.use(window.cytoscapeDagre);
      window.cytoscape.__switchyardDagre = true;
    }
    const { nodes } = data.graphs[side];
    const preset = nodes.length && nodes.every((node) => node.layout && typeof node.layout.x === "number");
    const cy = window.cytoscape({
      container,
      elements: elements(side),
      style: [
        { selector: "node", style: {
          shape: "round-rectangle", label: "data(label)", "text-wrap": "wrap", "text-valign": "center", "text-halign": "center",
          "font-size": 11, "font-family": "ui-monospace, Menlo, monospace", width: "data(width)", height: 42, "border-width": 2,
        } },
        ...Object.entries(LOOKS).map(([name, [fill, border, ink]]) => ({
          selector: `node[look = "${name}"]`,
          style: { "background-color": fill, "border-color": border, color: ink, "border-style": name === "not-run" ? "dashed" : "solid" },
        })),
        { selector: "node.selected", style: { "overlay-color": "#2f6fdb", "overlay-opacity": 0.16, "overlay-padding": 7 } },
        { selector: "edge", style: { width: 1.6, "line-color": "#aab3c0", "target-arrow-color": "#aab3c0",
          "target-arrow-shape": "triangle", "curve-style": "bezier" } },
        { selector: 'edge[kind = "data"]', style: { "line-style": "dashed", width: 1, "line-color": "#c9d0da", "target-arrow-color": "#c9d0da" } },
      ],
      layout: preset ? { name: "preset", padding: 24 }
        : { name: window.cytoscapeDagre ? "dagre" : "breadthfirst", rankDir: "LR", nodeSep: 40, rankSep: 80, padding: 24 },
      maxZoom: 1.4, userZoomingEnabled: false, userPanningEnabled: false, boxSelectionEnabled: false, autoungrabify: true,
    });
    cy.on("tap", "node", (event) => selectNode(event.target.id()));
    cy.on("mouseover", "node", () => { container.style.cursor = "pointer"; });
    cy.on("mouseout", "node", () => { container.style.cursor = ""; });
    window.addEventListener("resize", () => cy.fit(undefined, 24));
    page.graphs[side] = cy;
  }

  // -- the panel ----------------------------------------------------------------------------

  const FIELDS = [["status", "Status"], ["error_code", "Error"], ["kind", "Kind"], ["agent", "Agent"],
    ["agent_version", "Agent version"], ["tokens_in", "Tokens in"], ["tokens_out", "Tokens out"], ["duration_ms", "Duration"]];

  function value(field, run) {
    if (!run) return el("span", { class: "muted" }, "not run");
    const v = run[field];
    if (v === null || v === undefined || v === "") return el("span", { class: "muted" }, "—");
    if (field === "status") return badge(v);
    if (field === "duration_ms") return fmt.ms(v);
    if (field.startsWith("tokens")) return fmt.n(v);
    return String(v);
  }

  function section(title, ...content) {
    return el("section", { class: "attempt-section" }, el("h4", {}, title), ...content);
  }

  function factsTable(pair) {
    return el("table", { class: "compact compare-facts" },
      el("thead", {}, el("tr", {}, el("th", {}, ""), el("th", {}, sideTag("a")), el("th", {}, sideTag("b")))),
      el("tbody", {}, FIELDS.map(([field, label]) => el("tr", { class: pair.changed.includes(field) ? "differs" : "", "data-field": field },
        el("th", {}, label), el("td", {}, value(field, pair.a)), el("td", {}, value(field, pair.b))))));
  }

  function budgets(pair) {
    return el("div", { class: "budget-pair" }, SIDES.map((side) => el("div", { class: "budget-side", "data-side": side },
      el("p", { class: "small budget-side-title" }, sideTag(side), " ", el("span", { class: "mono" }, data[side].execution_id)),
      pair[side] ? budget.bar(pair[side].context_record) : el("p", { class: "muted small budget-empty" }, "Not run in this run."))));
  }

  // One side of a decision: its words, each field that differs from the other side marked.
  function decisionCell(entry, side, describe) {
    const values = entry[side];
    if (!values) return el("td", { class: "absent" }, el("span", { class: "muted" }, "none"));
    const mark = (field, ...content) => el("span", { class: entry.changed.includes(field) ? "changed" : "", "data-field": field }, ...content);
    return el("td", {}, describe(values, mark));
  }

  function decisions(entries, headings, describe, empty) {
    if (!entries.length) return el("p", { class: "muted small" }, empty);
    return el("div", { class: "table-scroll" }, el("table", { class: "compact compare-decisions" },
      el("thead", {}, el("tr", {}, headings.map((heading) => el("th", {}, heading)), el("th", {}, sideTag("a")), el("th", {}, sideTag("b")))),
      el("tbody", {}, entries.map((entry) => el("tr", { class: entry.differs ? "differs" : "" },
        ...entry.keys.map((key) => el("td", { class: "mono" }, key ?? "")),
        decisionCell(entry, "a", describe), decisionCell(entry, "b", describe))))));
  }

  function describeInput(values, mark) {
    return [
      el("div", {}, mark("transfer_mode", el("strong", {}, values.transfer_mode || "?")),
        values.passed === false ? mark("passed", el("span", { class: "muted" }, " · not passed")) : "",
        values.batches ? mark("batches", ` · ${values.batches} batches`) : ""),
      el("div", { class: "tokens" }, mark("resolved_tokens", fmt.n(values.resolved_tokens)), " → ", mark("passed_tokens", fmt.n(values.passed_tokens))),
      values.reason ? el("div", { class: "muted small" }, mark("reason", values.reason)) : "",
    ];
  }

  function describeAction(values, mark) {
    return [
      el("div", { class: "tokens" }, mark("original_tokens", fmt.n(values.original_tokens)), " → ", mark("reduced_tokens", fmt.n(values.reduced_tokens)),
        values.stage ? mark("stage", el("span", { class: "muted" }, ` · ${values.stage}`)) : ""),
      values.reason ? el("div", { class: "muted small" }, mark("reason", values.reason)) : "",
    ];
  }

  function describeFailure(values, mark) {
    return [
      el("div", {}, mark("error_code", el("code", { class: "error-code" }, values.error_code || "")), " → ",
        mark("fallback_strategy", el("strong", {}, values.fallback_strategy || "—"))),
      values.fallback_value !== null && values.fallback_value !== undefined
        ? el("div", { class: "mono small" }, mark("fallback_value", `value: ${JSON.stringify(values.fallback_value)}`)) : "",
      values.error_message ? el("div", { class: "muted small" }, values.error_message) : "",
    ];
  }

  function outputDiff(pair) {
    if (!pair.a || !pair.b) {
      const side = pair.a ? "a" : "b";
      return el("div", {}, el("p", { class: "muted small" }, `Only run ${side.toUpperCase()} has this node run; its output:`),
        el("pre", { class: "output" }, fmt.json(pair[side].output)));
    }
    if (!pair.output_diff.length) return el("p", { class: "muted small output-same" }, "The outputs are the same.");
    const shown = (v) => (v === null || v === undefined ? "" : typeof v === "string" ? v : JSON.stringify(v));
    return el("div", {},
      el("div", { class: "table-scroll" }, el("table", { class: "compact output-diff" },
        el("thead", {}, el("tr", {}, el("th", {}, "Where"), el("th", {}, "Change"), el("th", {}, sideTag("a")), el("th", {}, sideTag("b")))),
        el("tbody", {}, pair.output_diff.map((d) => el("tr", { class: `op-${d.op}`, "data-path": d.path },
          el("td", { class: "mono" }, d.path || "(the whole output)"), el("td", {}, d.op),
          el("td", { class: "mono small" }, d.op === "added" ? "" : shown(d.a)),
          el("td", { class: "mono small" }, d.op === "removed" ? "" : shown(d.b))))))),
      pair.output_diff_truncated ? el("p", { class: "muted small" }, `Only the first ${pair.output_diff.length} differences are listed.`) : "",
      el("details", { class: "prompt" }, el("summary", {}, "Both outputs in full"),
        el("div", { class: "compare-outputs" }, SIDES.map((side) => el("div", {}, sideTag(side), el("pre", { class: "output" }, fmt.json(pair[side].output)))))));
  }

  function pairChips(nodeId) {
    const pairs = data.pairs.map((pair, index) => [pair, index]).filter(([pair]) => pair.node_id === nodeId);
    if (pairs.length < 2) return null;
    return el("div", { class: "trail", "aria-label": "This node's runs" }, pairs.map(([pair, index]) => el("a", {
      class: `trail-chip verdict-${pair.verdict}${index === page.pair ? " chosen" : ""}`, href: "#compare-panel", "data-pair": index,
      onclick: (event) => { event.preventDefault(); selectPair(index); },
    }, `round ${pair.round} · attempt ${pair.attempt}: ${VERDICT_WORDS[pair.verdict]}${pair.not_repeated ? " (not repeated)" : ""}`)));
  }

  function renderPanel() {
    const panel = document.getElementById("compare-panel");
    const pair = data.pairs[page.pair];
    const nodeId = page.node;
    const head = el("div", { class: "row panel-head" },
      el("h2", {}, "Node ", el("span", { class: "mono" }, nodeId)),
      el("span", { class: `verdict-tag verdict-${verdicts.get(nodeId) || "not_run"}` }, VERDICT_WORDS[verdicts.get(nodeId)] || "run by neither"),
      pair ? el("span", { class: "muted" }, `round ${pair.round} · attempt ${pair.attempt}`) : "",
      el("span", { class: "spacer" }),
      el("button", { type: "button", class: "small-button", onclick: () => select(null, null) }, "Close"));
    if (!pair) {
      panel.replaceChildren(head, el("p", { class: "muted" }, "Neither run ran this node."));
      return;
    }
    panel.replaceChildren(head, pairChips(nodeId) || "",
      section("The two runs", factsTable(pair)),
      section("Context budget", budgets(pair)),
      section("Inputs: how each was passed and why", decisions(pair.inputs.map((entry) => ({ ...entry, keys: [entry.name] })),
        ["Input"], describeInput, "No input was resolved in either run.")),
      section("Actions", decisions(pair.actions.map((entry) => ({ ...entry, keys: [entry.data, entry.action] })),
        ["Input", "Action"], describeAction, "No action in either run: every input was passed as resolved.")),
      section("Resolution failures", decisions(pair.failures.map((entry) => ({ ...entry, keys: [entry.input] })),
        ["Input"], describeFailure, "No resolution failure in either run.")),
      section("Output", outputDiff(pair)));
  }

  // -- selection ----------------------------------------------------------------------------

  function select(nodeId, pairIndex) {
    page.node = nodeId;
    page.pair = pairIndex;
    for (const cy of Object.values(page.graphs)) cy.nodes().forEach((node) => node.toggleClass("selected", node.id() === nodeId));
    for (const row of document.querySelectorAll(".compare-table tr[data-pair]")) {
      row.classList.toggle("chosen", Number(row.dataset.pair) === pairIndex);
    }
    const url = new URL(window.location.href);
    if (nodeId) url.searchParams.set("node", nodeId);
    else url.searchParams.delete("node");
    window.history.replaceState(null, "", url.toString());
    if (nodeId) {
      renderPanel();
    } else {
      document.getElementById("compare-panel").replaceChildren(el("h2", {}, "Node"), el("p", { class: "muted" }, "Click a node to compare its runs here."));
    }
  }

  // A node opens on its first pair that differs (an attempt a copy did not repeat aside),
  // else its last: the outcome.
  function selectNode(nodeId) {
    const indices = data.pairs.map((pair, index) => [pair, index]).filter(([pair]) => pair.node_id === nodeId);
    const chosen = indices.find(([pair]) => pair.differs && !pair.not_repeated) || indices[indices.length - 1];
    select(nodeId, chosen ? chosen[1] : null);
  }

  function selectPair(index) {
    select(data.pairs[index].node_id, index);
  }

  document.querySelector(".compare-table").addEventListener("click", (event) => {
    const row = event.target.closest("tr[data-pair]");
    if (!row) return;
    event.preventDefault();
    selectPair(Number(row.dataset.pair));
    document.getElementById("compare-panel").scrollIntoView({ behavior: "smooth", block: "start" });
  });

  SIDES.forEach(drawGraph);
  window.switchyard.compareGraphs = page.graphs; // for the console, and for tests that click a node
  const asked = new URL(window.location.href).searchParams.get("node");
  if (asked) selectNode(asked);
})();
