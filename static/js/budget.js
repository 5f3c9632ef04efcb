// The context budget of one node (data-transfer-protocol §6–§7.2), drawn from a
// `context_management` record: the run's record or a plan's. Also the tables that go
// with it (actions, resolution failures, inputs as resolved, compression) and the
// formatting the execution pages share. Everything is built with switchyard.el, so
// model text is always shown as text.
(function () {
  "use strict";

  const { el } = window.switchyard;
  const PALETTE = ["#3f7fd9", "#e08a2c", "#2fa37a", "#9a5cc6", "#d4526e", "#1f9fb4", "#8c7a2b", "#5468b8", "#c46a3a", "#3d9b45"];
  const FIXED = { system_prompt: "#48566b", instructions: "#8a97aa" };
  const REMOVING = new Set(["summarize", "summarise", "filter_by_priority", "drop", "compress", "truncate", "reference"]);

  // -- formatting -------------------------------------------------------------------------

  const fmt = {
    n(value) {
      return value === null || value === undefined ? "—" : Number(value).toLocaleString("en-US");
    },
    ms(value) {
      if (value === null || value === undefined) return "—";
      if (value < 1000) return `${Math.round(value)} ms`;
      const seconds = value / 1000;
      if (seconds < 60) return `${seconds.toFixed(1)} s`;
      const minutes = Math.floor(seconds / 60);
      if (minutes < 60) return `${minutes} min ${String(Math.floor(seconds % 60)).padStart(2, "0")} s`;
      return `${Math.floor(minutes / 60)} h ${String(minutes % 60).padStart(2, "0")} min`;
    },
    // A decision's reason as authors read it: the design documents' section ("(§5.1)") is
    // left out of the words and kept in the tooltip.
    reason(text) {
      const words = String(text ?? "");
      const sections = words.match(/§[\d.–-]+/g);
      const plain = words.replace(/\s*\(§[^)]*\)/g, "").trim();
      return el("span", { class: "reason", title: sections ? `data-transfer-protocol ${sections.join(", ")}` : null }, plain);
    },
    // ISO (UTC) → "2026-02-03 10:30:00", as the server renders dates.
    time(iso) {
      if (!iso) return "";
      const date = new Date(iso);
      if (Number.isNaN(date.getTime())) return String(iso);
      return date.toISOString().replace("T", " ").slice(0, 19);
    },
    json(value) {
      if (typeof value === "string") return value;
      try {
        return JSON.stringify(value, null, 2);
      } catch (error) {
        return String(value);
      }
    },
    percent(part, whole) {
      return whole ? `${Math.round((100 * part) / whole)}%` : "—";
    },
  };

  // -- the bar ----------------------------------------------------------------------------

  function colourOf(name, dataType, index) {
    if (dataType === "system_prompt" || name === "system_prompt") return FIXED.system_prompt;
    if (dataType === "instructions" || name === "task_instructions") return FIXED.instructions;
    return PALETTE[index % PALETTE.length];
  }

  // The inputs of a record: system prompt and instructions first, then the rest in the
  // record's order, each with its colour, final tokens and the actions taken on it.
  function inputsOf(record) {
    const actions = (record.resolution && record.resolution.actions) || [];
    const entries = Object.entries(record.total_input_data || {}).map(([name, value]) => {
      const info = typeof value === "object" && value !== null ? value : { tokens: value };
      const tokens = Number(info.tokens) || 0;
      const passed = info.passed_tokens === undefined || info.passed_tokens === null ? tokens : Number(info.passed_tokens);
      return {
        name, tokens, passed, priority: info.priority, dataType: info.data_type || "", mode: info.transfer_mode || "",
        actions: actions.filter((action) => action.data === name),
      };
    });
    const rank = (input) => (input.dataType === "system_prompt" || input.name === "system_prompt" ? 0
      : input.dataType === "instructions" || input.name === "task_instructions" ? 1 : 2);
    entries.sort((a, b) => rank(a) - rank(b));
    let index = 0;
    for (const input of entries) {
      input.colour = colourOf(input.name, input.dataType, rank(input) === 2 ? index++ : 0);
      input.batched = input.actions.some((action) => action.action === "batch");
      input.removed = Math.max(0, input.tokens - input.passed);
    }
    return entries;
  }

  function actionWords(action) {
    const words = `${action.action} ${fmt.n(action.original_tokens)} → ${fmt.n(action.reduced_tokens)}`;
    return action.reason ? `${words} (${action.reason.replace(/\s*\(§[^)]*\)/g, "")})` : words;
  }

  function pct(value, scale) {
    return `${Math.max(0, Math.min(100, (100 * value) / scale)).toFixed(3)}%`;
  }

  // The passed part of each input, one after the other, then what each lost, hatched.
  function drawSegments(track, inputs, scale) {
    let offset = 0;
    for (const input of inputs) {
      if (input.passed <= 0) continue;
      track.append(el("div", {
        class: "budget-seg", "data-input": input.name,
        style: { left: pct(offset, scale), width: pct(input.passed, scale), "--seg": input.colour },
        title: `${input.name}: ${fmt.n(input.passed)} tokens passed` +
          (input.removed ? ` of ${fmt.n(input.tokens)} resolved` : "") +
          (input.priority ? ` · priority ${input.priority}` : "") + (input.mode ? ` · ${input.mode}` : "") +
          input.actions.map((action) => `\n${actionWords(action)}`).join(""),
      }));
      offset += input.passed;
    }
    for (const input of inputs) {
      if (input.removed <= 0) continue;
      const what = input.batched ? "in the other batches" : "removed";
      track.append(el("div", {
        class: `budget-seg cut${input.batched ? " batched" : ""}`, "data-input": input.name,
        style: { left: pct(offset, scale), width: pct(input.removed, scale), "--seg": input.colour },
        title: `${input.name}: ${fmt.n(input.removed)} of ${fmt.n(input.tokens)} tokens ${what}` +
          input.actions.map((action) => `\n${actionWords(action)}`).join(""),
      }));
      offset += input.removed;
    }
  }

  // bar(record) → an element: the segments against the limit and the safety margin, a
  // summary line, how the limit was reached, and a legend.
  function bar(record, options = {}) {
    if (!record) {
      return el("p", { class: "muted small budget-empty" },
        options.empty || "No context record: this node run did not assemble a context (it has not started, or failed before).");
    }
    const limits = record.limits || {};
    const limit = Number(record.context_limit ?? limits.data_limit ?? 0);
    const available = Number(limits.available_for_data ?? limit);
    const effective = Number(limits.effective_data_limit ?? limit);
    const inputs = inputsOf(record);
    const resolution = record.resolution || {};
    const final = Number(resolution.final_tokens ?? inputs.reduce((sum, input) => sum + input.passed, 0));
    const removed = inputs.reduce((sum, input) => sum + input.removed, 0);
    const resolved = Number(record.total_tokens ?? inputs.reduce((sum, input) => sum + input.tokens, 0));
    const scale = Math.max(available, limit, effective, final + removed, 1);

    const track = el("div", { class: "budget-track", role: "img",
      "aria-label": `${fmt.n(final)} of ${fmt.n(limit)} tokens used` });
    // The safety margin: what the margin keeps free of the data area; and a role's data
    // area when it caps the limit lower still.
    if (available > effective) {
      track.append(el("div", { class: "budget-zone margin", style: { left: pct(effective, scale), width: pct(available - effective, scale) },
        title: `safety margin: ${fmt.n(available - effective)} tokens of the ${fmt.n(available)} available for data are kept free (× ${limits.safety_margin ?? "?"})` }));
    }
    if (effective > limit) {
      track.append(el("div", { class: "budget-zone area", style: { left: pct(limit, scale), width: pct(effective - limit, scale) },
        title: `the role's data area caps the limit at ${fmt.n(limit)} (effective ${fmt.n(effective)})` }));
    }
    drawSegments(track, inputs, scale);
    track.append(el("div", { class: "budget-marker limit", style: { left: pct(limit, scale) },
      title: `context limit: ${fmt.n(limit)} tokens for data` }));

    const within = resolution.within_limit ?? final <= limit;
    const scaleRow = el("div", { class: "budget-scale small" },
      el("span", {}, "0"),
      el("span", { class: `budget-limit${limit >= scale ? " at-end" : ""}`, style: { left: pct(limit, scale) } }, `limit ${fmt.n(limit)}`),
      // The scale's end, unless the limit's label already stands there.
      scale > limit ? el("span", { class: "budget-max" }, fmt.n(scale)) : "");

    // Inputs that use a sliver of a large limit get a magnified strip of their own.
    const used = final + removed;
    let zoom = null;
    if (used > 0 && used / scale < 0.15) {
      const zoomed = el("div", { class: "budget-track zoomed", role: "img", "aria-label": "the inputs, magnified" });
      drawSegments(zoomed, inputs, used);
      zoom = el("div", { class: "budget-zoom" },
        el("p", { class: "small muted" }, `The inputs magnified ×${Math.round(scale / used)} (the limit is ${fmt.n(limit)}):`),
        zoomed,
        el("div", { class: "budget-scale small" }, el("span", {}, "0"), el("span", { class: "budget-max" }, fmt.n(used))));
    }

    const summary = el("p", { class: "budget-summary small" },
      el("strong", {}, `${fmt.n(final)} of ${fmt.n(limit)} tokens passed`), ` (${fmt.percent(final, limit)} of the limit)`,
      ` · ${fmt.n(resolved)} resolved`,
      removed ? ` · ${fmt.n(removed)} trimmed, summarised or left to other batches` : "",
      record.overflow ? ` · ${fmt.n(record.overflow)} over before trimming` : "",
      " · ", el("span", { class: within ? "ok-text" : "error-text" }, within ? "within the limit" : "over the limit"),
      resolution.strategy ? el("span", { class: "muted" }, ` · strategy: ${resolution.strategy}`) : "",
      record.encoding ? el("span", { class: "muted budget-encoding" }, ` · counted in ${record.encoding}`) : "");

    const parts = [];
    if (limits.max_input_tokens !== undefined) {
      parts.push(`max input ${fmt.n(limits.max_input_tokens)} − system prompt ${fmt.n(limits.reserved_for_system_prompt)}` +
        ` − instructions ${fmt.n(limits.reserved_for_instructions)} = ${fmt.n(available)} for data`);
      parts.push(`× safety margin ${limits.safety_margin} = ${fmt.n(effective)}`);
      if (limit < effective) parts.push(`capped by the role's data area ${fmt.n(limits.data_area)} → ${fmt.n(limit)}`);
    }
    const how = parts.length ? el("p", { class: "budget-how small muted" }, parts.join(" ")) : null;

    const legend = el("ul", { class: "budget-legend small" },
      inputs.map((input) => el("li", { "data-input": input.name, title: input.actions.map(actionWords).join("\n") || "passed as resolved" },
        el("i", { class: "swatch", style: { "--seg": input.colour } }),
        el("span", { class: "mono" }, input.name), " ",
        el("span", { class: "muted" }, input.removed
          ? `${fmt.n(input.passed)} of ${fmt.n(input.tokens)}`
          : fmt.n(input.passed)),
        // A priority is a number (p1 … p4), or a word (a tool result's: high, medium).
        input.priority ? el("span", { class: "muted" }, typeof input.priority === "number" ? ` · p${input.priority}` : ` · ${input.priority}`) : "",
        input.actions.length ? el("span", { class: "legend-actions" }, ` · ${input.actions.map((a) => a.action).join(", ")}`) : "")),
      el("li", { class: "key" }, el("i", { class: "swatch cut", style: { "--seg": "#7a8594" } }), "hatched: trimmed, summarised or dropped"),
      inputs.some((input) => input.batched)
        ? el("li", { class: "key" }, el("i", { class: "swatch cut batched", style: { "--seg": "#7a8594" } }), "dotted: passed in other batches") : "",
      el("li", { class: "key" }, el("i", { class: "swatch margin" }), "safety margin"));

    return el("div", { class: "budget" }, summary, track, scaleRow, zoom, legend, how);
  }

  // -- the tables that go with it ----------------------------------------------------------

  function scroll(table) {
    return el("div", { class: "table-scroll" }, table);
  }

  const EXTRA_SKIP = new Set(["data", "action", "original_tokens", "reduced_tokens", "reason"]);

  function actions(record) {
    const list = (record && record.resolution && record.resolution.actions) || [];
    if (!list.length) return el("p", { class: "muted small" }, "No action: every input was passed as resolved.");
    return scroll(el("table", { class: "compact actions" },
      el("thead", {}, el("tr", {}, el("th", {}, "Input"), el("th", {}, "Action"), el("th", {}, "Tokens before → after"), el("th", {}, "Reason"))),
      el("tbody", {}, list.map((action) => {
        const before = Number(action.original_tokens) || 0;
        const after = Number(action.reduced_tokens) || 0;
        const extra = Object.entries(action).filter(([key]) => !EXTRA_SKIP.has(key))
          .map(([key, value]) => `${key}: ${typeof value === "object" ? JSON.stringify(value) : value}`).join(" · ");
        return el("tr", { "data-action": action.action },
          el("td", { class: "mono" }, action.data ?? ""),
          el("td", {}, el("span", { class: `action-tag ${action.action}` }, action.action)),
          el("td", { class: "tokens" }, `${fmt.n(before)} → ${fmt.n(after)}`,
            before ? el("span", { class: "muted" }, ` (−${fmt.percent(before - after, before)})`) : ""),
          el("td", {}, action.reason ? fmt.reason(action.reason) : "", extra ? el("div", { class: "muted small" }, extra) : ""));
      }))));
  }

  function referenceText(failure) {
    const target = failure.path || failure.task_id || failure.table || "";
    return `${failure.ref_type || "reference"}${target ? ` ${target}` : ""}`;
  }

  function failures(list) {
    if (!list || !list.length) return el("p", { class: "muted small" }, "No resolution failure: every reference resolved.");
    return scroll(el("table", { class: "compact failures" },
      el("thead", {}, el("tr", {}, el("th", {}, "Code"), el("th", {}, "Reference"), el("th", {}, "What happened"),
        el("th", {}, "Fallback taken"), el("th", {}, "Attempts"), el("th", {}, "Time"))),
      el("tbody", {}, list.map((failure) => el("tr", { "data-code": failure.error_code },
        el("td", {}, el("code", { class: "error-code" }, failure.error_code || "")),
        el("td", {}, el("span", { class: "mono" }, referenceText(failure)),
          failure.input ? el("div", { class: "muted small" }, `input ${failure.input}`) : ""),
        el("td", { class: "small" }, failure.error_message || ""),
        el("td", {}, el("strong", {}, failure.fallback_strategy || "—"),
          failure.fallback_value !== undefined && failure.fallback_value !== null
            ? el("div", { class: "mono small" }, `value: ${JSON.stringify(failure.fallback_value)}`) : ""),
        el("td", {}, failure.attempts ?? ""),
        el("td", { class: "small" }, fmt.time(failure.timestamp)))))));
  }

  function sourceText(source) {
    if (!source) return "";
    if (source.inline) return "inline";
    if (source.data_message !== undefined) return "data message";
    const target = source.path || source.task_id || source.table || "";
    const where = source.ref_type === "task_output" && source.path && source.task_id ? `${source.task_id} ${source.path}` : target;
    return `${source.ref_type || ""} ${where}`.trim();
  }

  function inputs(list) {
    if (!list || !list.length) return el("p", { class: "muted small" }, "No input was resolved.");
    return scroll(el("table", { class: "compact inputs" },
      el("thead", {}, el("tr", {}, el("th", {}, "Input"), el("th", {}, "Source"), el("th", {}, "Type · priority"),
        el("th", {}, "Passed as"), el("th", {}, "Tokens resolved → passed"))),
      el("tbody", {}, list.map((input) => el("tr", { "data-input": input.name },
        el("td", {}, el("span", { class: "mono" }, input.name),
          input.content !== undefined && input.content !== null
            ? el("details", { class: "content" }, el("summary", { class: "small" }, "content"), el("pre", {}, fmt.json(input.content)))
            : el("div", { class: "muted small" }, input.passed === false ? "not passed" : "")),
        el("td", { class: "small mono" }, sourceText(input.source), input.resolved_at ? el("div", { class: "muted" }, input.resolved_at) : ""),
        el("td", { class: "small" }, `${input.data_type || ""} · p${input.priority ?? "?"}`),
        el("td", { class: "small" }, el("strong", {}, input.transfer_mode || ""), input.batches ? ` · ${input.batches} batches` : "",
          input.reason ? el("div", { class: "muted" }, fmt.reason(input.reason)) : ""),
        el("td", { class: "tokens" }, `${fmt.n(input.resolved_tokens)} → ${fmt.n(input.passed_tokens)}`))))));
  }

  function compression(record) {
    if (!record) return null;
    const deps = record.dependencies || [];
    const totals = record.totals || {};
    return el("div", { class: "compression" },
      el("p", { class: "small" }, `Dependencies compressed with ${record.model || "?"} at ${record.ratio_percent ?? Math.round((record.ratio || 0) * 100)}%: `,
        el("strong", {}, `${fmt.n(totals.lines_before)} → ${fmt.n(totals.lines_after)} lines, ${fmt.n(totals.tokens_before)} → ${fmt.n(totals.tokens_after)} tokens`),
        `; ${fmt.n(totals.cache_hits)} cache hit(s)`),
      scroll(el("table", { class: "compact" },
        el("thead", {}, el("tr", {}, el("th", {}, "Dependency"), el("th", {}, "Lines before → after"), el("th", {}, "Tokens before → after"), el("th", {}, "Cache"), el("th", {}, "Note"))),
        el("tbody", {}, deps.map((dep) => el("tr", {},
          el("td", { class: "mono" }, dep.node_id || ""),
          el("td", { class: "tokens" }, `${fmt.n(dep.lines_before)} → ${fmt.n(dep.lines_after)}`),
          el("td", { class: "tokens" }, `${fmt.n(dep.tokens_before)} → ${fmt.n(dep.tokens_after)}`),
          el("td", {}, dep.cache_hit ? el("span", { class: "ok-text" }, "hit") : "miss"),
          el("td", { class: "small" }, dep.failed ? `failed: ${dep.error || ""}` : dep.skipped_short ? "short: passed whole" : dep.cache_error || "")))))));
  }

  window.switchyard.fmt = fmt;
  window.switchyard.budget = { bar, actions, failures, inputs, compression, inputsOf };
})();
