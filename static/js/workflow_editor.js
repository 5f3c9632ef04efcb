// The workflow page: the graph editor (templates/workflows/workflow_editor.html).
//
// The §4.1 document comes from the page (json_script "workflow-document"); the editor
// keeps it in pieces a form can edit (`state`), draws it with cytoscape, and talks to
// the same API as programs: agents from GET /api/agents, problems from
// POST /api/workflows/{id}/validate (debounced, as the person types), saving with
// POST /api/workflows or PUT /api/workflows/{id}, runs with POST /api/executions.
// The validation answers problems (red; they refuse a save) and warnings (amber; data that
// flows nowhere, engine/dataflow.py; the save goes through).
// Node positions are saved in each node's `layout` ({x, y}); a workflow whose nodes have
// none (an imported one) is laid out automatically, left to right, and so, after each
// connection, are the nodes the editor placed (a node moved by hand stays). The graph is
// never zoomed out so far that its labels are under 10 px: a larger one is panned. A node's `gate` (a
// person's step, engine/gates.py) is edited as JSON and drawn as a hexagon. A node's
// `subworkflow` (engine/subworkflows.py: it runs another stored workflow as a child run) is
// added with "Add workflow as a node" (a workflow of GET /api/workflows, a version of
// GET /api/workflows/{id}/versions or the latest), changed or removed in the node's settings,
// and drawn as a folder with the workflow's id under the node's. The limits of a
// run include what it, and each node run, may spend on model calls (max_cost, max_node_cost:
// USD as text, kept exact) and what a run whose budget is reached does (on_budget). The
// inputs a run must be given (input_schema) are declared a row each under "Inputs of a run",
// drafted from the $.input paths the nodes read as the validation answers them
// (inferred_input_schema); the run dialog asks for them with a field each (run_input.js).
(function () {
  "use strict";

  const { api, el, jsonData, ApiError, runInput } = window.switchyard;
  const config = jsonData("editor-config");
  const initial = jsonData("workflow-document");
  const editable = Boolean(config.editable);
  const $ = (id) => document.getElementById(id);

  const ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.:\-]{0,99}$/;
  const SUCCESS_ACTIONS = ["continue", "end"];
  const FAILURE_ACTIONS = ["escalate", "abort", "skip"];
  const RESERVED_INPUTS = ["data_references", "transfer_config"];
  const VALIDATE_DELAY_MS = 350;
  // The smallest labels (the edges') are 12 px at zoom 1, the nodes' 13: never zoomed out so
  // far that they are under 10 px (a larger graph is panned instead).
  const LABEL_PX = 12;
  const MIN_ZOOM = 10 / LABEL_PX;
  // What a named input reads of another node: `$.nodes.<id>…` or `$.nodes['<id>']…`
  // (engine/dataflow.py reads them the same way).
  const NODE_PATH = /^\$\.nodes(?:\.([A-Za-z0-9][A-Za-z0-9_:\-]*)|\[['"]([^'"]+)['"]\])(?=[.[]|$)/;
  const STATE_PATH = /^\$\.state(?:\.([A-Za-z_][A-Za-z0-9_]*)|\[['"]([^'"]+)['"]\])?(?=[.[]|$)/;
  const DOLLARS = /^[0-9]{1,9}(\.[0-9]{1,6})?$/; // a cost limit: USD as decimal text, as the API takes it
  const ON_BUDGET = [["", "fail the run (the default)"], ["fail", "fail the run"], ["escalate", "escalate to a person"]];
  const TOPOLOGY_HELP = {
    seq: "Nodes run one after another, in the order they are listed (move a node earlier or later in its settings).",
    par: "All nodes run at once; none may depend on another.",
    dag: "A node runs once the nodes it depends on are done: its incoming transitions and the task_output references it reads. "
      + "It reads their outputs through its inputs ($.nodes.<id>) or those references; a transition alone passes nothing.",
    state_machine: "The run starts at the first node (▶); after each node, the first transition whose condition holds leads on.",
  };

  // -- the editor's state ---------------------------------------------------------------

  const GATE_SCORES = ["accuracy", "completeness", "efficiency", "overall_score"];
  const INPUT_TYPES = [["", "any JSON"], ["string", "text"], ["number", "number"], ["integer", "whole number"],
    ["boolean", "true or false"], ["array", "list (JSON array)"], ["object", "JSON object"]];
  const KEPT_TYPE = "kept"; // a declared type the list does not offer, kept as written
  const DEFAULT_EXPECTED = { number: "a number", integer: "a whole number", boolean: "true or false",
    array: "a JSON array, e.g. [1, 2]", object: "a JSON object, e.g. {\"key\": 1}" };
  let keySequence = 0;
  const newKey = (prefix) => `${prefix}${++keySequence}`;

  const state = {
    isNew: Boolean(config.is_new),
    savedId: config.is_new ? null : initial.workflow_id,
    savedNodeIds: new Set(config.is_new ? [] : initial.nodes.map((node) => node.id)),
    workflow_id: initial.workflow_id || "",
    name: initial.name || "",
    topology: initial.topology || "dag",
    nodes: initial.nodes.map(nodeFromDocument),
    transitions: (initial.transitions || []).map(transitionFromDocument),
    error_handling: {
      retry_count: String((initial.error_handling || {}).retry_count ?? 0),
      fallback_agent: (initial.error_handling || {}).fallback_agent || "",
      escalate_to: (initial.error_handling || {}).escalate_to || "",
    },
    limits: {
      max_steps: String((initial.limits || {}).max_steps ?? ""),
      max_wall_seconds: String((initial.limits || {}).max_wall_seconds ?? ""),
      // What a run, and each node run, may spend on model calls (USD as text, "" = no
      // limit), and what a run whose budget is reached does ("" = the default, fail).
      max_cost: String((initial.limits || {}).max_cost ?? ""),
      max_node_cost: String((initial.limits || {}).max_node_cost ?? ""),
      on_budget: (initial.limits || {}).on_budget || "",
    },
    domain: initial.domain || "",
    description: initial.description || "", // not edited here; kept through a save
    // The inputs a run must be given (input_schema, a JSON Schema of the run's input), a row
    // per input; none: the workflow declares nothing (and takes any input).
    inputs: inputsFromSchema(initial.input_schema),
    judge_agent: (initial.evaluation || {}).judge_agent || "",
    // score → the minimum a run's evaluation must reach, as typed ("" = no minimum)
    gate: Object.fromEntries(GATE_SCORES.map((score) =>
      [score, String(((initial.evaluation || {}).quality_gate || {})[score] ?? "")])),
    changes: 0, // counts edits, so a save knows whether more came while it was in flight
    savedChanges: 0,
  };
  const ui = {
    selected: null, // {kind: "node" | "transition", key}
    connecting: false,
    connectFrom: null,
    clientProblems: [],
    serverProblems: [], // from the latest validation (or a save refused with WORKFLOW_INVALID)
    serverWarnings: [], // from the latest validation: allowed, but probably not meant (never refuse a save)
    saveProblems: [], // what the last save was refused for otherwise (an id taken …): kept until the next try
    checked: false,
    agents: [],
    agentsById: new Map(),
    workflows: [], // the stored workflows a node may run (GET /api/workflows), this one left out
    versions: new Map(), // workflow id → its version numbers, newest first (read when first needed)
    panelFields: [],
    savedInputSchema: initial.input_schema ?? null, // what a run of the latest saved version must be given
    inferredInputs: null, // the inputs the nodes read, as the latest validation drafted them (engine/inputs.py)
  };

  /** The editor's pieces of an input_schema: a row per declared input, and the rest of the
   * schema (other keywords, as written) kept for the save. */
  function inputsFromSchema(schema) {
    if (!isObject(schema)) return { rest: {}, rows: [] };
    const { properties, required, ...rest } = schema;
    delete rest.type; // "object", always: written again on save
    const needed = Array.isArray(required) ? required : [];
    return { rest, rows: Object.entries(isObject(properties) ? properties : {})
      .map(([name, spec]) => inputRow(name, spec, needed.includes(name))) };
  }

  /** A declared input as the editor edits it: name, type, required, default (as typed) and
   * description; the rest of its schema (minLength, items, enum …) kept as it was. A type the
   * list does not offer (["string", "null"]) is kept as written too. */
  function inputRow(name, spec, required) {
    const { type, default: fallback, description, ...rest } = isObject(spec) ? spec : {};
    const offered = type === undefined || INPUT_TYPES.some(([value]) => value === type);
    let defaultText = "";
    if (fallback !== undefined) defaultText = type === "string" && typeof fallback === "string" ? fallback : JSON.stringify(fallback);
    return { key: newKey("i"), name, type: offered ? (type || "") : KEPT_TYPE, keptType: offered ? undefined : type,
      required, defaultText, description: typeof description === "string" ? description : "", rest };
  }

  function nodeFromDocument(document) {
    const mapping = document.input_mapping || {};
    const inputs = Object.entries(mapping)
      .filter(([name]) => !RESERVED_INPUTS.includes(name))
      .map(([name, value]) => (typeof value === "string"
        ? { name, value, json: false } : { name, value: JSON.stringify(value), json: true }));
    return {
      key: newKey("n"),
      id: document.id,
      agent_ref: document.agent_ref,
      inputs,
      references: Array.isArray(mapping.data_references) ? mapping.data_references : [],
      referencesText: "data_references" in mapping ? JSON.stringify(mapping.data_references, null, 2) : "",
      transferText: "transfer_config" in mapping ? JSON.stringify(mapping.transfer_config, null, 2) : "",
      outputs: Object.entries(document.output_mapping || {}).map(([name, value]) => ({ name, value, json: false })),
      output_schema: document.output_schema || "",
      compress: Boolean(document.compress),
      compress_model: document.compress_model || "flash",
      compress_ratio: String(document.compress_ratio ?? 0.3),
      // The gate as typed: "" is no gate. Kept as text so that a half-typed one is not lost.
      gateText: document.gate === undefined || document.gate === null ? "" : JSON.stringify(document.gate, null, 2),
      // The workflow it runs as a child run, its version as typed ("" = the latest when the
      // child starts); null: a node whose agent does its work.
      subworkflow: document.subworkflow ? { workflow_ref: document.subworkflow.workflow_ref || "",
        version: document.subworkflow.version === undefined || document.subworkflow.version === null
          ? "" : String(document.subworkflow.version) } : null,
      layout: document.layout || null,
      // "hand": where the person put it (or where it was saved), kept when the graph is laid
      // out after a connection; "auto": placed by the editor, laid out again.
      placed: document.layout ? "hand" : "auto",
    };
  }

  function transitionFromDocument(document) {
    return {
      key: newKey("t"),
      from: document.from,
      to: document.to,
      condition: document.condition || "",
      on_success: document.on_success || "",
      on_failure: document.on_failure || "",
    };
  }

  const nodeByKey = (key) => state.nodes.find((node) => node.key === key);
  const nodeById = (id) => state.nodes.find((node) => node.id === id);
  const transitionByKey = (key) => state.transitions.find((transition) => transition.key === key);

  // -- the document the API reads ---------------------------------------------------------

  /** The §4.1 document of the editor's state, and the problems only the browser can see
   * (text that is not JSON, a number that is not one), each with its place like the API's. */
  function buildDocument() {
    const problems = [];
    const add = (where, message, node = null, transition = null) =>
      problems.push({ where, message, node, transition, code: "NOT_VALID_HERE" });
    const integer = (text, where, fallback) => {
      const value = String(text).trim();
      if (value === "") return fallback;
      if (!/^-?\d+$/.test(value)) {
        add(where, `'${value}' is not a whole number`);
        return fallback;
      }
      return Number(value);
    };

    const workflowId = state.workflow_id.trim();
    if (!ID_PATTERN.test(workflowId)) {
      add("workflow_id", workflowId
        ? "use letters, digits and _ . : - (starting with a letter or digit, up to 100 characters)"
        : "give the workflow an id, e.g. paper_review");
    }
    if (!state.name.trim()) add("name", "give the workflow a name");

    const nodes = state.nodes.map((node) => nodeDocument(node, add));
    const transitions = state.transitions.map((transition) => {
      const document = { from: transition.from, to: transition.to };
      if (transition.condition.trim()) document.condition = transition.condition.trim();
      if (transition.on_success) document.on_success = transition.on_success;
      if (transition.on_failure) document.on_failure = transition.on_failure;
      return document;
    });
    const handling = state.error_handling;
    const document = {
      workflow_id: workflowId,
      name: state.name.trim(),
      topology: state.topology,
      nodes,
      transitions,
      error_handling: {
        retry_count: integer(handling.retry_count, "error_handling.retry_count", 0),
        fallback_agent: handling.fallback_agent.trim() || null,
        escalate_to: handling.escalate_to.trim() || null,
      },
      limits: {},
    };
    const maxSteps = integer(state.limits.max_steps, "limits.max_steps", null);
    const maxWall = integer(state.limits.max_wall_seconds, "limits.max_wall_seconds", null);
    if (maxSteps !== null) document.limits.max_steps = maxSteps;
    if (maxWall !== null) document.limits.max_wall_seconds = maxWall;
    for (const name of ["max_cost", "max_node_cost"]) {
      const value = String(state.limits[name]).trim().replace(/^\$\s*/, "");
      if (value === "") continue;
      if (DOLLARS.test(value)) document.limits[name] = value; // text, never a float: kept exact
      else add(`limits.${name}`, `'${value}' is not an amount of USD: digits, with up to six after the point (e.g. 0.50)`);
    }
    if (state.limits.on_budget) document.limits.on_budget = state.limits.on_budget;
    document.domain = state.domain.trim();
    if (state.description) document.description = state.description;
    const gate = {};
    GATE_SCORES.forEach((score) => {
      const value = state.gate[score].trim();
      if (value === "") return;
      const number = Number(value);
      if (!Number.isFinite(number) || number < 0 || number > 1) {
        add(`evaluation.quality_gate.${score}`, `'${value}' is not a number from 0 to 1`);
      } else {
        gate[score] = number;
      }
    });
    document.evaluation = {
      judge_agent: state.judge_agent.trim() || null,
      quality_gate: Object.keys(gate).length ? gate : null,
    };
    const inputSchema = inputSchemaDocument(add);
    if (inputSchema) document.input_schema = inputSchema;
    return { document, problems };
  }

  /** The input_schema of the Inputs rows; none when no input is declared. */
  function inputSchemaDocument(add) {
    if (!state.inputs.rows.length) return null;
    const properties = {};
    const required = [];
    state.inputs.rows.forEach((row, index) => {
      const name = row.name.trim();
      const where = inputWhere(row, index);
      if (!name) return add(where, "give the input a name, e.g. repository");
      if (name in properties) return add(where, `two inputs are named '${name}'`);
      const type = row.type === KEPT_TYPE ? row.keptType : row.type;
      const spec = { ...(type ? { type } : {}), ...row.rest };
      if (row.description.trim()) spec.description = row.description.trim();
      if (row.defaultText.trim() !== "") {
        const fallback = inputDefault(row.defaultText, type);
        if ("problem" in fallback) add(`${where}.default`, fallback.problem);
        else spec.default = fallback.value;
      }
      properties[name] = spec;
      if (row.required) required.push(name);
      return undefined;
    });
    return { ...state.inputs.rest, type: "object", properties, ...(required.length ? { required } : {}) };
  }

  const inputWhere = (row, index) => (row.name.trim() ? `input_schema.properties.${row.name.trim()}` : `input_schema.properties.#${index}`);

  /** A default as typed, read as its input's type takes it: text as it is, anything else as JSON. */
  function inputDefault(text, type) {
    if (type === "string") return { value: text };
    try {
      const value = JSON.parse(text);
      const fits = { number: typeof value === "number", integer: Number.isInteger(value), boolean: typeof value === "boolean",
        array: Array.isArray(value), object: isObject(value) };
      if (type in fits && !fits[type]) return { problem: `'${text.trim()}' is not ${DEFAULT_EXPECTED[type]}` };
      return { value };
    } catch (error) {
      if (typeof type !== "string" || !type) return { value: text }; // any type: text that is not JSON is text
      return { problem: `is not JSON (${error.message})` };
    }
  }

  function nodeDocument(node, add) {
    const base = `nodes[${node.id}]`;
    const problem = (where, message) => add(where, message, node.id);
    const input_mapping = {};
    node.inputs.forEach((row, index) => {
      const name = row.name.trim();
      if (!name && !row.value.trim()) return;
      if (!name) return problem(`${base}.input_mapping.#${index}`, "this input has a value but no name");
      if (RESERVED_INPUTS.includes(name)) {
        return problem(`${base}.input_mapping.${name}`, `'${name}' has its own field below; name the input otherwise`);
      }
      if (name in input_mapping) return problem(`${base}.input_mapping.${name}`, `two inputs are named '${name}'`);
      if (!row.json) {
        input_mapping[name] = row.value; // as typed: a constant's spaces are its own
        return undefined;
      }
      try {
        input_mapping[name] = JSON.parse(row.value);
      } catch (error) {
        problem(`${base}.input_mapping.${name}`, `this constant is not JSON (${error.message})`);
      }
      return undefined;
    });
    const references = parseJson(node.referencesText, Array.isArray, "a JSON list of references, e.g. " +
      '[{"ref_type": "task_output", "task_id": "scholar", "path": "$.atoms"}]');
    if (references.error) problem(`${base}.input_mapping.data_references`, references.error);
    else if (references.value !== undefined) input_mapping.data_references = references.value;
    const transfer = parseJson(node.transferText, isObject, 'a JSON object, e.g. {"mode": "summary", "max_tokens": 5000}');
    if (transfer.error) problem(`${base}.input_mapping.transfer_config`, transfer.error);
    else if (transfer.value !== undefined) input_mapping.transfer_config = transfer.value;

    const output_mapping = {};
    node.outputs.forEach((row, index) => {
      const name = row.name.trim();
      if (!name && !row.value.trim()) return;
      if (!name) return problem(`${base}.output_mapping.#${index}`, "this output has a JSONPath but no state key");
      if (name in output_mapping) return problem(`${base}.output_mapping.${name}`, `two outputs set the key '${name}'`);
      output_mapping[name] = row.value;
      return undefined;
    });

    let ratio = Number(String(node.compress_ratio).trim());
    if (String(node.compress_ratio).trim() === "" || !Number.isFinite(ratio)) {
      problem(`${base}.compress_ratio`, "a number from 0.05 to 1.0 (the share of the dependencies' outputs kept)");
      ratio = 0.3;
    }
    const document = {
      id: node.id,
      agent_ref: node.agent_ref.trim(),
      input_mapping,
      output_mapping,
      compress: node.compress,
      compress_model: node.compress_model.trim() || "flash",
      compress_ratio: ratio,
    };
    if (node.output_schema.trim()) document.output_schema = node.output_schema.trim();
    const gate = parseJson(node.gateText, isObject, 'a JSON object, e.g. {"prompt": "Publish this?", '
      + '"deciders": {"roles": ["approver"]}}, or nothing for a node that is not a gate');
    if (gate.error) problem(`${base}.gate`, gate.error);
    else if (gate.value !== undefined) document.gate = gate.value;
    if (node.subworkflow) document.subworkflow = subworkflowDocument(node.subworkflow, base, problem);
    const position = cy && cy.getElementById(node.key).length ? cy.getElementById(node.key).position() : node.layout;
    if (position) document.layout = { x: Math.round(position.x), y: Math.round(position.y) };
    return document;
  }

  /** A sub-workflow node's `subworkflow`: the workflow it runs, and its version when one is
   * pinned (left out: the latest when the child starts). */
  function subworkflowDocument(child, base, problem) {
    const document = { workflow_ref: child.workflow_ref.trim() };
    if (!document.workflow_ref) problem(`${base}.subworkflow.workflow_ref`, "pick the workflow this node runs");
    const version = String(child.version).trim();
    if (version !== "") {
      if (/^[1-9]\d{0,8}$/.test(version)) document.version = Number(version);
      else problem(`${base}.subworkflow.version`, `'${version}' is not a version number (1, 2, …); empty: the latest`);
    }
    return document;
  }

  function isObject(value) {
    return value !== null && typeof value === "object" && !Array.isArray(value);
  }

  function parseJson(text, accept, expected) {
    if (!text.trim()) return { value: undefined };
    let value;
    try {
      value = JSON.parse(text);
    } catch (error) {
      return { error: `not JSON: ${error.message}` };
    }
    return accept(value) ? { value } : { error: `expected ${expected}` };
  }

  // -- the graph ----------------------------------------------------------------------------

  cytoscape.use(cytoscapeDagre);
  const GRAPH_STYLE = [
    { selector: "node", style: {
      shape: "round-rectangle", width: 168, height: 54, "background-color": "#ffffff",
      "border-width": 2, "border-color": "#2f6fdb", label: "data(label)", "text-wrap": "wrap",
      "text-max-width": 156, "text-valign": "center", "text-halign": "center", "font-size": 13,
      color: "#1d2430", "font-family": "system-ui, sans-serif",
    } },
    { selector: "node.start", style: { "border-width": 3, "border-color": "#2c8a4b" } },
    { selector: "node.gate", style: { shape: "hexagon", width: 200, height: 70, "background-color": "#f5f0fd", "border-color": "#7b4fc9" } },
    // A sub-workflow node: a folder (a box with a tab on its top left; polygon points run from -1 to 1).
    { selector: "node.workflow", style: { shape: "polygon", "shape-polygon-points": "-1 -1 -0.25 -1 -0.15 -0.72 1 -0.72 1 1 -1 1",
      width: 210, height: 74, "text-max-width": 196, "text-margin-y": 5, "background-color": "#eef6fa", "border-color": "#2f6f8f" } },
    { selector: "node.warned", style: { "border-color": "#c98a12", "background-color": "#fff8e6", "border-width": 3 } },
    { selector: "node.invalid", style: { "border-color": "#c23b3b", "background-color": "#fff1f1", "border-width": 3 } },
    { selector: "node.chosen", style: { "overlay-color": "#2f6fdb", "overlay-opacity": 0.12, "overlay-padding": 6 } },
    { selector: "node.source", style: { "border-style": "dashed", "border-width": 4 } },
    { selector: "edge", style: {
      width: 2, "curve-style": "bezier", "target-arrow-shape": "triangle", "line-color": "#5d6878",
      "target-arrow-color": "#5d6878", "arrow-scale": 1.1, label: "data(label)", "font-size": LABEL_PX,
      "text-wrap": "wrap", "text-max-width": 140, "text-background-color": "#ffffff",
      "text-background-opacity": 0.9, "text-background-padding": 2, color: "#1d2430",
      "text-rotation": "none", "control-point-step-size": 50,
    } },
    { selector: "edge.order", style: { "line-style": "dashed", "line-color": "#9aa4b2", "target-arrow-color": "#9aa4b2" } },
    { selector: "edge.reference", style: { "line-style": "dotted", width: 2.5, "line-color": "#1f8a8a", "target-arrow-color": "#1f8a8a" } },
    { selector: "edge.route", style: { "line-style": "dashed", "line-color": "#c98a12", "target-arrow-color": "#c98a12", color: "#8a5c00" } },
    { selector: "edge.warned", style: { "line-color": "#c98a12", "target-arrow-color": "#c98a12", width: 3, "line-style": "solid" } },
    { selector: "edge.invalid", style: { "line-color": "#c23b3b", "target-arrow-color": "#c23b3b", color: "#8d2424" } },
    { selector: "edge.chosen", style: { width: 4, "overlay-color": "#2f6fdb", "overlay-opacity": 0.15, "overlay-padding": 4 } },
  ];

  const cy = cytoscape({
    container: $("cy"),
    style: GRAPH_STYLE,
    elements: [],
    minZoom: MIN_ZOOM,
    maxZoom: 2.5,
    boxSelectionEnabled: false,
    autounselectify: true, // the editor keeps its own selection (class "chosen")
  });

  function nodeLabel(node) {
    const start = state.topology === "state_machine" && state.nodes[0] === node ? "▶ " : "";
    const child = node.subworkflow ? `\n${workflowLine(node.subworkflow)}` : "";
    return `${start}${node.id}${child}\n${node.agent_ref || "(no agent)"}${isGate(node) ? "\na person decides" : ""}`;
  }

  /** The line under a sub-workflow node's id: the workflow it runs, and its version if pinned. */
  function workflowLine(child) {
    const version = String(child.version).trim();
    return `runs ${child.workflow_ref.trim() || "(no workflow)"}${version ? ` v${version}` : ""}`;
  }

  /** Whether a node is a gate (a person's step): its gate field holds something. */
  function isGate(node) {
    return node.gateText.trim() !== "";
  }

  function transitionLabel(transition) {
    const lines = [];
    if (transition.condition.trim()) lines.push(shorten(transition.condition.trim(), 60));
    if (transition.on_success && transition.on_success !== "continue") lines.push(`on success: ${transition.on_success}`);
    if (transition.on_failure) lines.push(`on failure: ${transition.on_failure}`);
    return lines.join("\n");
  }

  function shorten(text, length) {
    return text.length > length ? `${text.slice(0, length - 1)}…` : text;
  }

  function drawNodes() {
    const keys = new Set(state.nodes.map((node) => node.key));
    cy.nodes().filter((element) => !keys.has(element.id())).remove();
    state.nodes.forEach((node, index) => {
      const element = cy.getElementById(node.key);
      if (element.length) {
        element.data("label", nodeLabel(node));
      } else {
        cy.add({ group: "nodes", data: { id: node.key, label: nodeLabel(node) },
                 position: node.layout ? { ...node.layout } : { x: 120 + index * 220, y: 120 } });
      }
      cy.getElementById(node.key).toggleClass("start", state.topology === "state_machine" && index === 0);
      cy.getElementById(node.key).toggleClass("gate", isGate(node));
      cy.getElementById(node.key).toggleClass("workflow", Boolean(node.subworkflow) && !isGate(node));
    });
    $("canvas-empty").hidden = state.nodes.length > 0;
  }

  /** Edges: each transition (selectable), where its on_success/on_failure name a node an
   * edge there too, and the dependencies the topology adds (engine/validation.py
   * dependency_edges): the order of a `seq`, and the task_output references a node reads. */
  function drawEdges() {
    cy.edges().remove();
    const keyOf = (id) => (nodeById(id) || {}).key;
    const covered = new Set();
    state.transitions.forEach((transition) => {
      const source = keyOf(transition.from);
      const target = keyOf(transition.to);
      if (source && target) {
        covered.add(`${source}>${target}`);
        cy.add({ group: "edges", classes: "transition",
                 data: { id: transition.key, source, target, label: transitionLabel(transition), transition: transition.key } });
      }
      for (const [field, word] of [["on_success", "on success"], ["on_failure", "on failure"]]) {
        const routed = keyOf(transition[field]);
        if (source && routed) {
          cy.add({ group: "edges", classes: "route",
                   data: { id: `${transition.key}-${field}`, source, target: routed, label: word, transition: transition.key } });
        }
      }
    });
    const derived = new Map();
    if (state.topology === "seq") {
      for (let index = 1; index < state.nodes.length; index += 1) {
        derived.set(`${state.nodes[index - 1].key}>${state.nodes[index].key}`, "order");
      }
    }
    for (const node of state.nodes) {
      for (const id of outputsRead(node)) {
        const source = keyOf(id);
        if (source) derived.set(`${source}>${node.key}`, "reference");
      }
    }
    for (const [pair, kind] of derived) {
      if (covered.has(pair)) continue;
      const [source, target] = pair.split(">");
      cy.add({ group: "edges", classes: kind, data: { id: `${kind}-${pair}`, source, target, label: "" } });
    }
    markChosen();
    markProblems();
  }

  /** The ids of the nodes whose output `node` reads: its named inputs over `$.nodes.<id>`
   * and its task_output references (drawn as "reads the output of" edges). */
  function outputsRead(node) {
    const read = new Set();
    for (const row of node.inputs) {
      const match = row.json ? null : row.value.trim().match(NODE_PATH);
      if (match) read.add(match[1] || match[2]);
    }
    for (const reference of node.references) {
      if (reference && reference.ref_type === "task_output") read.add(reference.task_id);
    }
    read.delete(node.id);
    return read;
  }

  /** Whether `target` reads anything of `source`'s output, by the server's rule
   * (engine/dataflow.py reads_from): directly, by compressing what it waits for (`source`
   * among it), or through a state key `source` sets. */
  function readsFrom(target, source) {
    if (outputsRead(target).has(source.id)) return true;
    const readsEveryNode = (row) => !row.json && /^\$\.nodes(?=[.[]|$)/.test(row.value.trim()) && !NODE_PATH.test(row.value.trim());
    if (target.inputs.some(readsEveryNode)) return true;
    const previous = state.nodes[state.nodes.indexOf(target) - 1];
    const waitsFor = state.topology === "dag" || (state.topology === "seq" && previous === source);
    if (target.compress && waitsFor) return true;
    const written = new Set(source.outputs.map((row) => row.name.trim()).filter(Boolean));
    return target.inputs.some((row) => {
      const match = row.json ? null : row.value.trim().match(STATE_PATH);
      if (!match) return false;
      const key = match[1] || match[2];
      return written.size > 0 && (!key || written.has(key));
    });
  }

  /** Whether the transition `from` → `to` passes nothing: a seq or a dag waits for a node
   * whose output it then never reads (what the server warns of as EDGE_UNUSED). */
  function passesNothing(source, target) {
    return ["seq", "dag"].includes(state.topology) && !source.gateText.trim() && !readsFrom(target, source);
  }

  function dagre() {
    cy.layout({ name: "dagre", rankDir: "LR", nodeSep: 60, rankSep: 150, edgeSep: 30, fit: false, animate: false }).run();
  }

  /** The whole graph laid out again, left to right ("Auto layout", or a workflow whose nodes
   * have no saved place): every node is the editor's to place again. */
  function runLayout() {
    if (!state.nodes.length) return;
    dagre();
    for (const node of state.nodes) node.placed = "auto";
    fitGraph();
  }

  /** After a connection: the nodes the editor placed are laid out again with the new edge,
   * and the nodes the person placed stay where they are (the laid-out nodes are shifted by
   * how far, on average, the layout would have moved those). */
  function layoutKeepingPlaced() {
    const auto = state.nodes.filter((node) => node.placed === "auto");
    if (!auto.length) return;
    const kept = state.nodes.filter((node) => node.placed !== "auto")
      .map((node) => ({ element: cy.getElementById(node.key), at: { ...cy.getElementById(node.key).position() } }));
    dagre();
    const shift = { x: 0, y: 0 };
    for (const { element, at } of kept) {
      shift.x += (at.x - element.position().x) / kept.length;
      shift.y += (at.y - element.position().y) / kept.length;
    }
    for (const node of auto) {
      const element = cy.getElementById(node.key);
      element.position({ x: element.position().x + shift.x, y: element.position().y + shift.y });
    }
    for (const { element, at } of kept) element.position(at);
    const extent = cy.extent();
    const box = cy.nodes().boundingBox();
    if (box.x1 < extent.x1 || box.x2 > extent.x2 || box.y1 < extent.y1 || box.y2 > extent.y2) fitGraph();
  }

  /** The whole graph in view, but never so small that its labels are under 10 px: a graph
   * too large for that is shown from its start (left), centred where it fits, and panned. */
  function fitGraph() {
    if (!state.nodes.length) return;
    cy.fit(undefined, 40);
    if (cy.zoom() > 1.2) {
      cy.zoom(1.2);
      cy.center();
    }
    if (cy.zoom() > MIN_ZOOM + 1e-6) return;
    const zoom = cy.zoom();
    const box = cy.elements().boundingBox();
    const place = (size, low, extent) => (extent * zoom + 80 <= size ? (size - extent * zoom) / 2 - low * zoom : 40 - low * zoom);
    cy.pan({ x: place(cy.width(), box.x1, box.w), y: place(cy.height(), box.y1, box.h) });
  }

  // -- selection ------------------------------------------------------------------------------

  function select(selection) {
    ui.selected = selection;
    markChosen();
    renderPanel();
    const deleteButton = $("delete-button");
    if (deleteButton) deleteButton.disabled = !selection;
  }

  function markChosen() {
    cy.elements().removeClass("chosen");
    if (!ui.selected) return;
    if (ui.selected.kind === "node") cy.getElementById(ui.selected.key).addClass("chosen");
    else cy.edges().filter((edge) => edge.data("transition") === ui.selected.key).addClass("chosen");
  }

  // In a narrow window the settings sit under the graph: a click on the graph brings them into view.
  function revealPanel() {
    const panel = $("editor-panel");
    if (panel.getBoundingClientRect().top > window.innerHeight - 80) panel.scrollIntoView({ block: "start" });
  }

  cy.on("tap", "node", (event) => {
    if (ui.connecting) connectTo(event.target.id());
    else { select({ kind: "node", key: event.target.id() }); revealPanel(); }
  });
  cy.on("tap", "edge", (event) => {
    const key = event.target.data("transition");
    if (key && !ui.connecting) { select({ kind: "transition", key }); revealPanel(); }
  });
  cy.on("tap", (event) => {
    if (event.target !== cy) return;
    if (ui.connecting) dropSource(); // connecting goes on, from the next node clicked
    else select(null);
  });
  cy.on("dragfree", "node", (event) => {
    const node = nodeByKey(event.target.id());
    if (node) node.placed = "hand"; // kept where the person put it when the graph is laid out again
    if (editable) changed({ validate: false });
  });
  cy.on("pan zoom resize position", scheduleBadges);
  // Cytoscape keeps where its canvas is on the page; whatever moves it (a message above,
  // a longer panel) must tell it, or clicks land beside the nodes.
  new ResizeObserver(() => cy.resize()).observe(document.body);

  // -- editing ---------------------------------------------------------------------------------

  /** Every edit ends here: the page knows it has unsaved changes, and the server checks
   * the new document shortly after the person stops typing. */
  function changed({ validate = true, edges = false, labels = false } = {}) {
    state.changes += 1;
    if (labels) drawNodes();
    if (edges) drawEdges();
    updateDirty();
    if (validate) scheduleValidate();
  }

  function isDirty() {
    return editable && (state.isNew || state.changes !== state.savedChanges);
  }

  function updateDirty() {
    setStatus(isDirty() ? (state.isNew ? "Not saved yet" : "Unsaved changes") : "", isDirty() ? "dirty" : "");
    const run = $("run-button");
    if (run) {
      run.disabled = state.isNew || isDirty();
      run.title = run.disabled ? "Save the workflow before running it: a run uses the saved workflow" : "Start a run";
    }
  }

  function setStatus(text, kind) {
    const status = $("editor-status");
    status.textContent = text;
    status.className = `editor-status small ${kind || "muted"}`;
  }

  function uniqueNodeId(agentId) {
    let base = agentId.toLowerCase().replace(/[^a-z0-9_.:\-]/g, "_").slice(0, 90);
    if (!/^[a-z0-9]/.test(base)) base = `node_${base}`;
    if (!nodeById(base)) return base;
    for (let number = 2; ; number += 1) {
      if (!nodeById(`${base}_${number}`)) return `${base}_${number}`;
    }
  }

  /** The agents `text` names: the one whose id or name it is (any case), else every agent
   * whose id or name holds it. */
  function findAgents(text) {
    const wanted = text.trim();
    if (!wanted) return [];
    if (ui.agentsById.has(wanted)) return [ui.agentsById.get(wanted)];
    const lower = wanted.toLowerCase();
    const exact = ui.agents.filter((agent) => agent.agent_id.toLowerCase() === lower || agent.name.toLowerCase() === lower);
    if (exact.length) return exact.slice(0, 1);
    return ui.agents.filter((agent) => agent.agent_id.toLowerCase().includes(lower) || agent.name.toLowerCase().includes(lower));
  }

  function addNode() {
    const search = $("agent-search");
    const wanted = search.value.trim();
    const found = findAgents(wanted);
    if (found.length > 1) {
      hintWith(`${found.length} agents match “${wanted}”: pick one `, ...found.slice(0, 12).map((agent) =>
        el("button", { type: "button", class: "small-button agent-choice", "data-agent-choice": agent.agent_id,
          onclick: () => addAgentNode(agent) }, `${agent.name} (${agent.agent_id})`)),
      found.length > 12 ? ` and ${found.length - 12} more: type more of the name.` : "");
      return;
    }
    if (!found.length) {
      search.classList.add("invalid");
      hint(wanted
        ? `No agent “${wanted}”: type part of its id or name.`
        : "Pick an agent first: type part of its id or name.", true);
      search.focus();
      return;
    }
    addAgentNode(found[0]);
  }

  function addAgentNode(agent) {
    const search = $("agent-search");
    search.classList.remove("invalid");
    search.value = "";
    const node = nodeFromDocument({ id: uniqueNodeId(agent.agent_id), agent_ref: agent.agent_id });
    placeNode(node);
    const next = state.nodes.length < 2 ? "Add another, then connect them."
      : ui.connecting ? "Connect it: click the node a transition starts from, then the node it leads to."
        : "Press Connect, then click two nodes to link them.";
    hint(`Added “${node.id}” (${agent.agent_id}). ${next}`);
    select({ kind: "node", key: node.key });
    changed();
  }

  /** Add `node` to the graph, right of the rightmost node, and keep it in view. */
  function placeNode(node) {
    node.layout = newNodePosition();
    state.nodes.push(node);
    drawNodes();
    drawEdges();
    const element = cy.getElementById(node.key);
    const extent = cy.extent();
    const { x, y } = element.position();
    if (state.nodes.length === 1) {
      cy.zoom(1);
      cy.center(element);
    } else if (x < extent.x1 || x > extent.x2 || y < extent.y1 || y > extent.y2) {
      fitGraph();
    }
  }

  /** A node that runs the workflow picked in the toolbar (at the version picked, or its
   * latest), with the first agent on record for it: the person may change either. */
  function addWorkflowNode() {
    const pick = $("workflow-pick");
    const workflowRef = pick.value;
    if (!workflowRef) {
      pick.classList.add("invalid");
      hint("Pick a workflow first: the node runs it as a child run.", true);
      pick.focus();
      return;
    }
    const agent = defaultAgent();
    if (!agent) {
      hint("No agent is known yet: a node names the agent on record for it. Try again once the agents are read.", true);
      return;
    }
    pick.classList.remove("invalid");
    const version = $("workflow-version-pick").value;
    const node = nodeFromDocument({ id: uniqueNodeId(workflowRef), agent_ref: agent.agent_id,
      subworkflow: { workflow_ref: workflowRef, ...(version ? { version: Number(version) } : {}) } });
    placeNode(node);
    hint(`Added “${node.id}”: it runs ${workflowRef} (${version ? `version ${version}` : "its latest version"}) as a child run; `
      + `its agent on record is ${agent.agent_id}. Give it inputs: they are the child run's input.`);
    select({ kind: "node", key: node.key });
    changed();
  }

  /** The agent on record for a new sub-workflow node (never called): the first active one. */
  function defaultAgent() {
    return ui.agents.find((agent) => agent.status === "active") || ui.agents[0] || null;
  }

  function newNodePosition() {
    if (!state.nodes.length) return { x: 150, y: 150 };
    let rightmost = null;
    cy.nodes().forEach((element) => {
      if (!rightmost || element.position().x > rightmost.position().x) rightmost = element;
    });
    return { x: rightmost.position().x + 240, y: rightmost.position().y };
  }

  function deleteSelected() {
    if (!editable || !ui.selected) return;
    if (ui.selected.kind === "node") {
      const node = nodeByKey(ui.selected.key);
      if (!node) return;
      state.nodes = state.nodes.filter((other) => other !== node);
      // Transitions from or to it would dangle; a route to it falls back to the default.
      state.transitions = state.transitions.filter((t) => t.from !== node.id && t.to !== node.id);
      for (const transition of state.transitions) {
        if (transition.on_success === node.id) transition.on_success = "";
        if (transition.on_failure === node.id) transition.on_failure = "";
      }
      hint(`Deleted node “${node.id}” and its transitions.`);
    } else {
      state.transitions = state.transitions.filter((t) => t.key !== ui.selected.key);
      hint("Deleted the transition.");
    }
    drawNodes();
    drawEdges();
    select(null);
    changed();
  }

  /** Connect mode: on until Esc or the Connect button; each source click then target click
   * adds a transition. */
  function setConnecting(on) {
    ui.connecting = on;
    dropSource();
    const button = $("connect-button");
    if (button) {
      button.setAttribute("aria-pressed", String(on));
      button.classList.toggle("active", on);
    }
    $("cy").classList.toggle("connecting", on);
    if (!on) hint("");
  }

  /** Forget the half-made link (a click beside the nodes); connecting goes on. */
  function dropSource() {
    ui.connectFrom = null;
    cy.nodes().removeClass("source");
    if (ui.connecting) hint(connectingHint());
  }

  function connectingHint() {
    if (!state.nodes.length) return "Add nodes first, then connect them.";
    if (ui.connectFrom && nodeByKey(ui.connectFrom)) {
      return `Connect from “${nodeByKey(ui.connectFrom).id}”: now click the node it leads to (Esc or Connect to stop).`;
    }
    return "Connect: click the node the transition starts from (Esc or Connect to stop).";
  }

  function connectTo(key) {
    if (!ui.connectFrom) {
      ui.connectFrom = key;
      cy.getElementById(key).addClass("source");
      hint(connectingHint());
      return;
    }
    const from = nodeByKey(ui.connectFrom).id;
    ui.connectFrom = null;
    cy.nodes().removeClass("source");
    addTransition(from, nodeByKey(key).id);
  }

  /** What a new transition means in this topology, and what to do next. */
  function connectedHint(from, to) {
    const data = !passesNothing(nodeById(from), nodeById(to)) ? "" : ` “${to}” reads nothing of “${from}” yet: add the input in the transition's settings.`;
    const more = ui.connecting ? " Click the next source node, or Esc to stop connecting." : "";
    if (state.topology === "state_machine") {
      return `Connected “${from}” → “${to}”: after “${from}” the run goes on to “${to}”. `
        + `Set a condition, or what happens on failure, in its settings.${more}`;
    }
    if (state.topology === "par") {
      return `Connected “${from}” → “${to}”, but a par runs all its nodes at once: make it a dag for “${to}” to wait for “${from}”.${more}`;
    }
    if (state.topology === "seq") {
      return `Connected “${from}” → “${to}”: in a seq the order of the nodes decides; the transition may set what happens on failure.${data}${more}`;
    }
    return `Connected “${from}” → “${to}”: “${to}” now waits for “${from}”.${data}${more}`;
  }

  function addTransition(from, to) {
    const transition = transitionFromDocument({ from, to });
    state.transitions.push(transition);
    drawEdges();
    layoutKeepingPlaced();
    select({ kind: "transition", key: transition.key });
    hint(connectedHint(from, to));
    changed();
  }

  /** A named input of `target` reading the output of `source` (`$.nodes.<source>`). */
  function addReadingInput(target, source, name) {
    target.inputs.push({ name, value: `$.nodes.${source.id}`, json: false });
    changed({ edges: true });
    renderPanel();
    hint(`“${target.id}” reads the output of “${source.id}” as its input “${name}”.`);
  }

  /** A name for a new input of `node`: `wanted`, or `wanted_2` … when it is taken. */
  function freeInputName(node, wanted) {
    const taken = new Set(node.inputs.map((row) => row.name.trim()));
    if (!taken.has(wanted)) return wanted;
    for (let number = 2; ; number += 1) {
      if (!taken.has(`${wanted}_${number}`)) return `${wanted}_${number}`;
    }
  }

  function renameNode(node, newId) {
    const oldId = node.id;
    node.id = newId;
    for (const transition of state.transitions) {
      for (const field of ["from", "to", "on_success", "on_failure"]) {
        if (transition[field] === oldId) transition[field] = newId;
      }
    }
    // Named inputs that read it follow ($.nodes.<id>…), and references to it, where the text
    // the person wrote is JSON (text that is not is left as it is: it is theirs to finish).
    for (const other of state.nodes) {
      for (const row of other.inputs) {
        const match = row.json ? null : row.value.match(NODE_PATH);
        if (match && (match[1] || match[2]) === oldId) {
          row.value = `${match[0].startsWith("$.nodes[") ? `$.nodes['${newId}']` : `$.nodes.${newId}`}${row.value.slice(match[0].length)}`;
        }
      }
    }
    for (const other of state.nodes) {
      const parsed = parseJson(other.referencesText, Array.isArray, "");
      if (!parsed.value) continue;
      let touched = false;
      for (const reference of parsed.value) {
        if (reference && reference.ref_type === "task_output" && reference.task_id === oldId) {
          reference.task_id = newId;
          touched = true;
        }
      }
      if (touched) {
        other.references = parsed.value;
        other.referencesText = JSON.stringify(parsed.value, null, 2);
      }
    }
    if (state.savedNodeIds.has(oldId)) state.savedNodeIds.delete(oldId);
  }

  function moveNode(node, step) {
    const index = state.nodes.indexOf(node);
    const target = index + step;
    if (target < 0 || target >= state.nodes.length) return;
    state.nodes.splice(index, 1);
    state.nodes.splice(target, 0, node);
    changed({ labels: true, edges: true });
    renderPanel();
  }

  function hint(text, isError = false) {
    hintWith(text);
    $("agent-search-help").classList.toggle("error-text", isError);
  }

  /** A hint with controls in it (agents to pick from). It says what the last action did,
   * so the next action clears it (`clearStaleHint`). */
  function hintWith(...parts) {
    const element = $("agent-search-help");
    element.replaceChildren(...parts.filter((part) => part !== null && part !== ""));
    element.classList.remove("error-text");
  }

  /** The next action (a click or a key anywhere but in the hint itself) clears what the
   * last one said; in connect mode, what to click next stays. */
  function clearStaleHint(event) {
    if ($("agent-search-help").contains(event.target)) return;
    if (event.type === "keydown" && ["Shift", "Control", "Alt", "Meta", "Tab"].includes(event.key)) return;
    hint(ui.connecting ? connectingHint() : "");
  }

  // -- the side panel ---------------------------------------------------------------------------

  function renderPanel() {
    ui.panelFields = [];
    const panel = $("editor-panel");
    let content;
    if (ui.selected && ui.selected.kind === "node" && nodeByKey(ui.selected.key)) content = nodePanel(nodeByKey(ui.selected.key));
    else if (ui.selected && ui.selected.kind === "transition" && transitionByKey(ui.selected.key)) {
      content = transitionPanel(transitionByKey(ui.selected.key));
    } else content = workflowPanel();
    panel.replaceChildren(...content.filter((part) => part !== null));
    showFieldProblems();
  }

  /** A labelled control with a place under it for the problems that concern `where`
   * (a string or a function, so a renamed input is still found). */
  function field(labelText, control, where, help) {
    const message = el("div", { class: "field-problem" });
    if (where) ui.panelFields.push({ where, control, message });
    if (!editable) {
      if (["INPUT", "TEXTAREA"].includes(control.tagName) && control.type !== "checkbox") control.readOnly = true;
      else control.disabled = true;
    }
    return el("div", { class: "field" },
      el("label", {}, labelText, control),
      help ? el("p", { class: "help small muted" }, help) : null,
      message);
  }

  function textInput(value, onInput, attributes = {}) {
    return el("input", { type: "text", value, spellcheck: "false", oninput: (event) => onInput(event.target.value), ...attributes });
  }

  function backButton() {
    return el("button", { type: "button", class: "link-button small", onclick: () => select(null) }, "← Workflow settings");
  }

  function workflowPanel() {
    const topology = el("select", { onchange: (event) => {
      state.topology = event.target.value;
      const subtitle = $("editor-topology");
      if (subtitle) subtitle.textContent = state.topology;
      help.textContent = TOPOLOGY_HELP[state.topology];
      changed({ labels: true, edges: true });
    } }, ...["seq", "par", "dag", "state_machine"].map((value) =>
      el("option", { value, selected: value === state.topology }, value)));
    const help = el("p", { class: "help small muted" }, TOPOLOGY_HELP[state.topology]);
    const idInput = textInput(state.workflow_id, (value) => {
      state.workflow_id = value;
      ui.saveProblems = ui.saveProblems.filter((problem) => problem.where !== "workflow_id");
      changed();
    }, { readonly: !state.isNew, placeholder: "e.g. paper_review", "data-field": "workflow_id" });
    const handling = state.error_handling;
    const limits = state.limits;
    const nodes = state.nodes.length
      ? el("ul", { class: "node-index" }, ...state.nodes.map((node) => el("li", {},
        el("button", { type: "button", class: "link-button mono", onclick: () => select({ kind: "node", key: node.key }) }, node.id),
        el("span", { class: "small muted" }, ` ${node.agent_ref}`),
        el("span", { class: "badge failed", "data-node-count": node.id, hidden: true }))))
      : el("p", { class: "small muted" }, "No node yet.");
    return [
      el("h2", {}, "Workflow"),
      el("p", { class: "small muted" }, "Click a node or a transition in the graph, or a node below, to see its settings."),
      field("Id", idInput, "workflow_id", state.isNew ? "Letters, digits and _ . : -; it cannot change once saved." : null),
      field("Name", textInput(state.name, (value) => {
        state.name = value;
        const title = $("editor-title");
        if (state.isNew) title.textContent = value.trim() || "New workflow";
        changed();
      }, { placeholder: "e.g. Paper review", "data-field": "name" }), "name"),
      field("Topology", topology, "topology"),
      help,
      inputsSection(),
      el("h3", {}, "Error handling"),
      el("p", { class: "small muted" }, "A failed node is retried, then its work goes to the fallback agent, then the run waits for a person (escalation)."),
      field("Retries per node", el("input", { type: "number", min: "0", max: "10", value: handling.retry_count,
        oninput: (event) => { handling.retry_count = event.target.value; changed(); } }), "error_handling.retry_count"),
      field("Fallback agent", textInput(handling.fallback_agent, (value) => { handling.fallback_agent = value; changed(); },
        { list: "agent-options", placeholder: "none" }), "error_handling.fallback_agent"),
      field("Escalate to", textInput(handling.escalate_to, (value) => { handling.escalate_to = value; changed(); },
        { list: "agent-options", placeholder: "none" }), "error_handling.escalate_to"),
      el("h3", {}, "Limits of a run"),
      el("div", { class: "two" },
        field("Max steps", el("input", { type: "number", min: "1", value: limits.max_steps,
          oninput: (event) => { limits.max_steps = event.target.value; changed(); } }), "limits.max_steps"),
        field("Max seconds", el("input", { type: "number", min: "1", value: limits.max_wall_seconds,
          oninput: (event) => { limits.max_wall_seconds = event.target.value; changed(); } }), "limits.max_wall_seconds")),
      el("h3", {}, "Cost limits"),
      el("p", { class: "small muted" }, "In USD, e.g. 0.50; empty: no limit. Before each model call its cost is bounded "
        + "(its input and the most it may write, priced); a call that could take the run, or a node run, past its limit "
        + "is not made: the node fails with BUDGET_EXCEEDED."),
      el("div", { class: "two" },
        field("Max cost of a run (USD)", textInput(limits.max_cost, (value) => { limits.max_cost = value; changed(); },
          { inputmode: "decimal", placeholder: "no limit", "data-field": "max_cost" }), "limits.max_cost"),
        field("Max cost of a node run (USD)", textInput(limits.max_node_cost, (value) => { limits.max_node_cost = value; changed(); },
          { inputmode: "decimal", placeholder: "no limit", "data-field": "max_node_cost" }), "limits.max_node_cost")),
      field("When a limit is reached", el("select", { "data-field": "on_budget",
        onchange: (event) => { limits.on_budget = event.target.value; changed(); } },
      ...ON_BUDGET.map(([value, label]) => el("option", { value, selected: value === limits.on_budget }, label))),
      "limits.on_budget", "Escalating needs an agent to escalate to, under Error handling."),
      el("h3", {}, "Evaluation"),
      el("p", { class: "small muted" }, "Each run is scored when it ends. A judge agent adds its score to accuracy; "
        + "a quality gate sets the minimum scores a run must reach to pass."),
      field("Knowledge domain", textInput(state.domain, (value) => { state.domain = value; changed(); },
        { placeholder: "e.g. oncology", "data-field": "domain" }), "domain"),
      field("Judge agent", textInput(state.judge_agent, (value) => { state.judge_agent = value; changed(); },
        { list: "agent-options", placeholder: "none", "data-field": "judge_agent" }), "evaluation.judge_agent"),
      el("div", { class: "two" }, ...GATE_SCORES.map((score) => field(`Minimum ${score.replace("_", " ")}`,
        el("input", { type: "number", min: "0", max: "1", step: "0.05", value: state.gate[score], placeholder: "none",
          "data-field": `gate-${score}`,
          oninput: (event) => { state.gate[score] = event.target.value; changed(); } }),
        `evaluation.quality_gate.${score}`))),
      el("h3", {}, `Nodes (${state.nodes.length})`),
      nodes,
    ];
  }

  /** The inputs a run must be given (input_schema): a row per input; "Draft from mappings"
   * adds those the nodes read through $.input paths and are not declared yet. */
  function inputsSection() {
    const rows = state.inputs.rows;
    const list = el("div", { class: "input-rows", "data-inputs": "" });
    rows.forEach((row, index) => list.append(inputRowControls(row, index)));
    if (!rows.length) {
      list.append(el("p", { class: "small muted" }, "None declared: a run may be given any input. "
        + "Declare what the nodes read, and a run missing a required input is refused."));
    }
    const status = el("p", { class: "small muted", "data-inputs-status": "", role: "status" });
    const problem = el("div", { class: "field-problem" });
    ui.panelFields.push({ where: "input_schema", control: list, message: problem });
    return el("section", { class: "inputs-section", "aria-labelledby": "inputs-heading" },
      el("h3", { id: "inputs-heading" }, "Inputs of a run"),
      el("p", { class: "small muted" }, "What a run is given, read in the node mappings as $.input.<name>. "
        + "The run dialog asks for each; a required one left out refuses the run."),
      list, problem,
      editable ? el("div", { class: "row" },
        el("button", { type: "button", class: "small-button", "data-add": "input-row", onclick: () => {
          rows.push(inputRow("", { type: "string" }, true));
          changed();
          renderPanel();
          const names = $("editor-panel").querySelectorAll("[data-inputs] .input-name");
          if (names.length) names[names.length - 1].focus();
        } }, "+ Add an input"),
        el("button", { type: "button", class: "small-button", "data-draft-inputs": "",
          title: "Add the inputs the nodes read through $.input paths that are not declared yet",
          onclick: (event) => draftInputs(event.currentTarget) }, "Draft from mappings")) : null,
      status);
  }

  function inputRowControls(row, index) {
    const where = () => inputWhere(row, index);
    const name = textInput(row.name, (value) => { row.name = value; changed(); },
      { placeholder: "e.g. repository", class: "input-name mono", "data-input-name": "" });
    const type = el("select", { "data-input-type": "", onchange: (event) => { row.type = event.target.value; changed(); } },
      ...INPUT_TYPES.map(([value, label]) => el("option", { value, selected: value === row.type }, label)),
      row.keptType !== undefined ? el("option", { value: KEPT_TYPE, selected: row.type === KEPT_TYPE }, `as written: ${JSON.stringify(row.keptType)}`) : null);
    const required = el("input", { type: "checkbox", checked: row.required, disabled: !editable, "data-input-required": "",
      onchange: (event) => { row.required = event.target.checked; changed(); } });
    const fallback = textInput(row.defaultText, (value) => { row.defaultText = value; changed(); },
      { placeholder: "none", "data-input-default": "" });
    const description = textInput(row.description, (value) => { row.description = value; changed(); },
      { placeholder: "what it is, shown in the run dialog", "data-input-description": "" });
    const kept = Object.keys(row.rest).length
      ? el("p", { class: "help small muted" }, `Also kept as written: ${Object.keys(row.rest).join(", ")}.`) : null;
    return el("div", { class: "input-row", "data-input-row": row.key },
      el("div", { class: "two" }, field("Input name", name, where), field("Type", type, () => `${where()}.type`)),
      el("div", { class: "two" },
        field("Default", fallback, () => `${where()}.default`),
        el("div", { class: "field input-required" }, el("label", { class: "check" }, required, "Required"),
          editable ? el("button", { type: "button", class: "link-button small", "data-remove-input": "",
            onclick: () => { state.inputs.rows.splice(index, 1); changed(); renderPanel(); } }, "Remove this input") : null)),
      field("Description", description, () => `${where()}.description`),
      kept);
  }

  /** Add the inputs the nodes read and are not declared yet, as the server drafts them from
   * the document as it is now (POST …/validate: engine/inputs.py, one rule for both). */
  async function draftInputs(button) {
    const status = () => $("editor-panel").querySelector("[data-inputs-status]");
    button.disabled = true;
    await validateNow();
    button.disabled = false;
    const draft = ui.inferredInputs;
    if (!draft) {
      if (status()) status().textContent = state.nodes.length ? "The mappings could not be read: see Problems." : "Add a node first.";
      return;
    }
    const declared = new Set(state.inputs.rows.map((row) => row.name.trim()));
    const needed = Array.isArray(draft.required) ? draft.required : [];
    const added = Object.entries(draft.properties || {}).filter(([name]) => !declared.has(name));
    state.inputs.rows.push(...added.map(([name, spec]) => inputRow(name, spec, needed.includes(name))));
    if (added.length) changed();
    renderPanel();
    const read = Object.keys(draft.properties || {});
    let said;
    if (!read.length) said = "No node reads a $.input path: nothing to draft.";
    else if (!added.length) said = "Every input the nodes read is declared already.";
    else said = `Added ${added.map(([name]) => name).join(", ")}: give each a type and a description.`;
    if (status()) status().textContent = said;
  }

  function agentSummary(agentId) {
    const agent = ui.agentsById.get(agentId);
    if (!agent) return ui.agents.length ? "No such agent." : "";
    return `${agent.name} · ${agent.type} · v${agent.version} · ${agent.status}`;
  }

  function nodePanel(node) {
    const where = (suffix) => () => `nodes[${node.id}]${suffix}`;
    const idInput = textInput(node.id, () => {}, { "data-field": "node-id", readonly: !editable });
    idInput.addEventListener("change", () => {
      const wanted = idInput.value.trim();
      let refusal = null;
      if (!ID_PATTERN.test(wanted)) refusal = "use letters, digits and _ . : - (starting with a letter or digit)";
      else if (wanted !== node.id && nodeById(wanted)) refusal = `another node is called '${wanted}'`;
      if (refusal) {
        idInput.value = node.id;
        idMessage.textContent = `Not renamed: ${refusal}.`;
        return;
      }
      idMessage.textContent = "";
      if (wanted === node.id) return;
      renameNode(node, wanted);
      changed({ labels: true, edges: true });
      renderPanel();
    });
    const idMessage = el("div", { class: "field-problem" });
    const agentNote = el("p", { class: "help small muted", "data-agent-note": "" }, agentSummary(node.agent_ref));
    const agentInput = textInput(node.agent_ref, (value) => {
      node.agent_ref = value;
      agentNote.textContent = agentSummary(value.trim());
      changed({ labels: true });
    }, { list: "agent-options", "data-field": "agent_ref" });

    const ratio = el("input", { type: "number", min: "0.05", max: "1", step: "0.05", value: node.compress_ratio,
      "data-field": "compress_ratio", oninput: (event) => { node.compress_ratio = event.target.value; changed(); } });
    const compress = el("input", { type: "checkbox", checked: node.compress, "data-field": "compress", disabled: !editable,
      onchange: (event) => { node.compress = event.target.checked; changed(); } });
    const references = el("textarea", { rows: "5", spellcheck: "false", "data-field": "data_references",
      placeholder: '[{"ref_type": "task_output", "task_id": "…", "path": "$.atoms"}]',
      oninput: (event) => {
        node.referencesText = event.target.value;
        const parsed = parseJson(node.referencesText, Array.isArray, "");
        node.references = parsed.value || (parsed.error ? node.references : []);
        changed({ edges: true });
      } }, node.referencesText);
    const transfer = el("textarea", { rows: "3", spellcheck: "false", "data-field": "transfer_config",
      placeholder: '{"mode": "summary", "max_tokens": 5000}',
      oninput: (event) => { node.transferText = event.target.value; changed(); } }, node.transferText);
    const gate = el("textarea", { rows: "6", spellcheck: "false", "data-field": "gate",
      placeholder: '{"prompt": "Publish these release notes?", "deciders": {"roles": ["approver"]}, '
        + '"timeout_seconds": 86400, "on_timeout": "reject"}',
      oninput: (event) => { node.gateText = event.target.value; changed({ labels: true }); } }, node.gateText);

    const parts = [
      el("div", { class: "row panel-head" }, el("h2", { title: `Node ${node.id}` }, "Node ", el("span", { class: "mono" }, node.id)), el("div", { class: "spacer" }), backButton()),
      el("div", { class: "panel-problems", "data-node-problems": node.id }),
      el("div", { class: "panel-warnings", "data-node-warnings": node.id }),
      el("div", { class: "field" }, el("label", {}, "Node id", idInput), idMessage),
      field("Agent", agentInput, where(".agent_ref")),
      agentNote,
      el("h3", {}, "Inputs"),
      el("p", { class: "help small muted" }, "Each named input is a JSONPath over the run — ",
        el("code", {}, "$.input.topic"), ", ", el("code", {}, "$.state.draft"), ", ",
        el("code", {}, "$.nodes.<node_id>.atoms"), " — or a constant."),
      mappingRows(node, "inputs", "input", "JSONPath, e.g. $.input.topic"),
      field("Data references (JSON list: task_output, file, db_query)", references, where(".input_mapping.data_references")),
      field("Transfer config (JSON, optional)", transfer, where(".input_mapping.transfer_config")),
      el("h3", {}, "Outputs"),
      el("p", { class: "help small muted" }, "Keys of the run's state, each set from a JSONPath over this node's output."),
      mappingRows(node, "outputs", "state key", "JSONPath, e.g. $.verdict"),
      field("Output schema (the name of the data type it produces)", textInput(node.output_schema, (value) => {
        node.output_schema = value;
        changed();
      }, { placeholder: "e.g. knowledge_atoms" }), where(".output_schema")),
      ...subworkflowSection(node),
      el("h3", {}, "Gate: a person decides"),
      field("Gate (JSON; empty: not a gate)", gate, where(".gate"), "The run stops at this node until one of the deciders "
        + "approves its named inputs, rejects them or passes on an edit: prompt, decisions (approve, reject, edit), "
        + "deciders {roles, users}, timeout_seconds, on_timeout (approve, reject, escalate). Its agent is never called."),
      el("h3", {}, "Compression of its dependencies' outputs"),
      field("", el("span", { class: "check" }, compress, " compress what the nodes it depends on produced"), where(".compress")),
      el("div", { class: "two" },
        field("Model", textInput(node.compress_model, (value) => { node.compress_model = value; changed(); }), where(".compress_model")),
        field("Ratio (0.05–1.0)", ratio, where(".compress_ratio"))),
      el("h3", {}, "Transitions"),
      connectionsList(node),
    ];
    const index = state.nodes.indexOf(node);
    if (state.topology === "seq") {
      parts.push(el("div", { class: "row" },
        el("span", { class: "small muted" }, `Step ${index + 1} of ${state.nodes.length}`),
        editable ? el("button", { type: "button", disabled: index === 0, onclick: () => moveNode(node, -1) }, "Move earlier") : null,
        editable ? el("button", { type: "button", disabled: index === state.nodes.length - 1, onclick: () => moveNode(node, 1) }, "Move later") : null));
    } else if (state.topology === "state_machine") {
      parts.push(el("div", { class: "row" }, index === 0
        ? el("span", { class: "small muted" }, "▶ The run starts here.")
        : editable ? el("button", { type: "button", onclick: () => moveNode(node, -index) }, "Make it the start node") : null));
    }
    parts.push(el("h3", {}, "Context"), previewLink(node));
    if (editable) {
      parts.push(el("p", {}, el("button", { type: "button", class: "danger", onclick: deleteSelected }, "Delete this node")));
    }
    return parts;
  }

  /** A sub-workflow node's settings: the workflow it runs and its version (the latest, or
   * one pinned), and a button that makes it a plain node again (its agent does the work). */
  function subworkflowSection(node) {
    const child = node.subworkflow;
    if (!child) return [];
    const where = (suffix) => () => `nodes[${node.id}].subworkflow${suffix}`;
    const others = ui.workflows.map((workflow) => workflow.workflow_id);
    const workflowSelect = el("select", { "data-field": "subworkflow-ref", onchange: (event) => {
      child.workflow_ref = event.target.value;
      child.version = "";
      changed({ labels: true });
      renderPanel();
    } },
    ...(child.workflow_ref ? [] : [el("option", { value: "", selected: true }, "pick a workflow")]),
    ...ui.workflows.map((workflow) => el("option", { value: workflow.workflow_id, selected: workflow.workflow_id === child.workflow_ref },
      `${workflow.workflow_id} · ${workflow.name}`)),
    child.workflow_ref && !others.includes(child.workflow_ref)
      ? el("option", { value: child.workflow_ref, selected: true }, `${child.workflow_ref}${ui.workflows.length ? " (not among the stored workflows)" : ""}`) : null);
    const versionSelect = el("select", { "data-field": "subworkflow-version", onchange: (event) => {
      child.version = event.target.value;
      changed({ labels: true });
    } }, ...versionOptions(child.workflow_ref, child.version));
    if (child.workflow_ref && !ui.versions.has(child.workflow_ref)) {
      loadVersions(child.workflow_ref).then(() => {
        if (document.body.contains(versionSelect)) versionSelect.replaceChildren(...versionOptions(child.workflow_ref, child.version));
      }, (error) => hint(`The versions of ${child.workflow_ref} could not be read: ${error.message}`, true));
    }
    const whole = el("div", { class: "field-problem" });
    ui.panelFields.push({ where: where(""), control: workflowSelect, message: whole });
    const href = child.workflow_ref ? config.urls.workflow.replace(config.slots.workflow, encodeURIComponent(child.workflow_ref)) : null;
    return [
      el("h3", {}, "Runs a workflow"),
      el("p", { class: "help small muted" }, "This node runs another workflow as a child run: its named inputs are the child's "
        + "input, and its output is {state, nodes}: the child's final state and its last nodes' outputs (read them in the "
        + "output mapping, e.g. $.nodes.<last node id>). The agent above is on record for the node and never called."),
      el("div", { class: "two" },
        field("Workflow", workflowSelect, where(".workflow_ref")),
        field("Version", versionSelect, where(".version"))),
      whole,
      el("p", { class: "row" },
        href ? el("a", { class: "small", href, "data-field": "subworkflow-link" }, `Open ${child.workflow_ref}`) : null,
        el("span", { class: "spacer" }),
        editable ? el("button", { type: "button", "data-field": "subworkflow-remove", onclick: () => {
          node.subworkflow = null;
          changed({ labels: true });
          renderPanel();
          hint(`“${node.id}” is a plain node again: its agent ${node.agent_ref} does its work.`);
        } }, "Make it a plain node") : null),
    ];
  }

  function versionOptions(workflowRef, chosenVersion) {
    const numbers = ui.versions.get(workflowRef) || [];
    const chosenText = String(chosenVersion).trim();
    const options = [el("option", { value: "", selected: chosenText === "" }, "the latest, when the child starts")];
    for (const number of numbers) {
      options.push(el("option", { value: String(number), selected: String(number) === chosenText }, `version ${number}`));
    }
    if (chosenText && !numbers.map(String).includes(chosenText)) {
      options.push(el("option", { value: chosenText, selected: true }, `version ${chosenText}${ui.versions.has(workflowRef) ? " (not stored)" : ""}`));
    }
    return options;
  }

  function previewLink(node) {
    if (state.isNew || !state.savedNodeIds.has(node.id)) {
      return el("p", { class: "small muted" }, "Save the workflow to preview this node's context.");
    }
    const href = config.urls.node_plan
      .replace(config.slots.workflow, encodeURIComponent(state.savedId))
      .replace(config.slots.node, encodeURIComponent(node.id));
    return el("p", {}, el("a", { class: "button", href, "data-field": "preview-context" }, "Preview context"),
      el("span", { class: "small muted" }, " what a run of the saved workflow would give this node: its inputs, budget and trimming (no model is called)"));
  }

  /** Rows of name → value (named inputs, or state keys of the output mapping). */
  function mappingRows(node, kind, nameLabel, valueHint) {
    const rows = node[kind];
    const section = kind === "inputs" ? "input_mapping" : "output_mapping";
    const list = el("div", { class: "mapping-rows", "data-mapping": kind });
    rows.forEach((row, index) => {
      const rowWhere = () => (row.name.trim() ? `nodes[${node.id}].${section}.${row.name.trim()}` : `nodes[${node.id}].${section}.#${index}`);
      // A named input over $.nodes.<id> is drawn as an edge: the edges follow what is typed.
      const edges = kind === "inputs";
      const nameInput = textInput(row.name, (value) => { row.name = value; changed(); },
        { placeholder: nameLabel, "aria-label": nameLabel, class: "mapping-name" });
      const valueInput = textInput(row.value, (value) => { row.value = value; changed({ edges }); },
        { placeholder: row.json ? "a JSON constant" : valueHint, "aria-label": `${row.name || nameLabel}: value`,
          class: "mapping-value mono" });
      const message = el("div", { class: "field-problem" });
      ui.panelFields.push({ where: rowWhere, control: valueInput, message });
      if (!editable) {
        nameInput.readOnly = true;
        valueInput.readOnly = true;
      }
      list.append(el("div", { class: "mapping-row" },
        el("div", { class: "mapping-controls" }, nameInput, el("span", { class: "arrow" }, "←"), valueInput,
          row.json ? el("span", { class: "tag small", title: "a constant written as JSON" }, "JSON") : null,
          editable ? el("button", { type: "button", class: "icon", title: "Remove", "aria-label": "Remove",
            onclick: () => { rows.splice(index, 1); changed({ edges }); renderPanel(); } }, "×") : null),
        message));
    });
    if (!rows.length) list.append(el("p", { class: "small muted" }, kind === "inputs" ? "No named input." : "No output mapping."));
    if (editable) {
      list.append(el("button", { type: "button", class: "small-button", "data-add": kind, onclick: () => {
        rows.push({ name: "", value: "", json: false });
        renderPanel();
        const inputs = $("editor-panel").querySelectorAll(`[data-mapping="${kind}"] .mapping-name`);
        if (inputs.length) inputs[inputs.length - 1].focus();
      } }, kind === "inputs" ? "+ Add an input" : "+ Add an output"));
    }
    return list;
  }

  function connectionsList(node) {
    const touching = state.transitions.filter((t) => t.from === node.id || t.to === node.id);
    const items = touching.map((transition) => el("li", {},
      el("button", { type: "button", class: "link-button", onclick: () => select({ kind: "transition", key: transition.key }) },
        `${transition.from} → ${transition.to}`),
      transition.condition.trim() ? el("span", { class: "small muted" }, ` if ${shorten(transition.condition.trim(), 40)}`) : null));
    const box = el("div", {}, items.length ? el("ul", { class: "connections" }, ...items)
      : el("p", { class: "small muted" }, "No transition from or to this node."));
    if (editable) {
      const others = state.nodes.filter((other) => other !== node);
      const target = el("select", { "aria-label": "Leads to" },
        ...others.map((other) => el("option", { value: other.id }, other.id)),
        el("option", { value: node.id }, `${node.id} (itself)`));
      box.append(el("div", { class: "row connect-row" }, el("span", { class: "small" }, "Add a transition to"), target,
        el("button", { type: "button", onclick: () => addTransition(node.id, target.value) }, "Add")));
    }
    return box;
  }

  function transitionPanel(transition) {
    const index = () => state.transitions.indexOf(transition);
    const where = (suffix) => () => `transitions[${index()}]${suffix}`;
    // Only a state machine chooses the next node (engine/scheduling.py `unhonoured`): elsewhere
    // a condition, an on_success other than continue and an on_failure naming a node are
    // offered only to be seen and removed, where a transition already has one.
    const chooses = state.topology === "state_machine";
    const nodeOptions = (current, extras, defaultLabel, withNodes = true) => {
      const values = [...extras, ...(withNodes ? state.nodes.map((node) => node.id) : [])];
      const options = [];
      if (defaultLabel !== undefined) options.push(el("option", { value: "", selected: !current }, defaultLabel));
      for (const value of values) options.push(el("option", { value, selected: value === current }, extras.includes(value) ? value : `node ${value}`));
      if (current && !values.includes(current)) {
        options.push(el("option", { value: current, selected: true }, nodeById(current) ? `node ${current}` : `${current} (missing)`));
      }
      return options;
    };
    const endpoint = (key) => el("select", { "data-field": key, onchange: (event) => {
      transition[key] = event.target.value;
      changed({ edges: true });
      renderPanel();
    } }, ...nodeOptions(transition[key], []));
    const route = (key, actions, defaultLabel) => el("select", { "data-field": key, onchange: (event) => {
      transition[key] = event.target.value;
      changed({ edges: true });
      if (!chooses) renderPanel(); // a field removed to its default goes
    } }, ...nodeOptions(transition[key], actions, defaultLabel, chooses));
    const condition = el("textarea", { rows: "2", spellcheck: "false", class: "mono condition", "data-field": "condition",
      placeholder: "always (no condition)", oninput: (event) => {
        transition.condition = event.target.value;
        changed({ edges: true });
      } }, transition.condition);
    const routed = transition.on_success && transition.on_success !== "continue";
    const failureNode = transition.on_failure && !FAILURE_ACTIONS.includes(transition.on_failure);
    const parts = [
      el("div", { class: "row panel-head" }, el("h2", {}, "Transition"), el("div", { class: "spacer" }), backButton()),
      el("p", { class: "mono" }, `${transition.from} → ${transition.to}`),
      el("div", { class: "panel-problems", "data-transition-problems": transition.key }),
      el("div", { class: "panel-warnings", "data-transition-warnings": transition.key }),
      el("p", { class: "small muted", "data-field": "transition-meaning" }, transitionMeaning(transition)),
      ...readingOffer(transition),
      el("div", { class: "two endpoints" }, field("From", endpoint("from"), where(".from")), field("To", endpoint("to"), where(".to"))),
      chooses || transition.condition.trim() ? field("Condition", condition, where(".condition"), chooses
        ? "Taken when the condition holds, e.g. output.verdict == 'accept' and state.rounds < 3 — comparisons, and / or / not, over output.… and state.…; empty means always."
        : `Only a state machine chooses by condition: a ${state.topology} runs every node, so empty it (or make the workflow a state_machine).`) : null,
      chooses || routed ? field("On success", route("on_success", SUCCESS_ACTIONS, "continue (default)"), where(".on_success"), chooses
        ? "continue goes to “To”; end finishes the run; or name another node to go to."
        : `Only a state machine ends early or goes elsewhere on success: set it back to continue.`) : null,
      field("On failure", route("on_failure", FAILURE_ACTIONS, "escalate (default)"), where(".on_failure"), chooses
        ? "When “From” still fails after its retries and fallback: escalate (the workflow's error handling, then a person), abort the run, skip on, or go to a node."
        : `When “From” still fails after its retries and fallback: escalate (the workflow's error handling, then a person), abort the run, or skip on.${failureNode ? " Going to a node is for state machines only." : ""}`),
    ];
    if (editable) parts.push(el("p", {}, el("button", { type: "button", class: "danger", onclick: deleteSelected }, "Delete this transition")));
    return parts;
  }

  function transitionMeaning(transition) {
    const { from, to } = transition;
    if (state.topology === "state_machine") return `After “${from}” the run goes on to “${to}” when the condition holds.`;
    if (state.topology === "dag") return `“${to}” waits for “${from}” to be done.`;
    if (state.topology === "seq") return "In a seq the order of the nodes decides what runs next; a transition may set what happens on failure.";
    return "A par runs all its nodes at once: no node waits for another.";
  }

  /** When the transition's target reads nothing of its source: a button that adds the
   * named input that does (`$.nodes.<source>`), its name editable. */
  function readingOffer(transition) {
    const source = nodeById(transition.from);
    const target = nodeById(transition.to);
    if (!editable || !source || !target || source === target || !passesNothing(source, target)) return [];
    const name = textInput(freeInputName(target, source.id), () => {}, { "data-field": "offer-input-name",
      "aria-label": `Name of the input of ${target.id}`, class: "mapping-name" });
    return [el("div", { class: "reading-offer", "data-field": "reading-offer" },
      el("p", { class: "small" }, `“${target.id}” reads nothing of “${source.id}”. Add an input of “${target.id}” reading `,
        el("code", {}, `$.nodes.${source.id}`), ":"),
      el("div", { class: "mapping-controls" }, name,
        el("button", { type: "button", class: "small-button", "data-field": "offer-input-add", onclick: () => {
          const wanted = name.value.trim();
          if (!wanted || RESERVED_INPUTS.includes(wanted) || target.inputs.some((row) => row.name.trim() === wanted)) {
            name.classList.add("invalid");
            hint(wanted ? `“${target.id}” has an input “${wanted}” already (or it is reserved): name it otherwise.`
              : "Give the input a name.", true);
            return;
          }
          addReadingInput(target, source, wanted);
        } }, "Add input")))];
  }

  // -- problems ------------------------------------------------------------------------------------

  /** A problem as the editor places it: shape problems name nodes by index (nodes[2]), graph
   * problems by id (nodes[task_b], with `node` set); both become nodes[<id>]. */
  function normalize(problem, documentNodes) {
    let where = problem.where || "";
    let node = problem.node ?? null;
    const byIndex = where.match(/^nodes\[(\d+)\]/);
    if (node === null && byIndex && documentNodes[Number(byIndex[1])]) {
      node = documentNodes[Number(byIndex[1])].id;
      where = `nodes[${node}]${where.slice(byIndex[0].length)}`;
    }
    let transition = problem.transition ?? null;
    const transitionIndex = where.match(/^transitions\[(\d+)\]/);
    if (transition === null && transitionIndex) transition = Number(transitionIndex[1]);
    return { code: problem.code || "INVALID", message: problem.message || "", where, node, transition };
  }

  function allProblems() {
    const clientWheres = new Set(ui.clientProblems.map((problem) => problem.where));
    const problems = [...ui.clientProblems, ...ui.serverProblems.filter((problem) => !clientWheres.has(problem.where))];
    const seen = new Set(problems.map((problem) => `${problem.where}\n${problem.message}`));
    return [...problems, ...ui.saveProblems.filter((problem) => !seen.has(`${problem.where}\n${problem.message}`))];
  }

  function problemsOfNode(id) {
    return allProblems().filter((problem) => problem.node === id);
  }

  function applyProblems() {
    markProblems();
    showFieldProblems();
    listProblems();
  }

  /** Red where a problem is, amber where only a warning is: on nodes and on transitions. */
  function markProblems() {
    const problems = allProblems();
    const warnings = ui.serverWarnings;
    for (const node of state.nodes) {
      const invalid = problems.some((problem) => problem.node === node.id);
      cy.getElementById(node.key).toggleClass("invalid", invalid)
        .toggleClass("warned", !invalid && warnings.some((warning) => warning.node === node.id));
    }
    cy.edges().removeClass("invalid warned");
    const edgesOf = (index) => {
      const transition = index !== null ? state.transitions[index] : null;
      return transition ? cy.edges().filter((edge) => edge.data("transition") === transition.key) : cy.collection();
    };
    for (const warning of warnings) edgesOf(warning.transition).addClass("warned");
    for (const problem of problems) edgesOf(problem.transition).removeClass("warned").addClass("invalid");
    drawBadges();
  }

  let badgesPending = false;
  function scheduleBadges() {
    if (badgesPending) return;
    badgesPending = true;
    requestAnimationFrame(() => {
      badgesPending = false;
      drawBadges();
    });
  }

  /** A red badge on each node with problems (the count, the messages as its tooltip); an
   * amber one on a node with warnings only. */
  function drawBadges() {
    const overlay = $("cy-overlay");
    const badges = [];
    for (const node of state.nodes) {
      const problems = problemsOfNode(node.id);
      const warnings = problems.length ? [] : ui.serverWarnings.filter((warning) => warning.node === node.id);
      const element = cy.getElementById(node.key);
      if ((!problems.length && !warnings.length) || !element.length) continue;
      const box = element.renderedBoundingBox({ includeLabels: false });
      const shown = problems.length ? problems : warnings;
      const what = problems.length ? "problem" : "warning";
      badges.push(el("button", {
        type: "button", class: problems.length ? "node-badge" : "warning-badge", [`data-${problems.length ? "node" : "warning-node"}`]: node.id,
        title: shown.map((problem) => `${problem.code}: ${problem.message}`).join("\n"),
        "aria-label": `${shown.length} ${what}(s) on node ${node.id}`,
        style: { left: `${Math.round(box.x2 - 12)}px`, top: `${Math.round(box.y1 - 12)}px` },
        onclick: () => select({ kind: "node", key: node.key }),
      }, problems.length ? String(problems.length) : "!"));
    }
    overlay.replaceChildren(...badges);
  }

  function showFieldProblems() {
    const problems = allProblems();
    for (const entry of ui.panelFields) {
      entry.message.replaceChildren();
      entry.control.classList.remove("invalid");
    }
    const wheres = ui.panelFields.map((entry) => (typeof entry.where === "function" ? entry.where() : entry.where));
    for (const problem of problems) {
      let best = -1;
      wheres.forEach((where, index) => {
        const matches = problem.where === where || problem.where.startsWith(`${where}.`) || problem.where.startsWith(`${where}[`);
        if (matches && (best < 0 || where.length > wheres[best].length)) best = index;
      });
      if (best < 0) continue;
      const entry = ui.panelFields[best];
      entry.control.classList.add("invalid");
      entry.message.append(el("div", {}, problem.message));
    }
    // The selected node's or transition's problems, all together at the top of the panel;
    // in the list of nodes, how many each has.
    const panel = $("editor-panel");
    for (const count of panel.querySelectorAll("[data-node-count]")) {
      const number = problems.filter((problem) => problem.node === count.dataset.nodeCount).length;
      count.textContent = number ? `${number} problem${number === 1 ? "" : "s"}` : "";
      count.hidden = !number;
    }
    const nodeBox = panel.querySelector("[data-node-problems]");
    if (nodeBox) fillProblemBox(nodeBox, problems.filter((problem) => problem.node === nodeBox.dataset.nodeProblems));
    const nodeWarnings = panel.querySelector("[data-node-warnings]");
    if (nodeWarnings) {
      fillProblemBox(nodeWarnings, ui.serverWarnings.filter((warning) => warning.node === nodeWarnings.dataset.nodeWarnings), "warning");
    }
    const transitionBox = panel.querySelector("[data-transition-problems]");
    if (transitionBox) {
      const index = state.transitions.findIndex((t) => t.key === transitionBox.dataset.transitionProblems);
      fillProblemBox(transitionBox, problems.filter((problem) => problem.transition === index));
      const warningBox = panel.querySelector("[data-transition-warnings]");
      fillProblemBox(warningBox, ui.serverWarnings.filter((warning) => warning.transition === index), "warning");
    }
  }

  function fillProblemBox(box, problems, kind = "error") {
    box.replaceChildren(...problems.map((problem) =>
      el("div", { class: `${kind} small` }, el("strong", {}, problem.code), ` ${problem.where}: ${problem.message}`)));
  }

  function listProblems() {
    const problems = allProblems();
    const summary = $("problems-summary");
    const list = $("problems-list");
    if (!state.nodes.length) {
      summary.textContent = "Add a node to start: a workflow has at least one.";
      summary.className = "muted small";
      list.replaceChildren(...problems.map((problem) => problemItem(problem)));
      return;
    }
    if (!ui.checked && !problems.length) return;
    const warnings = ui.serverWarnings;
    const plural = (count, word) => `${count} ${word}${count === 1 ? "" : "s"}`;
    const warned = warnings.length
      ? ` ${plural(warnings.length, "warning")}, marked amber: it saves, but data may not flow where you meant.` : "";
    summary.textContent = problems.length
      ? `${plural(problems.length, "problem")}: the nodes and transitions they concern are marked red.${warned}`
      : `No problems: the workflow is valid.${warned}`;
    summary.className = problems.length ? "small error-text" : warnings.length ? "small warn-text" : "small ok-text";
    list.replaceChildren(...problems.map((problem) => problemItem(problem)), ...warnings.map((warning) => problemItem(warning, "warning")));
  }

  /** A problem (or a warning) in the list under the graph, with a button to what it concerns. */
  function problemItem(problem, kind = "problem") {
    let target;
    const transition = problem.transition !== null ? state.transitions[problem.transition] : null;
    if (problem.node !== null && nodeById(problem.node)) {
      target = el("button", { type: "button", class: "link-button", [`data-${kind}-node`]: problem.node,
        onclick: () => select({ kind: "node", key: nodeById(problem.node).key }) }, `node ${problem.node}`);
    } else if (transition) {
      target = el("button", { type: "button", class: "link-button",
        onclick: () => select({ kind: "transition", key: transition.key }) }, `transition ${transition.from} → ${transition.to}`);
    } else {
      target = el("button", { type: "button", class: "link-button", onclick: () => select(null) }, "workflow");
    }
    return el("li", { class: kind }, el("span", { class: kind === "warning" ? "badge warning" : "badge failed" }, problem.code), " ", target,
      el("span", { class: "mono small muted" }, ` ${problem.where}`), el("div", {}, problem.message));
  }

  // -- validation as the person types -----------------------------------------------------------

  let validateTimer = null;
  let validateSequence = 0;

  function scheduleValidate() {
    validateSequence += 1; // an answer still on its way describes an older document
    const { document: built, problems } = buildDocument();
    ui.clientProblems = problems.map((problem) => normalize(problem, built.nodes));
    applyProblems();
    clearTimeout(validateTimer);
    validateTimer = setTimeout(validateNow, VALIDATE_DELAY_MS);
  }

  async function validateNow() {
    clearTimeout(validateTimer);
    const { document: built, problems } = buildDocument();
    ui.clientProblems = problems.map((problem) => normalize(problem, built.nodes));
    const sequence = ++validateSequence;
    if (!built.nodes.length) {
      ui.serverProblems = [];
      ui.serverWarnings = [];
      applyProblems();
      return;
    }
    // A new workflow's id may still be half typed: it is checked here, on the client, and
    // the rest of the document under a placeholder id.
    const pathId = state.savedId || (ID_PATTERN.test(built.workflow_id) ? built.workflow_id : "untitled");
    const checking = $("problems-summary");
    checking.textContent = "Checking…";
    checking.className = "muted small";
    try {
      const result = await api.post(`/workflows/${encodeURIComponent(pathId)}/validate`, { ...built, workflow_id: pathId });
      if (sequence !== validateSequence) return; // an older answer: a newer check is on its way
      ui.serverProblems = result.problems.map((problem) => normalize(problem, built.nodes));
      ui.serverWarnings = (result.warnings || []).map((warning) => normalize(warning, built.nodes));
      ui.inferredInputs = result.inferred_input_schema;
      ui.checked = true;
      applyProblems();
    } catch (error) {
      if (sequence !== validateSequence) return;
      checking.textContent = `Could not check the workflow: ${error.message}`;
      checking.className = "small error-text";
    }
  }

  // -- saving and running ----------------------------------------------------------------------

  function banner(text) {
    const element = $("editor-banner");
    element.textContent = text || "";
    element.hidden = !text;
    cy.resize(); // the canvas moved: cytoscape must map clicks from its new place
  }

  async function save() {
    const button = $("save-button");
    const { document: built, problems } = buildDocument();
    if (problems.length) {
      ui.clientProblems = problems.map((problem) => normalize(problem, built.nodes));
      applyProblems();
      banner(`Not saved: fix the ${problems.length} problem${problems.length === 1 ? "" : "s"} marked below first. Nothing was lost.`);
      return;
    }
    if (!built.nodes.length) {
      banner("Not saved: add at least one node first.");
      return;
    }
    const changesAtStart = state.changes;
    // A validation still on its way must not replace what the save answers.
    clearTimeout(validateTimer);
    validateSequence += 1;
    ui.saveProblems = [];
    button.disabled = true;
    setStatus("Saving…", "muted");
    try {
      const saved = state.isNew
        ? await api.post("/workflows", built)
        : await api.put(`/workflows/${encodeURIComponent(state.savedId)}`, built);
      const wasNew = state.isNew;
      state.isNew = false;
      state.savedId = saved.workflow_id;
      state.savedNodeIds = new Set(saved.nodes.map((node) => node.id));
      ui.savedInputSchema = saved.input_schema ?? null;
      state.savedChanges = changesAtStart;
      ui.clientProblems = [];
      ui.serverProblems = [];
      ui.checked = true;
      banner("");
      if (wasNew) {
        const address = config.urls.workflow.replace(config.slots.workflow, encodeURIComponent(saved.workflow_id));
        window.history.replaceState(null, "", address);
        document.title = `${saved.name} · Switchyard`;
        $("editor-title").textContent = saved.name;
        document.querySelector(".editor-subtitle").replaceChildren(el("span", { class: "mono" }, saved.workflow_id),
          " · ", el("span", { id: "editor-topology" }, saved.topology), " · created just now");
      }
      renderPanel();
      applyProblems();
      updateDirty();
      if (!isDirty()) setStatus(`Saved at ${new Date().toLocaleTimeString()}`, "ok-text");
      if (!wasNew) document.dispatchEvent(new CustomEvent("switchyard:workflow-saved")); // a new version, listed
      // Saved with warnings or none: checked again, so that those shown are the saved workflow's.
      if (state.changes !== changesAtStart) scheduleValidate();
      else validateNow();
    } catch (error) {
      updateDirty();
      showSaveError(error, built);
    } finally {
      button.disabled = false;
    }
  }

  /** The API's refusal, shown next to what it concerns; the editor's state is untouched. */
  function showSaveError(error, built) {
    if (!(error instanceof ApiError)) {
      banner(`Not saved: ${error.message}. Your changes are still here; try again.`);
      return;
    }
    let problems = [];
    if (error.code === "WORKFLOW_INVALID" && Array.isArray(error.details)) {
      problems = error.details;
      banner(`Not saved: ${problems.length} problem${problems.length === 1 ? "" : "s"}, marked on the graph and listed below. Your changes are kept.`);
      ui.serverProblems = problems.map((problem) => normalize(problem, built.nodes));
    } else {
      if (error.code === "INVALID_DOCUMENT" && Array.isArray(error.details) && error.details.length) {
        problems = error.details.map((detail) => ({ where: detail.where, message: detail.message, code: error.code }));
      } else if (error.code === "CONFLICT" && error.details && error.details.workflow_id) {
        problems = [{ where: "workflow_id", message: error.message, code: error.code }];
      } else {
        const located = error.message.match(/^([A-Za-z_][\w.:'\-[\]]*): ([\s\S]+)$/);
        if (located && error.code === "INVALID_DOCUMENT") problems = [{ where: located[1], message: located[2], code: error.code }];
      }
      banner(`Not saved: ${error.message}. Your changes are kept.`);
      ui.saveProblems = problems.map((problem) => normalize(problem, built.nodes));
    }
    ui.checked = true;
    applyProblems();
  }

  // The run dialog: its input is a form made from the input_schema of the version it runs
  // (static/js/run_input.js), or a JSON object when that version declares no inputs.
  let runForm = null;
  let runFormSequence = 0;

  /** The input_schema of the version the dialog runs: the one chosen, or the latest saved. */
  async function runSchema() {
    const chosen = $("run-version");
    if (!chosen || !chosen.value) return ui.savedInputSchema;
    const version = await api.get(`/workflows/${encodeURIComponent(state.savedId)}/versions/${encodeURIComponent(chosen.value)}`);
    return version.document.input_schema ?? null;
  }

  async function fillRunForm() {
    const sequence = ++runFormSequence;
    const error = $("run-error");
    error.hidden = true;
    $("run-start").disabled = true;
    let schema = null;
    try {
      schema = await runSchema();
    } catch (failure) {
      error.textContent = `The inputs of that version could not be read (${failure.message}): give the input as JSON.`;
      error.hidden = false;
    }
    if (sequence !== runFormSequence) return; // another version was chosen meanwhile
    // The inputs the nodes read, for the hint of a workflow that declares none: the server's
    // draft (POST …/validate), so that one rule says what a mapping reads.
    const read = Object.fromEntries(Object.entries((ui.inferredInputs || {}).properties || {})
      .map(([name, spec]) => [name, spec.description || ""]));
    runForm = runInput.build($("run-fields"), schema, { read });
    $("run-start").disabled = false;
    const first = $("run-fields").querySelector("input, textarea, select");
    if (first) first.focus();
  }

  function openRunDialog() {
    $("run-fields").replaceChildren(el("p", { class: "muted small" }, "Reading the workflow's inputs…"));
    $("run-dialog").showModal();
    fillRunForm();
  }

  async function startRun(event) {
    event.preventDefault();
    const error = $("run-error");
    const startButton = $("run-start");
    if (!runForm) return;
    error.hidden = true;
    const { input, problems } = runInput.read(runForm);
    runInput.showProblems(runForm, problems);
    if (problems.length) {
      error.textContent = `Not started: ${problems.map((problem) => `${problem.where}: ${problem.message}`).join("; ")}`;
      error.hidden = false;
      return;
    }
    startButton.disabled = true;
    startButton.textContent = "Starting…";
    try {
      const chosen = $("run-version");  // none, or "" chosen: the latest version, as it is when the run starts
      const version = chosen && chosen.value ? { workflow_version: Number(chosen.value) } : {};
      const execution = await api.post("/executions", { workflow_id: state.savedId, input, ...version });
      window.location.assign(config.urls.execution.replace(config.slots.execution, encodeURIComponent(execution.execution_id)));
    } catch (failure) {
      // A refused input names the input (input.repository): shown at its field.
      if (failure instanceof ApiError) runInput.showProblems(runForm, runInput.problemsOf(failure));
      error.textContent = `Not started: ${failure.message}`;
      error.hidden = false;
      startButton.disabled = false;
      startButton.textContent = "Start run";
    }
  }

  // -- agents --------------------------------------------------------------------------------

  async function loadAgents() {
    const search = $("agent-search");
    try {
      const page = await api.get("/agents?limit=500");
      ui.agents = page.items;
      ui.agentsById = new Map(page.items.map((agent) => [agent.agent_id, agent]));
      $("agent-options").replaceChildren(...page.items.map((agent) => el("option", {
        value: agent.agent_id,
        label: `${agent.name} · ${agent.type} · v${agent.version}${agent.status === "active" ? "" : ` · ${agent.status}`}`,
      })));
      if (search) {
        search.placeholder = `Search ${page.items.length} agents…`;
        search.disabled = false;
      }
      // Not the whole panel again: the person may be typing in it.
      const note = $("editor-panel").querySelector("[data-agent-note]");
      const selected = ui.selected && ui.selected.kind === "node" ? nodeByKey(ui.selected.key) : null;
      if (note && selected) note.textContent = agentSummary(selected.agent_ref.trim());
    } catch (error) {
      if (search) search.placeholder = "Agents could not be loaded";
      hint(`The agent list could not be loaded: ${error.message}`, true);
    }
  }

  // -- workflows a node may run ---------------------------------------------------------------

  /** The stored workflows, but this one (a workflow does not run itself). */
  async function loadWorkflows() {
    const pick = $("workflow-pick");
    try {
      const page = await api.get("/workflows?limit=500");
      const own = state.savedId || state.workflow_id.trim();
      ui.workflows = page.items.filter((workflow) => workflow.workflow_id !== own);
      if (pick) {
        pick.replaceChildren(el("option", { value: "" }, ui.workflows.length ? "pick a workflow" : "no other workflow stored"),
          ...ui.workflows.map((workflow) => el("option", { value: workflow.workflow_id }, `${workflow.workflow_id} · ${workflow.name}`)));
        pick.disabled = !ui.workflows.length;
      }
      const selected = ui.selected && ui.selected.kind === "node" ? nodeByKey(ui.selected.key) : null;
      if (selected && selected.subworkflow) renderPanel();
    } catch (error) {
      if (pick) pick.replaceChildren(el("option", { value: "" }, "workflows could not be loaded"));
      hint(`The workflow list could not be loaded: ${error.message}`, true);
    }
  }

  /** A workflow's version numbers, newest first, read once. */
  async function loadVersions(workflowId) {
    if (ui.versions.has(workflowId)) return ui.versions.get(workflowId);
    try {
      const page = await api.get(`/workflows/${encodeURIComponent(workflowId)}/versions?limit=500`);
      ui.versions.set(workflowId, page.items.map((version) => version.number));
    } catch (error) {
      if (error.status !== 404) throw error;
      ui.versions.set(workflowId, []);
    }
    return ui.versions.get(workflowId);
  }

  async function pickedWorkflow() {
    const ref = $("workflow-pick").value;
    const versionPick = $("workflow-version-pick");
    $("workflow-pick").classList.remove("invalid");
    versionPick.replaceChildren(el("option", { value: "" }, "its latest version"));
    versionPick.disabled = !ref;
    if (!ref) return;
    try {
      const numbers = await loadVersions(ref);
      if ($("workflow-pick").value !== ref) return; // another was picked meanwhile
      versionPick.append(...numbers.map((number) => el("option", { value: String(number) }, `version ${number}`)));
    } catch (error) {
      hint(`The versions of ${ref} could not be read: ${error.message}`, true);
    }
  }

  // -- wiring -----------------------------------------------------------------------------------

  $("validate-button").addEventListener("click", () => {
    validateNow().then(() => $("problems-heading").scrollIntoView({ behavior: "smooth", block: "nearest" }));
  });
  $("layout-button").addEventListener("click", () => {
    runLayout(); // every node, those placed by hand too
    if (editable) changed({ validate: false });
  });
  document.addEventListener("pointerdown", clearStaleHint, true);
  document.addEventListener("keydown", clearStaleHint, true);
  $("fit-button").addEventListener("click", fitGraph);
  if (editable) {
    $("add-node-button").addEventListener("click", addNode);
    $("add-workflow-node-button").addEventListener("click", addWorkflowNode);
    $("workflow-pick").addEventListener("change", pickedWorkflow);
    $("agent-search").addEventListener("keydown", (event) => {
      if (event.key === "Enter") {
        event.preventDefault();
        addNode();
      }
    });
    $("agent-search").addEventListener("input", () => $("agent-search").classList.remove("invalid"));
    $("connect-button").addEventListener("click", () => setConnecting(!ui.connecting));
    $("delete-button").addEventListener("click", deleteSelected);
    $("save-button").addEventListener("click", save);
    $("run-button").addEventListener("click", openRunDialog);
    $("run-form").addEventListener("submit", startRun);
    $("run-cancel").addEventListener("click", () => $("run-dialog").close());
    // The versions' list is drawn again after a save (workflow_versions.js): listened to here, on the dialog.
    $("run-dialog").addEventListener("change", (event) => {
      if (event.target.id === "run-version") fillRunForm();
    });
    window.addEventListener("beforeunload", (event) => {
      if (isDirty() && (state.nodes.length || !state.isNew)) {
        event.preventDefault();
        event.returnValue = "";
      }
    });
  }
  document.addEventListener("keydown", (event) => {
    const typing = ["INPUT", "TEXTAREA", "SELECT"].includes(event.target.tagName) || event.target.isContentEditable;
    if (event.key === "Escape" && ui.connecting) setConnecting(false);
    else if (event.key === "Escape" && !typing && ui.selected && !$("run-dialog")?.open) select(null);
    else if (event.key === "Delete" && event.target === document.body && ui.selected && editable) {
      event.preventDefault();
      deleteSelected();
    }
  });

  drawNodes();
  drawEdges();
  if (state.nodes.length && state.nodes.every((node) => node.layout)) fitGraph();
  else runLayout();
  renderPanel();
  updateDirty();
  loadAgents();
  loadWorkflows();
  if (state.nodes.length) validateNow();
  else listProblems();

  // For the page's tests and for curious people at the console: read-only handles.
  window.workflowEditor = { cy, state, ui, buildDocument };
})();
