// What the last runs cost, as a bar chart: on an agent's page what its node runs cost in
// each of its latest runs (GET /api/agents/{id}/costs), on a workflow's page what its
// latest runs cost (GET /api/workflows/{id}/costs); oldest first, one bar per run, each a
// link to the run, with the mean drawn across, and the total and the mean written under it.
// Drawn as SVG through the DOM (the Content-Security-Policy refuses inline code and styles,
// not elements made by a script); costs are added exactly (cost.js).
(function () {
  "use strict";

  const { api, el, cost: money } = window.switchyard;
  const SVG = "http://www.w3.org/2000/svg";
  const WIDTH = 720;
  const HEIGHT = 190;
  const MARGIN = { top: 14, right: 12, bottom: 24, left: 78 };

  function svg(tag, attributes, ...children) {
    const node = document.createElementNS(SVG, tag);
    for (const [name, value] of Object.entries(attributes || {})) {
      if (value !== null && value !== undefined) node.setAttribute(name, String(value));
    }
    for (const child of children.flat()) {
      if (child !== null && child !== undefined) node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  const number = (value) => Number(value).toLocaleString("en-US");

  /** The mean, to six significant digits ("≈ $0.000666667" when rounded there). */
  function meanText(amount) {
    const digits = String(amount).length;
    if (digits <= 6) return money.text(money.decimal(amount));
    const step = 10n ** BigInt(digits - 6);
    const rounded = ((amount + step / 2n) / step) * step;
    return `${rounded === amount ? "" : "≈ "}${money.text(money.decimal(rounded))}`;
  }

  /** Each run's cost in units, the total, the mean (to the unit, 10⁻¹² USD) and the largest. */
  function figures(runs) {
    const amounts = runs.map((run) => money.units(run.cost) ?? 0n);
    const total = amounts.reduce((sum, amount) => sum + amount, 0n);
    const count = BigInt(runs.length || 1);
    const mean = (total + count / 2n) / count;
    const largest = amounts.reduce((most, amount) => (amount > most ? amount : most), 0n);
    return { amounts, total, mean, largest };
  }

  function runTitle(run, kind) {
    const when = run.started_at ? run.started_at.replace("T", " ").slice(0, 19) : "not started";
    const tokens = run.tokens_in !== undefined && run.tokens_in !== null
      ? ` · ${number(run.tokens_in)} → ${number(run.tokens_out)} tokens` : "";
    const what = kind === "agent" ? "its node runs cost" : "cost";
    return `${run.execution_id} · ${run.status} · ${when} · ${what} ${run.cost_complete ? "" : "at least "}` +
      `${money.text(run.cost)}${run.cost_complete ? "" : " (not every call priced)"}${tokens}`;
  }

  function draw(box, runs, kind) {
    const { amounts, total, mean, largest } = figures(runs);
    const plotWidth = WIDTH - MARGIN.left - MARGIN.right;
    const plotHeight = HEIGHT - MARGIN.top - MARGIN.bottom;
    // Heights as a share of the largest cost: Number() only after the exact division.
    const share = (amount) => (largest > 0n ? Number((amount * 1000000n) / largest) / 1000000 : 0);
    const y = (amount) => MARGIN.top + plotHeight * (1 - share(amount));
    const slot = plotWidth / runs.length;
    const barWidth = Math.max(2, Math.min(48, slot * 0.7));
    const bars = runs.map((run, index) => {
      const top = y(amounts[index]);
      const x = MARGIN.left + slot * index + (slot - barWidth) / 2;
      const height = Math.max(1, MARGIN.top + plotHeight - top);
      return svg("a", { href: `/executions/${encodeURIComponent(run.execution_id)}/`, class: "cost-bar-link" },
        svg("title", {}, runTitle(run, kind)),
        svg("rect", { class: `cost-bar ${run.status}${run.cost_complete ? "" : " incomplete"}`, x: x.toFixed(2),
          y: (MARGIN.top + plotHeight - height).toFixed(2), width: barWidth.toFixed(2), height: height.toFixed(2),
          "data-execution": run.execution_id, "data-cost": run.cost }));
    });
    const meanY = y(mean);
    const baseline = MARGIN.top + plotHeight;
    const chart = svg("svg", { viewBox: `0 0 ${WIDTH} ${HEIGHT}`, class: "cost-chart-svg", role: "img",
      "aria-label": `What the last ${runs.length} runs cost, oldest first` },
    svg("defs", {}, svg("pattern", { id: "cost-hatch", width: 6, height: 6, patternUnits: "userSpaceOnUse", patternTransform: "rotate(45)" },
      svg("rect", { width: 6, height: 6, fill: "#f3e3c2" }), svg("line", { x1: 0, y1: 0, x2: 0, y2: 6, stroke: "#c98a12", "stroke-width": 3 }))),
    svg("line", { class: "cost-axis", x1: MARGIN.left, x2: WIDTH - MARGIN.right, y1: baseline, y2: baseline }),
    svg("line", { class: "cost-axis", x1: MARGIN.left, x2: MARGIN.left, y1: MARGIN.top, y2: baseline }),
    svg("text", { class: "cost-tick", x: MARGIN.left - 6, y: MARGIN.top + 4, "text-anchor": "end" }, money.text(money.decimal(largest))),
    svg("text", { class: "cost-tick", x: MARGIN.left - 6, y: baseline + 4, "text-anchor": "end" }, "$0"),
    svg("text", { class: "cost-tick", x: MARGIN.left, y: HEIGHT - 6 }, "oldest"),
    svg("text", { class: "cost-tick", x: WIDTH - MARGIN.right, y: HEIGHT - 6, "text-anchor": "end" }, "latest"),
    bars,
    svg("line", { class: "cost-mean", x1: MARGIN.left, x2: WIDTH - MARGIN.right, y1: meanY.toFixed(2), y2: meanY.toFixed(2) },
      svg("title", {}, `mean ${meanText(mean)} per run`)),
    svg("text", { class: "cost-mean-label", x: WIDTH - MARGIN.right - 4, y: Math.max(MARGIN.top + 10, meanY - 4).toFixed(2),
      "text-anchor": "end" }, `mean ${meanText(mean)}`));
    const incomplete = runs.filter((run) => !run.cost_complete).length;
    const tokens = kind === "agent"
      ? runs.reduce((sum, run) => [sum[0] + (run.tokens_in || 0), sum[1] + (run.tokens_out || 0)], [0, 0]) : null;
    box.replaceChildren(chart, el("p", { class: "cost-summary small" },
      "Total ", el("strong", { "data-figure": "total" }, money.text(money.decimal(total))),
      ` over ${runs.length} run${runs.length === 1 ? "" : "s"} · mean `,
      el("strong", { "data-figure": "mean" }, meanText(mean)), " per run",
      tokens ? ` · ${number(tokens[0])} → ${number(tokens[1])} tokens` : "",
      incomplete ? el("span", { class: "cost-note", "data-figure": "incomplete" },
        ` · ${incomplete} run${incomplete === 1 ? "" : "s"} not every call priced: ${incomplete === 1 ? "its bar shows" : "their bars show"} at least what ${incomplete === 1 ? "it" : "they"} cost (hatched)`) : ""));
  }

  async function load(box) {
    const kind = box.dataset.costChart; // agent | workflow
    const path = `/${kind}s/${encodeURIComponent(box.dataset.id)}/costs?limit=${encodeURIComponent(box.dataset.limit || "30")}`;
    try {
      const runs = await api.get(path);
      if (!runs.length) {
        box.replaceChildren(el("p", { class: "muted cost-empty" }, kind === "agent" ? "It has not run in any execution yet." : "Never run yet."));
        return;
      }
      draw(box, runs, kind);
    } catch (error) {
      box.replaceChildren(el("p", { class: "error" }, `Could not read what the runs cost: ${error.message}`));
    }
  }

  document.querySelectorAll("[data-cost-chart]").forEach(load);
})();
