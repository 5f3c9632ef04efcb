// A run's page: which webhook or workflow key started the run, and each callback delivery
// (status, attempts, the answer's code, the last error), read from
// /api/executions/{id}/trigger. Shown only for a run a trigger started.
(function () {
  "use strict";
  const { api, el } = window.switchyard;
  const box = document.getElementById("run-trigger");
  if (!box) return;

  function when(value) {
    return value ? new Date(value).toISOString().replace("T", " ").slice(0, 19) : "—";
  }

  function callbacks(rows) {
    if (!rows.length) return null;
    return el("table", { id: "run-callbacks", class: "small" },
      el("caption", {}, "Callbacks: the run's summary, POSTed signed when it ends"),
      el("thead", {}, el("tr", {}, ["URL", "Status", "Attempts", "Answer", "Last error", "Delivered"]
        .map((name) => el("th", { scope: "col" }, name)))),
      el("tbody", {}, rows.map((row) => el("tr", { "data-callback-status": row.status },
        el("td", { class: "mono" }, row.url),
        el("td", {}, el("span", { class: `badge ${row.status}` }, row.status),
          row.status === "pending" && row.next_attempt_at ? el("span", { class: "muted" }, ` again at ${when(row.next_attempt_at)}`) : null),
        el("td", {}, row.attempts),
        el("td", {}, row.response_code === null ? "—" : row.response_code),
        el("td", {}, row.last_error || "—"),
        el("td", {}, when(row.delivered_at))))));
  }

  api.get(box.dataset.url.replace(/^\/api/, "")).then((answer) => {
    const trigger = answer.trigger;
    if (!trigger && !answer.callbacks.length) return;
    const what = trigger && trigger.kind === "webhook" ? "Started by the webhook " : "Started with the workflow key ";
    box.append(trigger ? el("span", {}, what, el("strong", {}, trigger.name), " ", el("span", { class: "mono small" }, trigger.id),
      trigger.idempotency_key ? el("span", { class: "muted small" }, " · idempotency key ", el("span", { class: "mono" }, trigger.idempotency_key)) : null) : null,
    callbacks(answer.callbacks));
    box.hidden = false;
  }).catch(() => {});
})();
