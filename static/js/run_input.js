// The form a run's input is given in, made from its workflow's `input_schema` (a JSON Schema
// of the run's input, engine/inputs.py): one labelled field per declared input, its
// description as help, its default filled in, the required ones marked. What is typed is
// checked here first (a required input left empty, a number that is not one, JSON that is
// not JSON); the server checks everything again, and its refusal, which names the input
// (`input.repository: is required by the workflow`), is shown at that input's field.
// A workflow that declares no inputs is given its input as a JSON object, with a hint
// naming the `$.input` paths its nodes read.
(function () {
  "use strict";

  const { el } = window.switchyard;
  const SHORT_TEXT = 200; // a string input this long at most is one line; a longer one, or one of any length, a box
  const EXAMPLES = { string: "text", number: "a number", integer: "a whole number", boolean: "true or false",
    array: "a JSON array, e.g. [1, 2]", object: "a JSON object, e.g. {\"key\": \"value\"}" };

  /** The JSON type a declared input takes ("" when the schema leaves it open). */
  function typeOf(spec) {
    const type = Array.isArray(spec.type) ? spec.type.find((t) => t !== "null") : spec.type;
    return typeof type === "string" ? type : "";
  }

  /** How an input is typed in: "enum", "boolean", "number", "integer", "line", "text" or "json". */
  function controlKind(spec) {
    if (Array.isArray(spec.enum) && spec.enum.length) return "enum";
    const type = typeOf(spec);
    if (["boolean", "number", "integer"].includes(type)) return type;
    if (type === "string") return Number.isInteger(spec.maxLength) && spec.maxLength <= SHORT_TEXT ? "line" : "text";
    return "json";
  }

  function control(name, spec, kind, id) {
    const has = "default" in spec;
    const value = spec.default;
    const common = { id, name, "data-input": name };
    if (kind === "enum") {
      return el("select", common,
        el("option", { value: "" }, "— left out —"),
        ...spec.enum.map((option, index) => el("option", { value: String(index), selected: has && JSON.stringify(option) === JSON.stringify(value) },
          typeof option === "string" ? option : JSON.stringify(option))));
    }
    if (kind === "boolean") return el("input", { ...common, type: "checkbox", checked: has && value === true });
    if (kind === "number" || kind === "integer") {
      return el("input", { ...common, type: "number", step: kind === "integer" ? "1" : "any",
        min: spec.minimum ?? null, max: spec.maximum ?? null, value: has && typeof value === "number" ? String(value) : "" });
    }
    if (kind === "line") {
      return el("input", { ...common, type: "text", spellcheck: "false", maxlength: spec.maxLength,
        value: has && typeof value === "string" ? value : "" });
    }
    const box = el("textarea", { ...common, rows: kind === "json" ? "4" : "3", spellcheck: "false",
      class: kind === "json" ? "mono" : null });
    if (has) box.value = kind === "text" && typeof value === "string" ? value : JSON.stringify(value, null, 2);
    return box;
  }

  /** Fill `container` with the fields of `schema` (or, when it declares nothing, a JSON box
   * hinted with `read`, the inputs the nodes read: {name: description}). Returns the form
   * that `read` and `showProblems` take. */
  function build(container, schema, { idPrefix = "run-input", read = {} } = {}) {
    const properties = schema && typeof schema.properties === "object" && schema.properties ? schema.properties : null;
    const form = { fields: [], json: null, general: el("p", { class: "error small", "data-input-problem": "", hidden: true }) };
    if (!schema) {
      const box = el("textarea", { id: idPrefix, rows: "8", spellcheck: "false", class: "mono", "data-input": "" });
      const names = Object.keys(read);
      box.value = names.length ? JSON.stringify(Object.fromEntries(names.map((name) => [name, ""])), null, 2) : "{}";
      form.json = { control: box, message: el("div", { class: "field-problem" }) };
      container.replaceChildren(
        el("label", { for: idPrefix }, "Input (a JSON object: ", el("code", {}, "$.input"), " in the node mappings)"),
        box,
        el("p", { class: "help small muted", "data-input-hint": "" }, names.length
          ? ["The workflow declares no inputs; its nodes read ",
            ...names.flatMap((name, index) => [index ? ", " : "", el("code", {}, `$.input.${name}`)]), "."]
          : "The workflow declares no inputs, and its nodes read no $.input path: {} will do."),
        form.json.message, form.general);
      return form;
    }
    const required = new Set(Array.isArray(schema.required) ? schema.required : []);
    const rows = Object.entries(properties || {}).filter(([, spec]) => spec && typeof spec === "object").map(([name, spec], index) => {
      const kind = controlKind(spec);
      const id = `${idPrefix}-${index}`;
      const input = control(name, spec, kind, id);
      const message = el("div", { class: "field-problem", id: `${id}-problem` });
      const help = el("p", { class: "help small muted", id: `${id}-help` },
        spec.description || "", kind === "json" ? `${spec.description ? " · " : ""}${EXAMPLES[typeOf(spec)] || "any JSON value; text that is not JSON is sent as text"}` : "");
      input.setAttribute("aria-describedby", `${id}-help ${id}-problem`);
      if (required.has(name)) input.setAttribute("aria-required", "true");
      form.fields.push({ name, spec, kind, control: input, message, required: required.has(name) });
      const said = [el("span", { class: "mono" }, name),
        required.has(name) ? el("span", { class: "required", title: "required" }, " *") : el("span", { class: "small muted" }, " (optional)")];
      return el("div", { class: "field run-field", "data-field": name },
        kind === "boolean" ? el("label", { class: "check" }, input, ...said) : [el("label", { for: id }, ...said), input],
        help, message);
    });
    container.replaceChildren(...(rows.length ? rows
      : [el("p", { class: "muted small", "data-input-hint": "" }, "This workflow takes no input.")]),
    required.size ? el("p", { class: "small muted" }, el("span", { class: "required" }, "*"), " required") : null,
    form.general);
    return form;
  }

  /** The value typed for one field: {value} or {skip} (left empty) or {problem}. */
  function valueOf(field) {
    const { control: input, kind, spec } = field;
    if (kind === "boolean") return { value: input.checked };
    if (kind === "enum") return input.value === "" ? { skip: true } : { value: spec.enum[Number(input.value)] };
    const text = input.value;
    // A number field holds "" for what is not a number: the browser says which it was.
    if ((kind === "number" || kind === "integer") && input.validity.badInput) return { problem: "is not a number" };
    if (text.trim() === "") return { skip: true };
    if (kind === "number" || kind === "integer") {
      const number = Number(text);
      if (!Number.isFinite(number)) return { problem: "is not a number" };
      if (kind === "integer" && !Number.isInteger(number)) return { problem: "is not a whole number" };
      return { value: number };
    }
    if (kind === "line" || kind === "text") return { value: text };
    const type = typeOf(spec);
    let value;
    try {
      value = JSON.parse(text);
    } catch (error) {
      if (!type) return { value: text }; // an input of any type: text that is not JSON is text
      return { problem: `is not JSON (${error.message})` };
    }
    if (type === "array" && !Array.isArray(value)) return { problem: "is not a JSON array, e.g. [1, 2]" };
    if (type === "object" && (value === null || typeof value !== "object" || Array.isArray(value))) {
      return { problem: "is not a JSON object, e.g. {\"key\": \"value\"}" };
    }
    return { value };
  }

  /** The input the form gives and the problems found before sending, each {where, message}
   * with `where` as the server names it (input.repository). */
  function read(form) {
    if (form.json) {
      let value;
      try {
        value = JSON.parse(form.json.control.value || "{}");
      } catch (error) {
        return { input: null, problems: [{ where: "input", message: `is not JSON: ${error.message}` }] };
      }
      if (value === null || typeof value !== "object" || Array.isArray(value)) {
        return { input: null, problems: [{ where: "input", message: "must be a JSON object, e.g. {\"topic\": \"release 2.1\"}" }] };
      }
      return { input: value, problems: [] };
    }
    const input = {};
    const problems = [];
    for (const field of form.fields) {
      const result = valueOf(field);
      if (result.problem) problems.push({ where: `input.${field.name}`, message: result.problem });
      else if (result.skip && field.required && !("default" in field.spec)) {
        problems.push({ where: `input.${field.name}`, message: "is required by the workflow" });
      } else if (!result.skip) input[field.name] = result.value;
    }
    return { input, problems };
  }

  /** Show each problem at the field it names (input.numbers.2 at numbers); those that name
   * none under the form. The first field with a problem takes the focus. */
  function showProblems(form, problems) {
    clear(form);
    const general = [];
    let first = null;
    for (const problem of problems) {
      const where = problem.where || "";
      const field = form.json ? (where === "input" || where.startsWith("input.") ? form.json : null)
        : form.fields.find((f) => where === `input.${f.name}` || where.startsWith(`input.${f.name}.`) || where.startsWith(`input.${f.name}[`));
      if (!field) {
        general.push(where ? `${where}: ${problem.message}` : problem.message);
        continue;
      }
      field.control.classList.add("invalid");
      field.control.setAttribute("aria-invalid", "true");
      const nested = where.slice((form.json ? "input" : `input.${field.name}`).length).replace(/^\./, "");
      field.message.append(el("div", {}, nested ? `${nested}: ${problem.message}` : problem.message));
      first = first || field.control;
    }
    form.general.textContent = general.join(" ");
    form.general.hidden = !general.length;
    if (first) first.focus();
  }

  function clear(form) {
    for (const field of form.json ? [form.json] : form.fields) {
      field.control.classList.remove("invalid");
      field.control.removeAttribute("aria-invalid");
      field.message.replaceChildren();
    }
    form.general.hidden = true;
    form.general.textContent = "";
  }

  /** The problems of a refused start, each {where, message}: the server lists them in
   * `details.problems` (a run's input) or names one place (ApiError.where). */
  function problemsOf(error) {
    const details = error && error.details;
    if (details && Array.isArray(details.problems)) return details.problems;
    const where = error && error.where ? error.where.replace(/^body\./, "") : "";
    const message = where && error.message.startsWith(`${where}: `) ? error.message.slice(where.length + 2) : error.message;
    return [{ where, message }];
  }

  window.switchyard.runInput = { build, read, showProblems, clear, problemsOf };
})();
