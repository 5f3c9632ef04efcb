// The versions section of a workflow's page: compare two versions (drawn together on one
// graph, coloured by what changed, with the changed settings and the JSON diff), restore an
// old one as a new version, and start a run on a chosen one — all through the API, as
// programs do (GET …/versions/{n}, GET …/versions/diff, POST …/versions/{n}/restore).
(function () {
  "use strict";

  const { api, el, jsonData } = window.switchyard;
  const $ = (id) => document.getElementById(id);
  const workflowId = jsonData("workflow-document").workflow_id;
  const base = `/workflows/${encodeURIComponent(workflowId)}/versions`;
  let numbers = jsonData("editor-config").versions || [];

  const COLOURS = { added: "#2c8a4b", removed: "#c23b3b", changed: "#c98a12", same: "#9aa4b2" };
  const STYLE = [
    { selector: "node", style: {
      shape: "round-rectangle", width: 168, height: 54, "background-color": "#ffffff", "border-width": 2,
      "border-color": COLOURS.same, label: "data(label)", "text-wrap": "wrap", "text-max-width": 156,
      "text-valign": "center", "text-halign": "center", "font-size": 12, color: "#1d2430",
      "font-family": "system-ui, sans-serif",
    } },
    { selector: "edge", style: {
      width: 2, "curve-style": "bezier", "target-arrow-shape": "triangle", "line-color": COLOURS.same,
      "target-arrow-color": COLOURS.same, label: "data(label)", "font-size": 10, "text-wrap": "wrap",
      "text-max-width": 140, "text-background-color": "#ffffff", "text-background-opacity": 0.9, color: "#1d2430",
    } },
    ...["added", "removed", "changed"].flatMap((kind) => [
      { selector: `node.${kind}`, style: { "border-color": COLOURS[kind], "border-width": 4 } },
      { selector: `edge.${kind}`, style: { "line-color": COLOURS[kind], "target-arrow-color": COLOURS[kind], width: 3.5 } },
    ]),
    { selector: "node.removed", style: { "border-style": "dashed", "background-color": "#fff1f1" } },
    { selector: "edge.removed", style: { "line-style": "dashed" } },
    { selector: "node.gate", style: { shape: "hexagon", width: 200, height: 66 } }, // a person's step
    // A sub-workflow node (it runs another workflow as a child run): a folder, a box with a tab.
    { selector: "node.workflow", style: { shape: "polygon", "shape-polygon-points": "-1 -1 -0.25 -1 -0.15 -0.72 1 -0.72 1 1 -1 1",
      width: 210, height: 70, "text-max-width": 196, "text-margin-y": 4 } },
  ];
  let cy = null;

  function status(text) {
    $("versions-status").textContent = text;
  }

  function chosen(name) {
    const radio = document.querySelector(`input[name="${name}"]:checked`);
    return radio ? Number(radio.value) : null;
  }

  function pick(name, number) {
    const radio = document.querySelector(`input[name="${name}"][value="${number}"]`);
    if (radio) radio.checked = true;
  }

  // The two versions' nodes and transitions on one graph: what b has, plus what only a had
  // (drawn as removed); a transition is known by its ends and its order among theirs, as the
  // diff matches them.
  function elements(a, b, diff) {
    const added = new Set(diff.nodes.added);
    const removed = new Set(diff.nodes.removed);
    const changed = new Map(diff.nodes.changed.map((change) => [change.id, change.fields]));
    const nodes = [...b.nodes, ...a.nodes.filter((node) => removed.has(node.id))];
    const drawn = nodes.map((node) => {
      const kind = added.has(node.id) ? "added" : removed.has(node.id) ? "removed" : changed.has(node.id) ? "changed" : "same";
      const fields = changed.has(node.id) ? `\n(${changed.get(node.id).join(", ")})` : "";
      const gate = node.gate ? "\na person decides" : "";
      const child = node.subworkflow
        ? `\nruns ${node.subworkflow.workflow_ref}${node.subworkflow.version ? ` v${node.subworkflow.version}` : ""}` : "";
      const shape = node.gate ? " gate" : node.subworkflow ? " workflow" : "";
      return { group: "nodes", classes: `${kind}${shape}`,
               data: { id: `n:${node.id}`, label: `${node.id}${child}\n${node.agent_ref}${gate}${fields}` } };
    });
    const kindOf = new Map();
    const key = (t) => `${t.from}→${t.to}#${t.index}`;
    for (const t of diff.transitions.added) kindOf.set(key(t), "added");
    for (const t of diff.transitions.changed) kindOf.set(key(t), "changed");
    const edges = [];
    const indexed = (transitions) => {
      const seen = new Map();
      return transitions.map((t) => {
        const pair = `${t.from}→${t.to}`;
        const index = seen.get(pair) || 0;
        seen.set(pair, index + 1);
        return { ...t, index };
      });
    };
    const label = (t) => t.condition || t.on_failure || t.on_success || "";
    for (const t of indexed(b.transitions || [])) {
      edges.push({ group: "edges", classes: kindOf.get(key(t)) || "same",
                   data: { id: `e:b:${key(t)}`, source: `n:${t.from}`, target: `n:${t.to}`, label: label(t) } });
    }
    for (const t of diff.transitions.removed) {
      edges.push({ group: "edges", classes: "removed",
                   data: { id: `e:a:${key(t)}`, source: `n:${t.from}`, target: `n:${t.to}`, label: label(t) } });
    }
    const ids = new Set(drawn.map((node) => node.data.id));
    return [...drawn, ...edges.filter((edge) => ids.has(edge.data.source) && ids.has(edge.data.target))];
  }

  function settingText(value) {
    return value === null || value === undefined ? "—" : typeof value === "object" ? JSON.stringify(value) : String(value);
  }

  function summary(diff) {
    const items = [];
    const list = (label, values) => values.length && items.push(el("li", {}, `${label}: `, el("span", { class: "mono" }, values.join(", "))));
    list("Nodes added", diff.nodes.added);
    list("Nodes removed", diff.nodes.removed);
    for (const change of diff.nodes.changed) items.push(el("li", {}, "Node ", el("span", { class: "mono" }, change.id), ` changed: ${change.fields.join(", ")}`));
    const ends = (t) => `${t.from} → ${t.to}`;
    list("Transitions added", diff.transitions.added.map(ends));
    list("Transitions removed", diff.transitions.removed.map(ends));
    for (const change of diff.transitions.changed) items.push(el("li", {}, `Transition ${ends(change)} changed: ${change.fields.join(", ")}`));
    for (const setting of diff.settings) {
      items.push(el("li", { class: "diff-setting" }, `${setting.name}: `, el("span", { class: "mono" }, settingText(setting.a)),
                    " → ", el("span", { class: "mono" }, settingText(setting.b))));
    }
    if (!items.length) items.push(el("li", { class: "muted" }, "Nothing: the two versions are the same."));
    return items;
  }

  async function compare() {
    const a = chosen("diff-a");
    const b = chosen("diff-b");
    if (a === null || b === null) {
      status("Pick a version to compare from and one to compare to.");
      return;
    }
    status("Comparing…");
    try {
      const [diff, first, second] = await Promise.all([
        api.get(`${base}/diff?a=${a}&b=${b}`), api.get(`${base}/${a}`), api.get(`${base}/${b}`)]);
      $("version-diff").hidden = false;
      $("diff-heading").textContent = `Version ${a} → version ${b}`;
      $("diff-summary").replaceChildren(...summary(diff));
      $("diff-json").textContent = diff.json.length ? JSON.stringify(diff.json, null, 2) : "[] (no difference)";
      if (!cy) {
        cy = cytoscape({ container: $("diff-cy"), style: STYLE, elements: [], minZoom: 0.2, maxZoom: 2.5,
                         boxSelectionEnabled: false, autounselectify: true });
      }
      cy.elements().remove();
      cy.add(elements(first.document, second.document, diff));
      cy.resize();
      cy.layout({ name: "dagre", rankDir: "LR", nodeSep: 30, rankSep: 70, fit: true, padding: 20 }).run();
      status(diff.same ? "The two versions are the same." : "");
    } catch (error) {
      status(`Not compared: ${error.message}`);
    }
  }

  async function restore(event) {
    const number = Number(event.currentTarget.dataset.version);
    if (!window.confirm(`Restore version ${number}? The workflow becomes as it was then (nodes, transitions, `
                        + "error handling, limits, evaluation settings, positions), saved as a new version.")) return;
    status(`Restoring version ${number}…`);
    try {
      const restored = await api.post(`${base}/${number}/restore`);
      status(`Restored as version ${restored.number}.`);
      const url = new URL(window.location.href);
      url.searchParams.set("version", restored.number);
      url.hash = "versions";
      window.location.assign(url.toString());  // the editor shows the restored document
    } catch (error) {
      status(`Not restored: ${error.message}`);
    }
  }

  function runVersion(event) {
    const select = $("run-version");
    select.value = event.currentTarget.dataset.version;
    $("run-button").click();
  }

  function bindRows() {
    for (const button of document.querySelectorAll(".version-restore")) button.addEventListener("click", restore);
    for (const button of document.querySelectorAll(".version-run")) button.addEventListener("click", runVersion);
  }

  // A save on this page makes a new version: the list and the run dialog's versions are read
  // again as the server draws them on a fresh load (parsed, not run: no script of it runs).
  async function refresh() {
    const response = await fetch(window.location.href, { credentials: "same-origin" });
    if (!response.ok) return;
    const fresh = new DOMParser().parseFromString(await response.text(), "text/html");
    for (const selector of ["#versions tbody", "#run-version"]) {
      const shown = document.querySelector(selector);
      const read = fresh.querySelector(selector);
      if (shown && read) shown.replaceWith(document.adoptNode(read));
    }
    numbers = JSON.parse(fresh.getElementById("editor-config").textContent).versions || [];
    $("diff-button").disabled = numbers.length < 2;
    bindRows();
    if (numbers.length >= 2) {
      pick("diff-a", numbers[1]);
      pick("diff-b", numbers[0]);
    }
  }

  $("diff-button").addEventListener("click", compare);
  document.addEventListener("switchyard:workflow-saved", refresh);
  bindRows();

  // Preselect: the version the address names (a run's page links to its version) against the
  // latest, or the latest two.
  const named = Number(new URLSearchParams(window.location.search).get("version"));
  if (numbers.length >= 2) {
    const latest = numbers[0];
    const from = numbers.includes(named) && named !== latest ? named : numbers[1];
    pick("diff-a", from);
    pick("diff-b", latest);
  } else if (numbers.length === 1) {
    pick("diff-a", numbers[0]);
    pick("diff-b", numbers[0]);
  }

  window.workflowVersions = { get cy() { return cy; } };  // for tests and the console
})();
