// A Tree-of-Thoughts search (tot-protocol): the ThoughtTree drawn top-down, and each
// node's details with the messages that concern it. Everything comes from the page's
// json_script block ({tree, messages}); nothing is fetched and nothing is set as HTML.
//
// Large trees stay readable: with more than COLLAPSE_OVER nodes, or more than WIDEST side by
// side, the pruned branches start folded (siblings into one "n pruned" node, a pruned
// node's subtree into a count); the "Collapse pruned branches" box or a click on a folded
// node opens them.
(function () {
  "use strict";

  const { el, jsonData } = window.switchyard;
  const data = jsonData("thought-tree-data") || {};
  const tree = data.tree || {};
  const nodes = tree.nodes || {};
  const messages = data.messages || [];
  const COLLAPSE_OVER = 60; // nodes
  const WIDEST = 8; // nodes side by side drawn readably
  const FOLD_FROM = 2; // pruned siblings folded into one node from this many
  const BEST = "#e07b00";
  const MAX_FIT = 1.15; // zoom: a small tree is not blown up past this
  const MIN_START = 0.55; // below this the first view is the best path at START
  const START = 0.85;
  const REPLIES = {
    decompose_task: "decomposition_result",
    initialize_search: "search_complete",
    generate_thoughts: "generated_thoughts",
    evaluate_thoughts: "evaluation_results",
    synthesize_solution: "final_solution",
  };

  const ids = Object.keys(nodes);
  const rootId = nodes[tree.root_id] ? tree.root_id : ids.find((id) => !nodes[id].parent_id || !nodes[nodes[id].parent_id]);
  const bestPath = (((tree.search_state || {}).best_path) || []).filter((id) => nodes[id]);
  const best = new Set(bestPath);
  const bestEdges = new Set(bestPath.slice(1).map((id, index) => `${bestPath[index]}>${id}`));

  // -- the tree's shape ---------------------------------------------------------------------

  const children = new Map(ids.map((id) => [id, []]));
  {
    const placed = new Set();
    const place = (parent, child) => {
      if (nodes[parent] && nodes[child] && child !== rootId && !placed.has(child)) {
        placed.add(child);
        children.get(parent).push(child);
      }
    };
    for (const id of ids) for (const child of nodes[id].children_ids || []) if ((nodes[child] || {}).parent_id === id) place(id, child);
    for (const id of ids) if (nodes[id].parent_id) place(nodes[id].parent_id, id);
  }
  const isPruned = (id) => nodes[id].status === "pruned" && !best.has(id);
  // Nodes drawn faded: pruned, or below a pruned node. Sizes: nodes in each subtree.
  const faded = new Set();
  const size = new Map();
  const roots = [rootId, ...ids.filter((id) => id !== rootId && !(nodes[nodes[id].parent_id] && children.get(nodes[id].parent_id).includes(id)))];
  for (const start of roots.filter(Boolean)) {
    const order = [];
    const stack = [[start, false]];
    while (stack.length) {
      const [id, under] = stack.pop();
      if (size.has(id)) continue; // a malformed tree may loop
      size.set(id, 1);
      order.push(id);
      const fade = under || isPruned(id);
      if (fade) faded.add(id);
      for (const child of children.get(id)) stack.push([child, fade]);
    }
    for (const id of order.reverse()) for (const child of children.get(id)) if (child !== id) size.set(id, size.get(id) + (size.get(child) || 0));
  }
  const below = (id) => (size.get(id) || 1) - 1;

  // -- messages: request/reply pairs, indexed by the nodes they concern ------------------------

  const concern = new Map(); // node id → {produced, scored, expansion, synthesis, search}: [{exchange, focus}]
  const concernedBy = new Map(); // message index → [node id]
  function note(id, kind, exchange, focus) {
    if (!nodes[id]) return;
    if (!concern.has(id)) concern.set(id, { produced: [], scored: [], expansion: [], synthesis: [], search: [] });
    const list = concern.get(id)[kind];
    if (!list.some((item) => item.exchange === exchange)) list.push({ exchange, focus: focus || null });
    for (const index of [exchange.requestIndex, exchange.replyIndex]) {
      if (index === null) continue;
      if (!concernedBy.has(index)) concernedBy.set(index, []);
      if (!concernedBy.get(index).includes(id)) concernedBy.get(index).push(id);
    }
  }
  const payloadOf = (message) => (message && message.payload && typeof message.payload === "object" ? message.payload : {});
  const nodeIdOf = (item) => (item && typeof item === "object" ? item.id || item.node_id : typeof item === "string" ? item : null);

  const exchanges = [];
  {
    const claimed = new Set();
    messages.forEach((message, index) => {
      if (claimed.has(index) || !REPLIES[message.type]) return;
      let replyIndex = null;
      const limit = message.type === "initialize_search" ? messages.length : Math.min(messages.length, index + 8);
      for (let j = index + 1; j < limit; j += 1) {
        const reply = messages[j];
        if (reply.from === message.from && reply.to === message.to && reply.type === message.type) break; // asked again: no reply
        if (claimed.has(j) || reply.from !== message.to || reply.to !== message.from) continue;
        if (message.type === "initialize_search" && reply.type !== REPLIES[message.type]) continue;
        replyIndex = j;
        break;
      }
      claimed.add(index);
      if (replyIndex !== null) claimed.add(replyIndex);
      exchanges.push({ type: message.type, request: message, requestIndex: index,
        reply: replyIndex === null ? null : messages[replyIndex], replyIndex });
    });
    messages.forEach((message, index) => { // a message that answers nothing: on its own
      if (!claimed.has(index)) exchanges.push({ type: message.type, request: message, requestIndex: index, reply: null, replyIndex: null });
    });
  }

  for (const exchange of exchanges) {
    const request = payloadOf(exchange.request);
    const reply = payloadOf(exchange.reply);
    const error = (exchange.reply && exchange.reply.error) || exchange.request.error || null;
    switch (exchange.type) {
      case "generate_thoughts": {
        const parent = nodeIdOf(request.parent_node);
        const candidates = Array.isArray(reply.candidates) ? reply.candidates : [];
        if (parent) note(parent, "expansion", exchange, error ? errorText(error) : `${candidates.length} candidate${candidates.length === 1 ? "" : "s"} proposed`);
        for (const child of children.get(parent) || []) {
          const candidate = candidates.find((item) => item && item.content === nodes[child].content);
          if (candidate) note(child, "produced", exchange, `proposed as ${candidate.temp_id || "a candidate"}: “${candidate.content}”${candidate.action_type ? ` (${candidate.action_type})` : ""}`);
        }
        break;
      }
      case "evaluate_thoughts": {
        const evaluations = Array.isArray(reply.evaluations) ? reply.evaluations : [];
        const ranking = Array.isArray(reply.ranking) ? reply.ranking : [];
        const pruning = Array.isArray(reply.pruning_suggestions) ? reply.pruning_suggestions : [];
        const scored = new Set([...(Array.isArray(request.candidates) ? request.candidates : []).map(nodeIdOf),
          ...evaluations.map((item) => item && item.node_id)].filter(Boolean));
        for (const id of scored) {
          const evaluation = evaluations.find((item) => item && item.node_id === id);
          const parts = [];
          if (evaluation) {
            parts.push(`score ${fmtScore(evaluation.score)}`);
            if (evaluation.confidence !== undefined && evaluation.confidence !== null) parts.push(`confidence ${evaluation.confidence}`);
          } else parts.push(error ? errorText(error) : "no evaluation for this node in the reply");
          if (ranking.includes(id)) parts.push(`ranked ${ranking.indexOf(id) + 1} of ${ranking.length}`);
          if (pruning.includes(id)) parts.push("pruning suggested");
          const reasoning = evaluation && evaluation.reasoning ? ` — ${evaluation.reasoning}` : "";
          note(id, "scored", exchange, parts.join(" · ") + reasoning);
        }
        break;
      }
      case "synthesize_solution":
        for (const id of (Array.isArray(request.best_path) ? request.best_path : []).map(nodeIdOf)) note(id, "synthesis", exchange, null);
        break;
      default: {
        // decompose_task, initialize_search, and messages answering nothing: the search as a whole.
        const parent = nodeIdOf(request.parent_node);
        const listed = (Array.isArray(request.candidates) ? request.candidates : []).map(nodeIdOf).filter((id) => nodes[id]);
        if (parent && nodes[parent]) note(parent, "expansion", exchange, error ? errorText(error) : null);
        else if (listed.length) listed.forEach((id) => note(id, "scored", exchange, error ? errorText(error) : null));
        else if (rootId) note(rootId, "search", exchange, error ? errorText(error) : null);
      }
    }
  }

  // -- small helpers ----------------------------------------------------------------------------

  function fmtScore(score) {
    if (score === null || score === undefined || score === "") return "—";
    const number = Number(score);
    return Number.isFinite(number) ? String(Math.round(number * 100) / 100) : String(score);
  }

  function errorText(error) {
    return `${error.code || "ERROR"}: ${error.message || ""}`;
  }

  // A label's lines: a parenthetical starts its own line ("13 - 9 = 4" / "(left: 4 4 10)"),
  // words wrap at `width` characters, and what does not fit in `maxLines` ends in "…".
  function wrap(text, width, maxLines) {
    const flat = String(text).replace(/\s+/g, " ").trim();
    const lines = [];
    for (const part of flat.split(/ (?=\()/)) {
      let line = "";
      for (const word of part.split(" ")) {
        const next = line ? `${line} ${word}` : word;
        if (next.length <= width) line = next;
        else {
          if (line) lines.push(line);
          line = word.length > width ? `${word.slice(0, width - 1)}…` : word;
        }
      }
      if (line) lines.push(line);
    }
    if (lines.length <= maxLines) return lines;
    const shown = lines.slice(0, maxLines);
    shown[maxLines - 1] = `${shown[maxLines - 1].slice(0, width - 1)}…`;
    return shown;
  }

  function badge(status, extra) {
    return el("span", { class: `badge tt-${status}${extra ? ` ${extra}` : ""}` }, status);
  }

  function json(value) {
    try {
      return JSON.stringify(value, null, 2);
    } catch (error) {
      return String(value);
    }
  }

  // -- the graph -------------------------------------------------------------------------------

  // Fold the pruned branches from the start when the whole tree would be too big or too wide to read.
  const widest = Math.max(0, ...Object.values(ids.reduce((count, id) => {
    count[nodes[id].depth] = (count[nodes[id].depth] || 0) + 1;
    return count;
  }, {})));
  const state = { collapsed: ids.length > COLLAPSE_OVER || widest > WIDEST, opened: new Set(), selected: null, cy: null };
  const graphBox = document.getElementById("tt-graph");
  const collapseBox = document.getElementById("tt-collapse");

  function nodeLabel(id, hidden) {
    const node = nodes[id];
    const score = node.evaluation ? fmtScore(node.evaluation.score) : null;
    const lines = id === rootId ? ["root", ...wrap(node.content || tree.problem || "", 18, 2)] : wrap(node.content || "(empty)", 18, 3);
    let last = score !== null ? `★ ${score}` : node.status === "pruned" ? "no score" : "";
    if (node.status === "pruned") last = `pruned${score !== null ? ` · ★ ${score}` : ""}`;
    if (node.status === "terminal") last = `${score !== null ? `★ ${score} · ` : ""}terminal`;
    if (hidden) last += `${last ? " · " : ""}+${hidden} below`;
    if (last) lines.push(last);
    return lines;
  }

  function nodeElement(id, hidden) {
    const node = nodes[id];
    const lines = nodeLabel(id, hidden);
    const classes = [node.status || "pending"];
    if (id === rootId) classes.push("root");
    if (best.has(id)) classes.push("best");
    if (faded.has(id)) classes.push("faded");
    if (id === state.selected) classes.push("selected");
    return { group: "nodes", classes: classes.join(" "),
      data: { id, label: lines.join("\n"), status: node.status, h: 14 + 14 * lines.length, hidden: hidden || 0 } };
  }

  function edgeElement(source, target, extra) {
    const classes = [];
    if (bestEdges.has(`${source}>${target}`)) classes.push("best");
    if (faded.has(target) || (extra && extra.group)) classes.push("faded");
    return { group: "edges", classes: classes.join(" "), data: { id: `${source}>${target}`, source, target } };
  }

  // What is drawn: every node, or with pruned branches folded unless opened.
  function elements() {
    const out = [];
    const seen = new Set(); // a malformed tree may loop
    const visit = (id, open) => {
      if (seen.has(id)) return;
      seen.add(id);
      const kids = (children.get(id) || []).filter((kid) => !seen.has(kid));
      const fold = state.collapsed && !open && !state.opened.has(id);
      if (fold && isPruned(id) && kids.length) {
        out.push(nodeElement(id, below(id)));
        return;
      }
      out.push(nodeElement(id, 0));
      const prunedKids = fold ? kids.filter(isPruned) : [];
      const folded = prunedKids.length >= FOLD_FROM ? new Set(prunedKids) : new Set();
      for (const kid of kids) {
        if (folded.has(kid)) continue;
        out.push(edgeElement(id, kid));
        visit(kid, open || state.opened.has(id));
      }
      if (folded.size) {
        const count = [...folded].reduce((sum, kid) => sum + (size.get(kid) || 1), 0);
        const groupId = `fold:${id}`;
        out.push({ group: "nodes", classes: "fold faded", data: { id: groupId, fold: id, h: 40,
          label: `${folded.size} pruned${count > folded.size ? ` +${count - folded.size}` : ""}\n▸ show` } });
        out.push(edgeElement(id, groupId, { group: true }));
      }
    };
    if (rootId) visit(rootId, false);
    for (const id of roots.slice(1)) visit(id, false); // nodes whose parent is missing
    return out;
  }

  const STYLE = [
    { selector: "node", style: {
      shape: "round-rectangle", width: 128, height: "data(h)", label: "data(label)", "text-wrap": "wrap",
      "text-max-width": 124, "text-valign": "center", "text-halign": "center", "font-size": 11.5, "line-height": 1.2,
      "font-family": "system-ui, sans-serif", color: "#1d2430",
      "background-color": "#ffffff", "border-width": 1.5, "border-color": "#7f8ba0",
    } },
    { selector: "node.pending", style: { "border-style": "dashed", "border-color": "#9aa4b2" } },
    { selector: "node.expanded", style: { "background-color": "#f3f7ff", "border-color": "#6d86b8" } },
    { selector: "node.terminal", style: { "background-color": "#e4f3e8", "border-color": "#2c8a4b", "border-width": 2.5 } },
    { selector: "node.faded", style: { "background-color": "#eef0f3", "border-color": "#c9d0da", "border-style": "dashed", color: "#98a2b0" } },
    { selector: "node.root", style: { "background-color": "#18202c", "border-color": "#18202c", color: "#ffffff", "font-weight": "bold" } },
    { selector: "node.best", style: { "border-color": BEST, "border-width": 4, "border-style": "solid" } },
    { selector: "node.best.terminal", style: { "background-color": "#fff1dc" } },
    { selector: "node.fold", style: { shape: "round-rectangle", width: 84, "background-color": "#f4f6f9", "border-color": "#b9c0ca",
      "border-style": "dashed", color: "#6b7584", "font-size": 11 } },
    { selector: "node.selected", style: { "overlay-color": "#2f6fdb", "overlay-opacity": 0.13, "overlay-padding": 7 } },
    { selector: "edge", style: {
      width: 1.5, "line-color": "#aab3c0", "curve-style": "taxi", "taxi-direction": "downward", "taxi-turn": 18,
      "target-arrow-shape": "triangle", "target-arrow-color": "#aab3c0", "arrow-scale": 0.7,
    } },
    { selector: "edge.faded", style: { "line-color": "#d6dbe2", "target-arrow-color": "#d6dbe2", "line-style": "dashed" } },
    { selector: "edge.best", style: { width: 4.5, "line-color": BEST, "target-arrow-color": BEST, "z-index": 10, "arrow-scale": 0.9 } },
  ];

  // Draw what is to be seen; on a redraw the view stays put, with `anchor` (a node that
  // stays drawn: the parent of what was opened) where it was on the screen.
  function draw(anchor) {
    if (!window.cytoscape) {
      graphBox.replaceChildren(el("p", { class: "muted small tt-loading" }, "The graph library did not load."));
      return;
    }
    if (!rootId) {
      graphBox.replaceChildren(el("p", { class: "muted small tt-loading" }, "This search has no node."));
      return;
    }
    if (window.cytoscapeDagre && !window.cytoscape.__switchyardDagre) {
      window.cytoscape.use(window.cytoscapeDagre);
      window.cytoscape.__switchyardDagre = true;
    }
    const began = performance.now();
    const first = !state.cy;
    if (first) {
      graphBox.replaceChildren();
      state.cy = window.cytoscape({
        container: graphBox, style: STYLE, minZoom: 0.08, maxZoom: 1.6,
        userZoomingEnabled: false, boxSelectionEnabled: false, autoungrabify: true,
      });
      state.cy.on("tap", "node", (event) => {
        const fold = event.target.data("fold");
        if (fold) {
          state.opened.add(fold);
          draw(fold);
          return;
        }
        select(event.target.id(), false);
      });
      state.cy.on("mouseover", "node", () => { graphBox.style.cursor = "pointer"; });
      state.cy.on("mouseout", "node", () => { graphBox.style.cursor = ""; });
      window.switchyard.thoughtTree = state.cy; // for the console, and for tests that click a node
    }
    const viewport = first ? null : { zoom: state.cy.zoom(), pan: state.cy.pan() };
    const held = anchor && !first && state.cy.getElementById(anchor).length ? state.cy.getElementById(anchor).renderedPosition() : null;
    state.cy.batch(() => {
      state.cy.elements().remove();
      state.cy.add(elements());
    });
    state.cy.layout({ name: window.cytoscapeDagre ? "dagre" : "breadthfirst", rankDir: "TB", nodeSep: 12, rankSep: 44,
      edgeSep: 6, padding: 18, animate: false, directed: true, roots: [rootId] }).run();
    if (first) view("start");
    else if (viewport) {
      state.cy.viewport(viewport);
      if (held) {
        const now = state.cy.getElementById(anchor).renderedPosition();
        state.cy.panBy({ x: held.x - now.x, y: held.y - now.y });
      }
    }
    graphBox.dataset.drawn = String(state.cy.nodes().length);
    graphBox.dataset.drawMs = String(Math.round(performance.now() - began)); // how long the layout took
    document.getElementById("tt-counts").dataset.shown = String(state.cy.nodes().not(".fold").length);
  }

  function view(how) {
    const cy = state.cy;
    if (!cy) return;
    cy.stop(true); // a pan still under way would undo this one
    if (how === "in" || how === "out") {
      const zoom = cy.zoom() * (how === "in" ? 1.25 : 0.8);
      cy.zoom({ level: Math.max(cy.minZoom(), Math.min(cy.maxZoom(), zoom)), renderedPosition: { x: cy.width() / 2, y: cy.height() / 2 } });
      return;
    }
    const path = cy.nodes(".best");
    if (how === "best" && path.length) {
      cy.fit(path.union(path.connectedEdges(".best")), 40);
      if (cy.zoom() > MAX_FIT) cy.zoom({ level: MAX_FIT, renderedPosition: { x: cy.width() / 2, y: cy.height() / 2 } });
      return;
    }
    cy.fit(undefined, 20);
    const middle = { x: cy.width() / 2, y: cy.height() / 2 };
    if (cy.zoom() > MAX_FIT) cy.zoom({ level: MAX_FIT, renderedPosition: middle });
    // A wide tree fitted whole is unreadable: start on the best path (or the root) instead.
    if (how === "start" && cy.zoom() < MIN_START) {
      cy.zoom(START);
      cy.center(path.length ? path : cy.getElementById(rootId));
      const top = cy.getElementById(rootId).renderedBoundingBox().y1;
      cy.panBy({ x: 0, y: 20 - top });
    }
  }

  // Bring a node into the view when it is not (fully) in it.
  function show(id) {
    const cy = state.cy;
    const node = cy && cy.getElementById(id);
    if (!node || !node.length) return;
    const box = node.renderedBoundingBox();
    if (box.x1 >= 0 && box.y1 >= 0 && box.x2 <= cy.width() && box.y2 <= cy.height()) return;
    cy.animate({ center: { eles: node }, duration: 200 });
  }

  // -- the node panel ----------------------------------------------------------------------------

  const panel = document.getElementById("tt-panel");

  function nodeLink(id) {
    return el("a", { href: `?node=${encodeURIComponent(id)}`, class: "mono", "data-node": id }, id);
  }

  function messageBlock(message, index, open) {
    const details = el("details", { class: `tt-msg${message.error ? " has-error" : ""}`, "data-index": index, "data-type": message.type || "" },
      el("summary", {},
        el("span", { class: "tt-msg-n" }, `#${index + 1}`), " ",
        el("span", { class: "tt-msg-route" }, `${message.from || "?"} → ${message.to || "?"}`), " ",
        el("strong", { class: "tt-msg-type" }, message.type || "(no type)"),
        message.error ? el("code", { class: "tt-msg-error" }, message.error.code || "error") : null));
    let built = false;
    const build = () => {
      if (built || !details.open) return;
      built = true;
      if (message.error) {
        details.append(el("p", { class: "error small" }, el("code", {}, message.error.code || "error"), " ", message.error.message || "",
          message.error.recoverable ? " (recoverable)" : ""));
      }
      details.append(el("pre", { class: "tt-payload" }, json(message.payload === undefined ? null : message.payload)));
    };
    details.addEventListener("toggle", build);
    if (open) {
      details.open = true;
      build();
    }
    return details;
  }

  function exchangeBlock(item, title) {
    const { exchange, focus } = item;
    return el("div", { class: "tt-exchange", "data-type": exchange.type },
      el("p", { class: "tt-exchange-title" }, el("strong", {}, title)),
      focus ? el("p", { class: "tt-focus" }, focus) : null,
      messageBlock(exchange.request, exchange.requestIndex, false),
      exchange.reply ? messageBlock(exchange.reply, exchange.replyIndex, false)
        : el("p", { class: "muted small" }, exchange.request.type in REPLIES ? "No reply was recorded." : ""));
  }

  function section(title, ...content) {
    return el("section", { class: "tt-section" }, el("h3", {}, title), ...content);
  }

  function renderPanel(id) {
    const node = nodes[id];
    if (!node) {
      panel.replaceChildren(el("h2", {}, "Node"), el("p", { class: "muted" }, `There is no node ${id} in this tree.`));
      return;
    }
    const kids = children.get(id) || [];
    const found = concern.get(id) || { produced: [], scored: [], expansion: [], synthesis: [], search: [] };
    const evaluation = node.evaluation;
    const score = evaluation ? Number(evaluation.score) : null;
    const hiddenHere = state.cy && state.cy.getElementById(id).length ? state.cy.getElementById(id).data("hidden") : 0;
    const metadata = node.metadata && typeof node.metadata === "object" ? node.metadata : {};
    panel.replaceChildren(...[
      el("div", { class: "row tt-panel-head" },
        el("h2", {}, el("span", { class: "mono" }, id)),
        badge(node.status || "pending"),
        id === rootId ? el("span", { class: "badge tt-root" }, "root") : null,
        best.has(id) ? el("span", { class: "badge tt-best" }, "best path") : null,
        faded.has(id) && node.status !== "pruned" ? el("span", { class: "badge tt-pruned" }, "below a pruned node") : null),
      el("p", { class: "tt-content" }, node.content || "(empty)"),
      el("dl", { class: "facts compact-facts" },
        el("div", {}, el("dt", {}, "Depth"), el("dd", {}, String(node.depth ?? "—"))),
        el("div", {}, el("dt", {}, "Action type"), el("dd", { class: "mono" }, node.action_type || "—")),
        el("div", {}, el("dt", {}, "Parent"), el("dd", {}, node.parent_id && nodes[node.parent_id] ? nodeLink(node.parent_id) : "—")),
        el("div", {}, el("dt", {}, "Children"), el("dd", {}, kids.length ? String(kids.length) : "none"))),
      hiddenHere ? el("p", {}, el("button", { type: "button", class: "small-button", onclick: () => { state.opened.add(id); draw(id); renderPanel(id); } },
        `Show the ${hiddenHere} node${hiddenHere === 1 ? "" : "s"} below it`)) : null,
      section("Evaluation", evaluation
        ? el("div", { class: "tt-eval" },
          el("div", { class: "tt-eval-score" }, el("span", { class: "tt-eval-value" }, fmtScore(evaluation.score)), el("span", { class: "muted" }, " / 10"),
            el("span", { class: "tt-eval-bar", title: `score ${fmtScore(evaluation.score)} of 10` },
              el("span", { style: { width: `${Number.isFinite(score) ? Math.max(0, Math.min(100, score * 10)) : 0}%` } })),
            evaluation.confidence !== undefined && evaluation.confidence !== null ? el("span", { class: "muted small" }, ` confidence ${evaluation.confidence}`) : null),
          evaluation.reasoning ? el("p", { class: "tt-reasoning" }, evaluation.reasoning) : null)
        : el("p", { class: "muted small" }, id === rootId ? "The root is the problem itself; it is not scored." : "Not scored (no evaluation was recorded for this node).")),
      section("Messages",
        found.produced.length + found.scored.length + found.expansion.length + found.synthesis.length + found.search.length ? null
          : el("p", { class: "muted small" }, "No message names this node."),
        ...found.search.map((item) => exchangeBlock(item, `The search: ${item.exchange.type}`)),
        ...found.produced.map((item) => exchangeBlock(item, "Proposed by the generator")),
        ...found.scored.map((item) => exchangeBlock(item, "Scored by the evaluator")),
        found.expansion.length ? el("details", { class: "tt-expansion", open: found.expansion.length <= 3 ? true : null },
          el("summary", {}, `Expanding this node: ${found.expansion.length} generate_thoughts exchange${found.expansion.length === 1 ? "" : "s"}`),
          ...found.expansion.map((item) => exchangeBlock(item, "generate_thoughts"))) : null,
        ...found.synthesis.map((item) => exchangeBlock(item, "Sent to the synthesizer (best path)"))),
      Object.keys(metadata).length ? section("Metadata", el("pre", { class: "tt-meta" }, json(metadata))) : null,
      kids.length ? section(`Children (${kids.length})`, el("ul", { class: "tt-children" }, kids.slice(0, 40).map((kid) =>
        el("li", {}, nodeLink(kid), " ", el("span", { class: `tt-dot ${nodes[kid].status}` }), " ",
          el("span", { class: "small" }, (nodes[kid].content || "").slice(0, 60)),
          nodes[kid].evaluation ? el("span", { class: "tt-score" }, fmtScore(nodes[kid].evaluation.score)) : null)),
      kids.length > 40 ? el("li", { class: "muted small" }, `… and ${kids.length - 40} more`) : null)) : null,
    ].filter(Boolean));
    panel.scrollTop = 0;
  }

  function select(id, scroll) {
    state.selected = id;
    const url = new URL(window.location.href);
    if (id) url.searchParams.set("node", id);
    else url.searchParams.delete("node");
    window.history.replaceState(null, "", url.toString());
    if (state.cy) {
      state.cy.nodes(".selected").removeClass("selected");
      if (id) state.cy.getElementById(id).addClass("selected");
    }
    if (id) renderPanel(id);
    if (scroll) panel.scrollIntoView({ behavior: "smooth", block: "nearest" });
  }

  // -- every message, in order (built when opened) ---------------------------------------------

  const all = document.getElementById("tt-all-messages");
  all.addEventListener("toggle", () => {
    const list = all.querySelector(".tt-message-list");
    if (!all.open || list.childElementCount) return;
    list.append(...(messages.length ? messages.map((message, index) => {
      const block = messageBlock(message, index, false);
      const about = concernedBy.get(index) || [];
      if (about.length) {
        block.querySelector("summary").append(el("span", { class: "muted small tt-msg-nodes" },
          ` · ${about.slice(0, 6).join(", ")}${about.length > 6 ? ` +${about.length - 6}` : ""}`));
      }
      return block;
    }) : [el("p", { class: "muted" }, "No message was recorded.")]));
  });

  // -- start ---------------------------------------------------------------------------------

  collapseBox.checked = state.collapsed;
  collapseBox.addEventListener("change", () => {
    state.collapsed = collapseBox.checked;
    state.opened.clear();
    if (state.cy) {
      draw();
      view("start");
    }
  });
  document.querySelector(".tt-zoom").addEventListener("click", (event) => {
    const button = event.target.closest("button[data-view]");
    if (button) view(button.dataset.view);
  });
  document.getElementById("thought-tree-page").addEventListener("click", (event) => {
    const link = event.target.closest("a[data-node]");
    if (!link || !nodes[link.dataset.node]) return;
    event.preventDefault();
    const id = link.dataset.node;
    if (state.cy && !state.cy.getElementById(id).length) { // folded away: open the way to it
      let at = id;
      while (at && nodes[at] && !state.cy.getElementById(at).length) {
        at = nodes[at].parent_id;
        if (at) state.opened.add(at);
      }
      draw(at);
    }
    select(id, !panel.contains(link));
    show(id);
  });
  window.addEventListener("resize", () => state.cy && state.cy.resize());

  draw();
  const asked = new URLSearchParams(window.location.search).get("node");
  if (asked && nodes[asked]) select(asked, false);
})();
