// One node run's record, as the run page's node panel and the plan page's trial show it:
// what ran (kind, status, agent and version, backend and model, worker, tokens, cost,
// duration), its error, its model calls (each with its purpose, backend and model, tokens
// and cost: cost.js), the context budget, the actions, resolution failures, compression, the
// transition taken, the inputs as resolved, the prompt (collapsed) and the output. A node
// whose agent has tools shows its conversation first: each model turn with its text,
// tokens and budget, the tool calls it asked for (arguments and result folded), the final
// answer. A gate's run (a person's step) called no agent: it shows what ran, the transition
// and the output; a sub-workflow node's run neither: it shows the child run it started,
// what ran, the child's input and the output (workflowRecord).
// Built with switchyard.el, so model text is always shown as text.
(function () {
  "use strict";

  const { el, fmt, budget, cost } = window.switchyard;

  // Which visit of its node and which try within it: "round 2 · attempt 1 · first".
  function place(run) {
    return run.round ? `round ${run.round} · attempt ${run.attempt} · ${run.kind}` : `${run.kind} · #${run.attempt}`;
  }

  function fact(label, ...value) {
    return el("div", {}, el("dt", {}, label), el("dd", {}, ...value));
  }

  function decisionBlock(decision) {
    const next = decision.action === "end" ? el("strong", {}, "end of the run")
      : el("span", {}, "node ", el("strong", { class: "mono" }, decision.node_id || "?"));
    const taken = decision.transition !== null && decision.transition !== undefined;
    return el("div", { class: "decision" },
      el("p", {}, "→ ", next, taken ? ` by transition #${decision.transition}` : "",
        decision.condition ? el("span", {}, " when ", el("code", {}, decision.condition), " = ", el("strong", {}, String(decision.condition_value)))
          : taken ? " (no condition)" : ""),
      // An end says which node ended the run and why (no transition matched, none leaves it, on_success end).
      decision.reason ? el("p", { class: "small decision-reason" }, decision.reason) : null,
      (decision.evaluated || []).length ? el("table", { class: "compact" },
        el("thead", {}, el("tr", {}, el("th", {}, "Transition"), el("th", {}, "Condition"), el("th", {}, "Value"))),
        el("tbody", {}, decision.evaluated.map((item) => el("tr", { class: item.value ? "taken" : "" },
          el("td", {}, `#${item.transition}`),
          el("td", {}, el("code", {}, item.condition || "(always)"),
            (item.missing || []).length ? el("div", { class: "muted small condition-missing" },
              "read as null, not there: ", item.missing.join(", ")) : ""),
          el("td", {}, el("strong", { class: item.value ? "ok-text" : "muted" }, String(item.value))))))) : null);
  }

  // -- the conversation of a node whose agent has tools ------------------------------------

  function counted(n, noun) {
    return `${fmt.n(n)} ${noun}${n === 1 ? "" : "s"}`;
  }

  function jsonBlock(value, cls) {
    return el("pre", { class: `output ${cls}` }, fmt.json(value));
  }

  /** One tool call: its tool, how it ended, how long it took, who approved it; its
   *  arguments and result folded (pretty JSON, as text); a failure's code and message. A
   *  call waiting for a person's approval has not run yet. */
  function toolCall(call) {
    const ok = call.status === "success";
    const waiting = call.status === "awaiting_approval";
    const result = ok && (call.result_kept ? jsonBlock(call.result, "tool-result-body")
      : el("div", {}, el("p", { class: "muted small" }, "Over the size kept on the record: its first characters."),
        el("pre", { class: "output tool-result-body" }, call.result_preview || "")));
    return el("li", { class: `tool-call ${ok ? "ok" : waiting ? "waiting" : "failed"}`, "data-call": call.id },
      el("div", { class: "tool-call-head" },
        el("span", { class: "mono tool-name" }, call.name),
        " ", el("span", { class: `badge ${ok ? "success" : waiting ? "waiting" : "failed"} tool-status` },
          ok ? "success" : waiting ? "awaiting approval" : call.error_code || call.status),
        el("span", { class: "muted small" }, waiting ? " · not run: a person decides first" : ` · ${fmt.ms(call.duration_ms)}`,
          ok ? ` · ${fmt.n(call.result_tokens)} tokens passed` : "",
          call.approved_by ? ` · approved by ${call.approved_by}` : "")),
      ok || waiting ? null : el("p", { class: "error tool-error small" }, el("code", {}, call.error_code || call.status), " ", call.error || ""),
      el("details", { class: "tool-arguments" }, el("summary", { class: "small" }, "Arguments"), jsonBlock(call.arguments, "tool-arguments-body")),
      result ? el("details", { class: "tool-result" },
        el("summary", { class: "small" }, "Result ", el("span", { class: "muted mono" }, (call.result_digest || "").slice(0, 19))), result)
        : null);
  }

  /** What a turn was given besides the prompt, drawn by the budget bar: the node run's own
   *  context record for turn 1, the turn's record of the tool results after. Open when a
   *  result was summarised, referenced or trimmed to fit. */
  function turnBudget(context) {
    if (!context) return null;
    const resolution = context.resolution || {};
    const acted = (resolution.actions || []).length > 0;
    return el("details", { class: "turn-budget", open: acted },
      el("summary", { class: "small" }, `Context: ${fmt.n(resolution.final_tokens)} of ${fmt.n(context.context_limit)} tokens`,
        acted ? ` · ${resolution.actions.length} action(s)` : "", resolution.within_limit === false ? " · over the limit" : ""),
      budget.bar(context), acted ? budget.actions(context) : null);
  }

  /** The conversation as a person reads it: each model turn (its text and tokens, its budget)
   *  and the tool calls it asked for, down to the final answer. */
  function conversation(run) {
    const turns = run.turns || [];
    const calls = run.tool_calls || [];
    const last = turns.length - 1;
    return el("ol", { class: "conversation" }, turns.map((turn, index) => {
      const mine = calls.filter((call) => call.turn === turn.turn);
      const asked = (turn.tool_call_ids || []).length;
      const final = !asked && index === last;
      return el("li", { class: `turn${final ? " final" : ""}`, "data-turn": turn.turn },
        el("div", { class: "turn-head" },
          el("strong", {}, final ? `Model turn ${turn.turn}: the final answer` : `Model turn ${turn.turn}`),
          el("span", { class: "muted small" }, ` · ${fmt.n(turn.tokens_in)} in → ${fmt.n(turn.tokens_out)} out`,
            asked ? ` · asked for ${counted(asked, "tool call")}` : "")),
        turn.text ? el("pre", { class: "turn-text" }, turn.text) : el("p", { class: "muted small turn-text" }, "(no text)"),
        turnBudget(index === 0 ? run.context_management : turn.context),
        mine.length ? el("ol", { class: "tool-calls" }, mine.map(toolCall)) : null,
        asked > mine.length ? el("p", { class: "muted small" }, `${asked - mine.length} call(s) asked for were not made: the node ended first.`) : null);
    }));
  }

  /** The record of `run` (a node run of GET /api/executions/{id}); `notes` (elements, or
   *  null) come first: where a copy came from, a link to its thought tree. */
  function record(run, ...notes) {
    const section = (title, ...content) => el("section", { class: "attempt-section" }, el("h4", {}, title), ...content);
    const model = [run.backend, run.model].filter(Boolean).join(" / ");
    // A gate node's run; a node whose tool calls wait for (or had) a person's approval is
    // still the agent's run, its conversation shown.
    if (run.gate && run.gate.kind !== "tool_call") return gateRecord(run, section, notes);
    return el("div", { class: "attempt-body" },
      ...notes,
      el("dl", { class: "facts compact-facts" },
        fact("Round · attempt", place(run)),
        fact("Status", el("span", { class: `badge ${run.status}` }, run.status)),
        fact("Agent", el("span", { class: "mono" }, run.agent_ref), run.agent_version ? el("span", { class: "muted" }, ` v${run.agent_version}`) : ""),
        fact("Backend / model", model || "—"),
        // A manual run's output is a person's, given to resume the run: its worker is who.
        run.kind === "manual" && run.backend === "manual" ? fact("Given by", el("span", { class: "given-by" }, run.worker || "—"), " on resume")
          : fact("Worker", run.worker ? el("span", { class: "mono small" }, run.worker) : "—"),
        fact("Tokens in / out", `${fmt.n(run.tokens_in)} / ${fmt.n(run.tokens_out)}`),
        fact("Cost", (run.calls || []).length ? el("span", { class: "run-cost" }, cost.ofCalls(run.calls, run.cost, run.cost_complete))
          : el("span", { class: "run-cost muted" }, "no model call")),
        fact("Duration", run.duration_ms !== null && run.duration_ms !== undefined ? fmt.ms(run.duration_ms) : "—"),
        fact("Started · ended", `${fmt.time(run.started_at) || "—"} · ${fmt.time(run.completed_at) || "—"}`),
        run.dispatches > 1 ? fact("Dispatches", String(run.dispatches)) : null),
      run.error_code || run.error ? el("p", { class: "error attempt-error" }, run.error_code ? el("code", {}, run.error_code) : "", " ", run.error || "") : null,
      (run.turns || []).length ? section(`Conversation (${counted(run.turns.length, "turn")}, ${counted((run.tool_calls || []).length, "tool call")})`, conversation(run)) : null,
      (run.calls || []).length || run.status !== "running"
        ? section(`Model calls (${(run.calls || []).length})`, cost.callsTable(run.calls, run.cost, run.cost_complete)) : null,
      section("Context budget", budget.bar(run.context_management)),
      section("Actions", budget.actions(run.context_management)),
      section("Resolution failures", budget.failures(run.resolution_failures)),
      run.compression ? section("Compression", budget.compression(run.compression)) : null,
      run.decision ? section("Transition taken", decisionBlock(run.decision)) : null,
      section("Inputs as resolved", budget.inputs(run.resolved_inputs)),
      el("details", { class: "prompt" }, el("summary", {}, `Prompt (${fmt.n((run.prompt || "").length)} characters)`), el("pre", {}, run.prompt || "(none)")),
      section("Output", run.output === null || run.output === undefined
        ? el("p", { class: "muted small" }, run.status === "running" ? "Not yet: the node is running." : "No output.")
        : el("pre", { class: "output" }, fmt.json(run.output))));
  }

  /** A gate's run: no agent was called, so no context, prompt or tokens; what a person
   *  decided (the notes say it), where the run went next, and what went on as its output. */
  function gateRecord(run, section, notes) {
    return el("div", { class: "attempt-body" },
      ...notes,
      el("dl", { class: "facts compact-facts" },
        fact("Round · attempt", place(run)),
        fact("Status", el("span", { class: `badge ${run.status}` }, run.status)),
        fact("Agent", el("span", { class: "mono" }, run.agent_ref), el("span", { class: "muted" }, " (stands for the deciders; never called)")),
        fact("Waited", run.duration_ms !== null && run.duration_ms !== undefined ? fmt.ms(run.duration_ms) : "—"),
        fact("Opened · decided", `${fmt.time(run.started_at) || "—"} · ${fmt.time(run.completed_at) || "—"}`)),
      run.error_code || run.error ? el("p", { class: "error attempt-error" }, run.error_code ? el("code", {}, run.error_code) : "", " ", run.error || "") : null,
      run.decision ? section("Transition taken", decisionBlock(run.decision)) : null,
      section("Output", run.output === null || run.output === undefined
        ? el("p", { class: "muted small" }, run.status === "waiting" ? "Not yet: approved or edited, the data goes on from here." : "No output.")
        : el("pre", { class: "output" }, fmt.json(run.output))));
  }

  /** A sub-workflow node's run: its agent is on record and never called, so no context nor
   *  prompt; `child` (an element: the child run it started, linked) comes first, then what
   *  ran, the child's input (the node's named inputs as resolved), the transition taken and
   *  the output: the child's final state and its last nodes' outputs. Its tokens and cost
   *  are the child run's, rolled up when it ended. */
  function workflowRecord(run, child, ...notes) {
    const section = (title, ...content) => el("section", { class: "attempt-section" }, el("h4", {}, title), ...content);
    return el("div", { class: "attempt-body" },
      ...notes,
      child,
      el("dl", { class: "facts compact-facts" },
        fact("Round · attempt", place(run)),
        fact("Status", el("span", { class: `badge ${run.status}` }, run.status)),
        fact("Agent", el("span", { class: "mono" }, run.agent_ref), el("span", { class: "muted" }, " (on record; never called)")),
        fact("Tokens in / out", `${fmt.n(run.tokens_in)} / ${fmt.n(run.tokens_out)}`, el("span", { class: "muted small" }, " (the child run's)")),
        fact("Cost", el("span", { class: "run-cost" }, cost.shown(run.cost, run.cost_complete)), el("span", { class: "muted small" }, " (the child run's)")),
        fact("Duration", run.duration_ms !== null && run.duration_ms !== undefined ? fmt.ms(run.duration_ms) : "—"),
        fact("Started · ended", `${fmt.time(run.started_at) || "—"} · ${fmt.time(run.completed_at) || "—"}`)),
      run.error_code || run.error ? el("p", { class: "error attempt-error" }, run.error_code ? el("code", {}, run.error_code) : "", " ", run.error || "") : null,
      (run.resolution_failures || []).length ? section("Resolution failures", budget.failures(run.resolution_failures)) : null,
      run.decision ? section("Transition taken", decisionBlock(run.decision)) : null,
      section("The child's input (the node's named inputs)", budget.inputs(run.resolved_inputs)),
      section("Output", run.output === null || run.output === undefined
        ? el("p", { class: "muted small" }, run.status === "running" ? "Not yet: the child run is going." : "No output.")
        : el("pre", { class: "output" }, fmt.json(run.output))));
  }

  window.switchyard.nodeRun = { record, workflowRecord, fact, conversation };
})();
