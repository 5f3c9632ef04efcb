// The workflow page's Webhooks and Keys sections: made, disabled and revoked through the
// API (/api/workflows/{id}/webhooks, /keys), as programs do. A new webhook's secret and a new
// key are shown once, in the page, and never read again.
(function () {
  "use strict";
  const { api, el } = window.switchyard;
  const webhooks = document.getElementById("webhooks");
  if (!webhooks) return;
  const workflow = encodeURIComponent(webhooks.dataset.workflow);

  function show(box, values) {
    for (const [name, value] of Object.entries(values)) {
      box.querySelector(`[data-field="${name}"]`).textContent = value;
    }
    box.hidden = false;
  }

  function addRow(table, cells, data) {
    const body = table.querySelector("tbody");
    const empty = body.querySelector("tr.empty");
    if (empty) empty.remove();
    body.prepend(el("tr", data, cells.map((cell) => el("td", {}, cell))));
  }

  function fail(form, error) {
    form.querySelector('[data-field="error"]').textContent = error.where ? `${error.where}: ${error.message}` : error.message;
  }

  function optional(value) {
    return value === "" ? null : value;
  }

  const webhookForm = document.getElementById("webhook-form");
  if (webhookForm) {
    webhookForm.addEventListener("submit", async (event) => {
      event.preventDefault();
      const form = new FormData(webhookForm);
      let mapping = {};
      try {
        mapping = form.get("input_mapping").trim() ? JSON.parse(form.get("input_mapping")) : {};
      } catch (error) {
        fail(webhookForm, { where: "input_mapping", message: `this is not JSON (${error.message})` });
        return;
      }
      const body = {
        name: form.get("name"), input_mapping: mapping, idempotency_path: form.get("idempotency_path"),
        callback_url: form.get("callback_url"),
        version: optional(form.get("version")) && Number(form.get("version")),
        max_body_bytes: optional(form.get("max_body_bytes")) && Number(form.get("max_body_bytes")),
      };
      try {
        const made = await api.post(`/workflows/${workflow}/webhooks`, body);
        fail(webhookForm, { message: "" });
        show(document.getElementById("webhook-created"), { url: made.url, secret: made.secret });
        addRow(document.getElementById("webhooks-table"), [made.name, made.url, made.version || "latest",
          Object.entries(made.input_mapping).map(([field, path]) => `${field} ← ${path}`).join(", ") || "the body",
          made.callback_url || "—", "just now", el("span", { class: "badge active" }, "active"), ""],
        { "data-hook": made.hook_id });
        webhookForm.reset();
      } catch (error) {
        fail(webhookForm, error);
      }
    });
  }

  const keyForm = document.getElementById("key-form");
  if (keyForm) {
    keyForm.addEventListener("submit", async (event) => {
      event.preventDefault();
      const form = new FormData(keyForm);
      const body = {
        name: form.get("name"), callback_url: form.get("callback_url"),
        rate_per_minute: optional(form.get("rate_per_minute")) && Number(form.get("rate_per_minute")),
      };
      try {
        const made = await api.post(`/workflows/${workflow}/keys`, body);
        fail(keyForm, { message: "" });
        show(document.getElementById("key-created"), { key: made.key, callback_secret: made.callback_secret });
        addRow(document.getElementById("keys-table"), [made.name, made.prefix, made.rate_per_minute,
          made.callback_url || "—", "just now", "never", el("span", { class: "badge active" }, "active"), ""],
        { "data-key": made.prefix });
        keyForm.reset();
      } catch (error) {
        fail(keyForm, error);
      }
    });
  }

  async function settle(button, path, label) {
    button.disabled = true;
    try {
      await api.delete(path);
      const state = button.closest("tr").querySelector(".badge");
      state.className = "badge cancelled";
      state.textContent = label;
      button.remove();
    } catch (error) {
      button.disabled = false;
      button.title = error.message;
    }
  }

  document.addEventListener("click", (event) => {
    const target = event.target;
    if (target.matches("button.webhook-disable")) {
      settle(target, `/workflows/${workflow}/webhooks/${encodeURIComponent(target.dataset.hook)}`, "disabled");
    } else if (target.matches("button.key-revoke")) {
      settle(target, `/workflows/${workflow}/keys/${encodeURIComponent(target.dataset.key)}`, "revoked");
    }
  });
})();
