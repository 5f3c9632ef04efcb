// The executions list: rows of runs in progress refresh themselves from GET
// /api/executions (newest first) until none is left in progress, their cost too; nothing
// reloads. The server orders the list (newest first, or by cost: `?sort=`). Ticking
// two runs of one workflow enables Compare, which opens the compare page (A the older).
// Authors steer the ticked runs, or all the runs the filter matches, together: cancel,
// retry or re-run, after a dialog naming how many (POST /api/executions/bulk); the answer
// says how many were done, and which were refused and why.
(function () {
  "use strict";

  const { api, el, fmt, cost: money } = window.switchyard;
  // An escalated run, or one waiting at a gate, waits for a person: its row is not refreshed.
  const ACTIVE = new Set(["pending", "running"]);
  const table = document.querySelector("table.executions");
  const live = document.getElementById("list-live");
  if (!table) return;

  function activeRows() {
    return [...table.querySelectorAll("tr[data-execution-id]")].filter((row) => ACTIVE.has(row.dataset.status));
  }

  function paint(row, summary) {
    row.dataset.status = summary.status;
    row.querySelector(".status-cell").replaceChildren(el("span", { class: `badge ${summary.status}` }, summary.status));
    const counts = summary.node_runs || {};
    const total = Object.values(counts).reduce((sum, n) => sum + n, 0);
    row.querySelector(".run-total").textContent = String(total);
    row.querySelector(".run-mix").replaceChildren(...Object.entries(counts).filter(([, n]) => n)
      .map(([status, n]) => el("span", { class: `mix ${status}`, title: `${n} ${status}` }, `${n} ${status}`)));
    const started = summary.started_at ? Date.parse(summary.started_at) : null;
    const end = summary.completed_at ? Date.parse(summary.completed_at) : Date.now();
    row.querySelector(".duration-cell").replaceChildren(started ? fmt.ms(end - started) : el("span", { class: "muted" }, "—"),
      started && ACTIVE.has(summary.status) ? el("span", { class: "muted" }, " so far") : "");
    const cost = row.querySelector(".cost-cell");
    cost.dataset.cost = String(money.units(summary.cost) ?? "");
    cost.replaceChildren(money.shown(summary.cost, summary.cost_complete));
    row.querySelector(".reason-cell").textContent = summary.ended_reason || "";
  }

  async function refresh() {
    const rows = activeRows();
    live.hidden = !rows.length;
    if (!rows.length) return;
    const query = new URLSearchParams({ limit: "200" });
    if (table.dataset.workflowFilter) query.set("workflow", table.dataset.workflowFilter);
    try {
      const answer = await api.get(`/executions?${query}`);
      const byId = new Map(answer.items.map((summary) => [summary.execution_id, summary]));
      for (const row of rows) {
        const summary = byId.get(row.dataset.executionId);
        if (summary) paint(row, summary);
      }
    } catch (error) {
      live.textContent = "● live (retrying)";
    }
    if (activeRows().length) setTimeout(refresh, 2000);
    else live.hidden = true;
  }

  if (activeRows().length) {
    live.hidden = false;
    setTimeout(refresh, 1000);
  }

  // -- picking two runs to compare -----------------------------------------------------------

  const compare = document.getElementById("compare-button");
  const hint = document.getElementById("compare-hint");

  function picked() {
    return [...table.querySelectorAll("input.pick:checked")];
  }

  function updateCompare() {
    const boxes = picked();
    const sameWorkflow = boxes.length === 2 && boxes[0].dataset.workflow === boxes[1].dataset.workflow;
    compare.disabled = !sameWorkflow;
    hint.textContent = boxes.length === 2 && !sameWorkflow ? "These two are runs of different workflows: only runs of one workflow compare."
      : boxes.length > 2 ? `${boxes.length} runs ticked: tick exactly two.`
        : boxes.length === 2 ? "" : "Tick two runs of one workflow to compare them.";
  }

  table.addEventListener("change", (event) => {
    if (event.target.matches("input.pick")) updateCompare();
  });
  compare.addEventListener("click", () => {
    // The list is newest first: the lower row is the older run, A.
    const [newer, older] = picked().map((box) => box.closest("tr").dataset.executionId);
    window.location.assign(`${compare.dataset.url}?${new URLSearchParams({ a: older, b: newer })}`);
  });
  updateCompare(); // a browser may keep boxes ticked on going back

  // -- steering runs together -----------------------------------------------------------------

  const bar = document.getElementById("bulk-bar");
  if (!bar) return; // not an author, or no run listed
  const all = document.getElementById("bulk-all");
  const pickedText = document.getElementById("bulk-picked");
  const dialog = document.getElementById("bulk-dialog");
  const confirmButton = document.getElementById("bulk-confirm");
  const result = document.getElementById("bulk-result");
  const matching = Number(bar.dataset.matching);
  const limit = Number(bar.dataset.limit);
  let chosen = null; // the action the dialog asks about

  function howMany() {
    return all.checked ? matching : picked().length;
  }

  function runs(n) {
    return `${n} run${n === 1 ? "" : "s"}`;
  }

  function updateBar() {
    const n = howMany();
    const over = all.checked && matching > limit;
    pickedText.textContent = over ? `${runs(n)} match: at most ${limit} can be steered at once; narrow the filter.`
      : all.checked ? `All ${runs(n)} matching the filter.` : n ? `${runs(n)} ticked.` : "No run ticked.";
    for (const button of bar.querySelectorAll("button.bulk-action")) button.disabled = !n || over;
  }

  function body(action) {
    const chosenRuns = all.checked ? { filter: JSON.parse(bar.dataset.filter || "{}") }
      : { execution_ids: picked().map((box) => box.closest("tr").dataset.executionId) };
    return { action, ...chosenRuns };
  }

  function showResult(answer, action, done) {
    const refused = answer.results.filter((entry) => entry.outcome === "refused");
    const started = answer.results.filter((entry) => entry.started);
    result.replaceChildren(
      el("p", { id: "bulk-summary" }, `${runs(answer.done)} ${done}` + (refused.length ? `, ${refused.length} refused:` : ".")),
      refused.length ? el("ul", { id: "bulk-refused" }, refused.map((entry) => el("li", {},
        el("a", { class: "mono", href: `/executions/${encodeURIComponent(entry.execution_id)}/` }, entry.execution_id),
        ` — ${entry.message}`))) : "",
      started.length ? el("p", { class: "small" }, "New runs: ", started.map((entry, index) => [index ? ", " : "",
        el("a", { class: "mono", href: `/executions/${encodeURIComponent(entry.started)}/` }, entry.started)])) : "",
      el("p", { class: "small" }, el("a", { href: window.location.href }, "Reload the list"), " to see every run as it is now."));
    result.hidden = false;
    if (action !== "cancel") return;
    for (const entry of answer.results.filter((each) => each.outcome === "done")) {
      const row = table.querySelector(`tr[data-execution-id="${CSS.escape(entry.execution_id)}"]`);
      if (!row) continue;
      row.dataset.status = "cancelled";
      row.querySelector(".status-cell").replaceChildren(el("span", { class: "badge cancelled" }, "cancelled"));
    }
  }

  for (const button of bar.querySelectorAll("button.bulk-action")) {
    button.addEventListener("click", () => {
      chosen = button;
      const n = howMany();
      document.getElementById("bulk-question").textContent = `${button.dataset.verb} ${runs(n)}?`;
      document.getElementById("bulk-explain").textContent = button.title || "Runs that have ended cannot be cancelled: they are refused, and the others go on.";
      confirmButton.textContent = `${button.dataset.verb} ${runs(n)}`;
      dialog.showModal();
    });
  }
  document.getElementById("bulk-back").addEventListener("click", () => dialog.close());
  confirmButton.addEventListener("click", async () => {
    const button = chosen;
    dialog.close();
    if (!button) return;
    for (const each of bar.querySelectorAll("button.bulk-action")) each.disabled = true;
    try {
      const answer = await api.post("/executions/bulk", body(button.dataset.action));
      showResult(answer, button.dataset.action, button.dataset.done);
    } catch (error) {
      result.replaceChildren(el("p", { class: "error" }, `Nothing was done: ${error.message}`));
      result.hidden = false;
    }
    updateBar();
  });
  all.addEventListener("change", updateBar);
  table.addEventListener("change", (event) => {
    if (event.target.matches("input.pick")) updateBar();
  });
  updateBar();
})();
