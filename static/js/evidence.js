// The parent-vs-child page: while an experiment of it runs, its progress is read from the API
// every few seconds and shown; once every experiment has ended the page reloads to show the
// comparison (and the decision form).
(function () {
  "use strict";

  const root = document.getElementById("evidence");
  if (!root || !root.dataset.refresh) return;
  const { api } = window.switchyard;
  const path = root.dataset.refresh.replace(/^\/api/, "");
  const EVERY_MS = 3000;

  function show(progress) {
    const row = root.querySelector(`tr[data-experiment="${CSS.escape(progress.experiment_id)}"]`);
    if (!row) return;
    const badge = row.querySelector('[data-field="status"]');
    badge.textContent = progress.status;
    badge.className = `badge ${progress.status}`;
    row.querySelector('[data-field="ended"]').textContent = `${progress.ended} / ${progress.total}`;
    const bar = row.querySelector(".progress");
    bar.setAttribute("aria-valuenow", String(progress.ended));
    bar.querySelector("span").style.width = `${progress.percent}%`;
  }

  async function refresh() {
    try {
      const pairs = await api.get(path);
      let running = false;
      for (const pair of pairs) {
        for (const progress of [pair.parent_experiment, pair.child_experiment]) {
          show(progress);
          running = running || !progress.done;
        }
      }
      if (!running) {
        window.location.reload();
        return;
      }
    } catch (error) {
      // A missed refresh is tried again at the next tick.
    }
    window.setTimeout(refresh, EVERY_MS);
  }

  window.setTimeout(refresh, EVERY_MS);
})();
