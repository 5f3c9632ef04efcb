// Draw a small directed graph (a lineage tree, a blueprint's contracts) with cytoscape +
// dagre. Each element `[data-graph="<json id>"]` reads {nodes: [{id, label, status,
// current, href}], edges: [{source, target, label}]} from that json_script block;
// `data-rank-dir` is TB (a tree, top-down) or LR. Clicking a node with an href opens it.
(function () {
  "use strict";

  const STATUS_COLOURS = { active: "#2c8a4b", inactive: "#9aa4b2", deprecated: "#7d8590" };

  function style() {
    return [
      { selector: "node", style: {
        shape: "round-rectangle", width: "data(width)", height: "data(height)",
        "background-color": "#ffffff", "border-width": 1.5, "border-color": "#b5bfcc",
        label: "data(label)", "text-wrap": "wrap", "text-valign": "center", "text-halign": "center",
        "font-size": 12, color: "#1d2430", "font-family": "system-ui, sans-serif",
      } },
      { selector: "node[status]", style: { "border-color": (node) => STATUS_COLOURS[node.data("status")] || "#b5bfcc" } },
      { selector: "node[?current]", style: {
        "background-color": "#2f6fdb", color: "#ffffff", "border-color": "#1d4fa8", "border-width": 3, "font-weight": 700,
      } },
      { selector: "node:active", style: { "overlay-opacity": 0.08 } },
      { selector: "edge", style: {
        width: 1.6, "line-color": "#9aa4b2", "target-arrow-color": "#9aa4b2", "target-arrow-shape": "triangle",
        "curve-style": "bezier", label: "data(label)", "font-size": 10, color: "#5d6878",
        "text-background-color": "#ffffff", "text-background-opacity": 1, "text-background-padding": "2px",
        "text-rotation": "autorotate",
      } },
    ];
  }

  // A box around the label (cytoscape's own "label" sizing is deprecated): 12 px text in
  // system-ui is about 7 px a character, with 10 px of padding each side.
  function boxFor(label) {
    const lines = String(label).split("\n");
    const longest = Math.max(...lines.map((line) => line.length));
    return { width: Math.max(60, longest * 7 + 20), height: lines.length * 15 + 20 };
  }

  function draw(container) {
    const data = window.switchyard.jsonData(container.dataset.graph);
    if (!data || !data.nodes.length) {
      container.replaceChildren(window.switchyard.el("p", { class: "muted graph-empty" }, "Nothing to draw."));
      return null;
    }
    if (typeof window.cytoscape !== "function") {
      container.replaceChildren(window.switchyard.el("p", { class: "error" }, "The graph library did not load; the list below shows the same."));
      return null;
    }
    if (window.cytoscapeDagre && !draw.registered) {
      window.cytoscape.use(window.cytoscapeDagre);
      draw.registered = true;
    }
    const elements = [
      ...data.nodes.map((node) => {
        const label = node.label || node.id;
        return { data: { ...node, label, ...boxFor(label) } };
      }),
      ...data.edges.map((edge, index) => ({ data: { id: `e${index}`, label: "", ...edge } })),
    ];
    const rankDir = container.dataset.rankDir || "TB";
    const cy = window.cytoscape({
      container, elements, style: style(), boxSelectionEnabled: false, autoungrabify: true,
      // Left to right, the edges carry labels (a contract's data type): leave room for them.
      layout: { name: "dagre", rankDir, nodeSep: 40, rankSep: rankDir === "LR" ? 170 : 60, padding: 20 },
      maxZoom: 1.6, minZoom: 0.2,
    });
    cy.on("tap", "node", (event) => {
      const href = event.target.data("href");
      if (href && !event.target.data("current")) window.location.assign(href);
    });
    // A node that opens a page shows the hand (cytoscape styles cannot set the cursor).
    cy.on("mouseover", "node[href]", () => { container.style.cursor = "pointer"; });
    cy.on("mouseout", "node", () => { container.style.cursor = ""; });
    cy.ready(() => {
      cy.fit(undefined, 24);
      if (cy.zoom() > 1.2) { cy.zoom(1.2); cy.center(); }
    });
    container.cy = cy;  // for tests and the console
    container.dataset.drawn = "true";
    return cy;
  }

  document.querySelectorAll("[data-graph]").forEach(draw);
})();
