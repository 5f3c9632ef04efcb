// Two runs of one workflow compared. The server renders both runs' summaries and one page
// of the table of paired node runs; this script reads the same comparison from the
// json_script block and draws the workflow twice, each node coloured by how it compares
// (same, differs, only in this run, unverified, not run: every pair counts), and a node's
// panel: its pairs of runs, the fields side by side, both budget bars one above the other,
// the context decisions side by side, the tool calls matched by tool and arguments, and
// the output's differences. Only the page's pairs come compared in full; a node whose pair
// to show is on another page has it fetched from the API that programs use. Everything from a run is shown as text (switchyard.el).
(function () {
  "use strict";

  const { el, jsonData, fmt, budget, api } = window.switchyard;
  const data = jsonData("compare-data");
  if (!data) return;
  const SIDES = ["a", "b"];
  const nodes = new Map(data.nodes.map((node) => [node.node_id, node]));
  const verdicts = new Map(data.nodes.map((node) => [node.node_id, node.verdict]));
  // The pairs compared in full so far, by their place among all pairs: the page's, then any fetched.
  const pairs = new Map(data.pairs.map((pair) => [pair.index, pair]));
  const page = { graphs: {}, node: null, pair: null };

  // Fill, border, ink of each look; the legend's dots use the same colours (execution.css).
  const LOOKS = {
    same: ["#e3f1e7", "#2c8a4b", "#1d2430"],
    differs: ["#c98a12", "#8f610b", "#ffffff"],
    "only-here": ["#2f6fdb", "#1b4ea6", "#ffffff"],
    "not-run": ["#ffffff", "#9aa4b2", "#1d2430"],
    unverified: ["#f3e7c9", "#8f610b", "#1d2430"],
  };
  const DASHED = new Set(["not-run", "unverified"]);
  const VERDICT_WORDS = { same: "same", differs: "differs", only_a: "only in A", only_b: "only in B", unverified: "unverified" };

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
          style: { "background-color": fill, "border-color": border, color: ink, "border-style": DASHED.has(name) ? "dashed" : "solid" },
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
      budgetOf(pair[side]))));
  }

  // A re-run's copy (reused or edited) did not run: no context was assembled for it.
  function budgetOf(run) {
    if (!run) return el("p", { class: "muted small budget-empty" }, "Not run in this run.");
    if (run.kind === "reused" || run.kind === "edited") {
      return el("p", { class: "muted small budget-empty" }, `Did not run: ${run.kind === "edited" ? "an edited" : "a reused"} copy of the run it was re-run from.`);
    }
    return budget.bar(run.context_record);
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
      values.reason ? el("div", { class: "muted small" }, mark("reason", fmt.reason(values.reason))) : "",
    ];
  }

  function describeAction(values, mark) {
    return [
      el("div", { class: "tokens" }, mark("original_tokens", fmt.n(values.original_tokens)), " → ", mark("reduced_tokens", fmt.n(values.reduced_tokens)),
        values.stage ? mark("stage", el("span", { class: "muted" }, ` · ${values.stage}`)) : ""),
      values.reason ? el("div", { class: "muted small" }, mark("reason", fmt.reason(values.reason))) : "",
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

  // The tool calls of both runs, matched by tool and arguments: the same result (by its
  // digest), a different one, or a call only one run made. Shown, not counted in the verdict.
  const TOOL_VERDICTS = { same_result: "same result", different_result: "different result", only_a: "only in A", only_b: "only in B" };

  function toolCallSide(call) {
    if (!call) return el("td", { class: "absent" }, el("span", { class: "muted" }, "not called"));
    const waiting = call.status === "awaiting_approval";
    return el("td", {},
      el("div", {}, waiting ? el("span", { class: "badge waiting" }, "awaiting approval") : badge(call.status === "success" ? "success" : "failed"), " ",
        call.status === "success" || waiting ? "" : el("code", { class: "error-code" }, call.error_code || call.status),
        el("span", { class: "muted small" }, ` · turn ${call.turn}`, waiting ? "" : ` · ${fmt.ms(call.duration_ms || 0)}`)),
      call.error ? el("div", { class: "small error-text" }, call.error) : "",
      call.result_preview ? el("details", { class: "tool-result" }, el("summary", { class: "small" }, "result (preview)"),
        el("pre", { class: "output" }, call.result_preview)) : "");
  }

  function toolCalls(pair) {
    const calls = pair.tool_calls || [];
    if (!calls.length) return el("p", { class: "muted small" }, "Neither run called a tool.");
    return el("div", { class: "table-scroll" }, el("table", { class: "compact compare-tool-calls" },
      el("thead", {}, el("tr", {}, el("th", {}, "Tool and arguments"), el("th", {}, ""), el("th", {}, sideTag("a")), el("th", {}, sideTag("b")))),
      el("tbody", {}, calls.map((call) => el("tr", { class: call.verdict === "same_result" ? "" : "differs", "data-tool-verdict": call.verdict },
        el("td", {}, el("div", { class: "mono" }, call.name || "?"), el("pre", { class: "tool-arguments small" }, fmt.json(call.arguments))),
        el("td", {}, el("span", { class: `tool-verdict tool-verdict-${call.verdict}` }, TOOL_VERDICTS[call.verdict] || call.verdict)),
        toolCallSide(call.a), toolCallSide(call.b))))));
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

  // The node's pairs compared in full so far, and a link to the table of all of them when there are more.
  function pairChips(nodeId) {
    const mine = [...pairs.values()].filter((pair) => pair.node_id === nodeId).sort((x, y) => x.index - y.index);
    const total = nodes.has(nodeId) ? nodes.get(nodeId).pairs : mine.length;
    if (total < 2) return null;
    const table = new URL(window.location.href);
    table.search = new URLSearchParams({ a: data.a.execution_id, b: data.b.execution_id, node: nodeId }).toString();
    table.hash = "node-runs";
    return el("div", { class: "trail", "aria-label": "This node's runs" }, mine.map((pair) => el("a", {
      class: `trail-chip verdict-${pair.verdict}${pair.index === page.pair ? " chosen" : ""}`, href: "#compare-panel", "data-pair": pair.index,
      onclick: (event) => { event.preventDefault(); selectPair(pair.index); },
    }, `round ${pair.round} · attempt ${pair.attempt}: ${VERDICT_WORDS[pair.verdict]}${pair.not_repeated ? " (not repeated)" : ""}`)),
    total > mine.length ? el("a", { class: "small node-pairs-link", href: table.toString() }, `All ${fmt.n(total)} pairs of this node`) : "");
  }

  // A pair counted unverified was compared in full to be shown: say what that found.
  function unverifiedNote(pair) {
    if (pair.verdict !== "unverified") return "";
    return el("p", { class: "small unverified-note" }, "Counted unverified: the fields are the same and the output or context decisions are stored differently. ",
      el("strong", {}, pair.differs ? "Compared here, they differ." : "Compared here, they are the same."));
  }

  function renderPanel() {
    const panel = document.getElementById("compare-panel");
    const pair = pairs.get(page.pair);
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
    panel.replaceChildren(head, pairChips(nodeId) || "", unverifiedNote(pair),
      section("The two runs", factsTable(pair)),
      section("Context budget", budgets(pair)),
      section("Inputs: how each was passed and why", decisions(pair.inputs.map((entry) => ({ ...entry, keys: [entry.name] })),
        ["Input"], describeInput, "No input was resolved in either run.")),
      section("Actions", decisions(pair.actions.map((entry) => ({ ...entry, keys: [entry.data, entry.action] })),
        ["Input", "Action"], describeAction, "No action in either run: every input was passed as resolved.")),
      section("Resolution failures", decisions(pair.failures.map((entry) => ({ ...entry, keys: [entry.input] })),
        ["Input"], describeFailure, "No resolution failure in either run.")),
      (pair.tool_calls || []).length ? section("Tool calls: matched by tool and arguments", toolCalls(pair)) : "",
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
    // The open panel is remembered as `panel` (`node` filters the table, on the server).
    const url = new URL(window.location.href);
    if (nodeId) url.searchParams.set("panel", nodeId);
    else url.searchParams.delete("panel");
    window.history.replaceState(null, "", url.toString());
    if (nodeId) {
      renderPanel();
    } else {
      document.getElementById("compare-panel").replaceChildren(el("h2", {}, "Node"), el("p", { class: "muted" }, "Click a node to compare its runs here."));
    }
  }

  // A node opens on the pair the comparison names (`open`): its first that differs (an
  // attempt a copy did not repeat aside), else its first unverified, else its last, the
  // outcome. A pair not on this page is fetched, compared in full, from the API.
  async function selectNode(nodeId) {
    const node = nodes.get(nodeId);
    if (node && !pairs.has(node.open)) {
      const panel = document.getElementById("compare-panel");
      panel.replaceChildren(el("h2", {}, "Node ", el("span", { class: "mono" }, nodeId)), el("p", { class: "muted" }, "Comparing its runs…"));
      const query = new URLSearchParams({ a: data.a.execution_id, b: data.b.execution_id, offset: node.open, limit: 1 });
      try {
        const answer = await api.get(`/executions/compare?${query}`);
        for (const pair of answer.pairs) pairs.set(pair.index, pair);
      } catch (error) {
        panel.append(el("p", { class: "error" }, `The comparison could not be read: ${error.message}`));
        return;
      }
    }
    select(nodeId, node ? node.open : null);
  }

  function selectPair(index) {
    select(pairs.get(index).node_id, index);
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
  // The panel asked for, else the node the table is filtered to.
  const params = new URL(window.location.href).searchParams;
  const asked = params.get("panel") || params.get("node");
  if (asked) selectNode(asked);
})();
