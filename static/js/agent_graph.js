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
        shape: "round-rectangle", width: "label", height: "label", padding: "10px",
        "background-color": "#ffffff", "border-width": 1.5, "border-color": "#b5bfcc",
        label: "data(label)", "text-wrap": "wrap", "text-valign": "center", "text-halign": "center",
        "font-size": 12, color: "#1d2430", "font-family": "system-ui, sans-serif",
      } },
      { selector: "node[status]", style: { "border-color": (node) => STATUS_COLOURS[node.data("status")] || "#b5bfcc" } },
      { selector: "node[?current]", style: {
        "background-color": "#2f6fdb", color: "#ffffff", "border-color": "#1d4fa8", "border-width": 3, "font-weight": 700,
      } },
      { selector: "node[href]", style: { cursor: "pointer" } },
      { selector: "node:active", style: { "overlay-opacity": 0.08 } },
      { selector: "edge", style: {
        width: 1.6, "line-color": "#9aa4b2", "target-arrow-color": "#9aa4b2", "target-arrow-shape": "triangle",
        "curve-style": "bezier", label: "data(label)", "font-size": 10, color: "#5d6878",
        "text-background-color": "#ffffff", "text-background-opacity": 1, "text-background-padding": "2px",
        "text-rotation": "autorotate",
      } },
    ];
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
      ...data.nodes.map((node) => ({ data: { ...node, label: node.label || node.id } })),
      ...data.edges.map((edge, index) => ({ data: { id: `e${index}`, label: "", ...edge } })),
    ];
    const rankDir = container.dataset.rankDir || "TB";
    const cy = window.cytoscape({
      container, elements, style: style(), wheelSensitivity: 0.2, boxSelectionEnabled: false, autoungrabify: true,
      // Left to right, the edges carry labels (a contract's data type): leave room for them.
      layout: { name: "dagre", rankDir, nodeSep: 40, rankSep: rankDir === "LR" ? 170 : 60, padding: 20 },
      maxZoom: 1.6, minZoom: 0.2,
    });
    cy.on("tap", "node", (event) => {
      const href = event.target.data("href");
      if (href && !event.target.data("current")) window.location.assign(href);
    });
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
