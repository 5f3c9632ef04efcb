// What model calls cost, as the pages show it. The API answers costs as exact decimal
// strings of USD ("0.000048150000"); they are added here as whole units of 10⁻¹² USD
// (BigInt), never as floats, and written without the zeros past the cents ("$0.00004815",
// "$1.50"), as the server writes them (executions/page_selectors.py, cost_text). A cost
// that is not complete (a call's model had no prices) is at least what is shown. A call's
// table says, for each: what it was for, the backend and model that served it, its tokens,
// whether the server reported them or they were counted here (and in which encoding), and its cost; the builtin's
// calls cost nothing, for the builtin is not a model.
(function () {
  "use strict";

  const { el } = window.switchyard;
  const SCALE = 10n ** 12n;
  const USAGE = {
    reported: ["reported", "tokens as the server reported them"],
    counted: ["counted", "the server reported no usage: tokens counted here"],
    builtin: ["builtin", "the builtin engine: no model was called"],
    unknown: ["unknown", "the server's answer was unreadable: it may have been billed, its cost is not known"],
  };

  /** "0.000048150000" → 48150000n (units of 10⁻¹² USD); null for anything else. */
  function units(value) {
    const match = /^(\d+)(?:\.(\d{0,12}))?$/.exec(String(value ?? ""));
    return match ? BigInt(match[1]) * SCALE + BigInt((match[2] || "").padEnd(12, "0")) : null;
  }

  /** Units → "0.000048150000". */
  function decimal(amount) {
    return `${amount / SCALE}.${String(amount % SCALE).padStart(12, "0")}`;
  }

  /** "0.000048150000" → "$0.00004815"; "" for null. */
  function text(value) {
    if (value === null || value === undefined || value === "") return "";
    const [whole, fraction = ""] = String(value).split(".");
    return `$${whole}.${fraction.replace(/0+$/, "").padEnd(2, "0")}`;
  }

  /** A cost, marked when not every call was priced (then it is at least that). */
  function shown(value, complete) {
    if (complete !== false) return el("span", { class: "cost" }, text(value));
    return el("span", { class: "cost-wrap" },
      el("span", { class: "cost incomplete", title: "Not every call was priced: at least this" }, `≥ ${text(value)}`),
      " ", el("span", { class: "cost-note muted" }, "— not every call priced"));
  }

  /** A node run's cost from its calls: "nothing" when every call was the builtin's. */
  function ofCalls(calls, value, complete) {
    const list = Array.isArray(calls) ? calls : [];
    if (list.length && list.every((call) => call.usage === "builtin")) {
      return el("span", { class: "cost builtin", title: "The builtin engine is not a model: its calls cost nothing" },
        "nothing (builtin, not a model)");
    }
    return shown(value, complete);
  }

  function callCost(call) {
    if (call.usage === "builtin") {
      return el("span", { class: "cost builtin", title: "The builtin engine is not a model: its calls cost nothing" },
        "nothing (builtin, not a model)");
    }
    if (call.cost === null || call.cost === undefined) {
      return el("span", { class: "cost unpriced muted", title: call.usage === "unknown"
        ? "The answer was unreadable: the call may have been billed, its cost is not known"
        : "The model catalogue has no prices for this model" }, call.usage === "unknown" ? "unknown" : "no price");
    }
    return el("span", { class: "cost" }, text(call.cost));
  }

  /** The table of `calls` (a node run's, or a run's judge's), with their total. */
  function callsTable(calls, total, complete) {
    const list = Array.isArray(calls) ? calls : [];
    if (!list.length) return el("p", { class: "muted small calls-none" }, "No model call.");
    const number = (value) => (value === null || value === undefined ? "—" : Number(value).toLocaleString("en-US"));
    const rows = list.map((call, index) => {
      const [usage, usageTitle] = USAGE[call.usage] || [call.usage || "—", ""];
      const countedIn = call.encoding ? ` (in ${call.encoding})` : "";
      return el("tr", { "data-call": index, class: call.usage === "builtin" ? "builtin" : "" },
        el("td", {}, String(index + 1)),
        el("td", {}, call.purpose || "—"),
        el("td", { class: "mono" }, call.backend || "—"),
        el("td", { class: "mono" }, call.usage === "builtin" ? el("span", { class: "muted" }, "no model") : call.model || "—"),
        el("td", { class: "num" }, number(call.tokens_in)),
        el("td", { class: "num" }, number(call.tokens_out)),
        el("td", { class: "num" }, number(call.cached_in)),
        el("td", { class: `usage usage-${call.usage}`, title: usageTitle + countedIn }, usage + countedIn),
        el("td", { class: "num call-cost" }, callCost(call)));
    });
    const sum = list.reduce((all, call) => all + (units(call.cost) ?? 0n), 0n);
    return el("table", { class: "compact calls" },
      el("thead", {}, el("tr", {}, ...["#", "Purpose", "Backend", "Model", "Tokens in", "Tokens out", "Cached in", "Usage", "Cost"]
        .map((heading, index) => el("th", { class: [4, 5, 6, 8].includes(index) ? "num" : null }, heading)))),
      el("tbody", {}, rows),
      el("tfoot", {}, el("tr", {},
        el("td", { colspan: "8" }, `${list.length} call${list.length === 1 ? "" : "s"}`),
        el("td", { class: "num calls-total" }, ofCalls(list, total ?? decimal(sum), complete)))));
  }

  window.switchyard.cost = { units, decimal, text, shown, ofCalls, callsTable };
})();
