// The agent page: compare two versions as soon as they are chosen, and raise a derive
// request through the API (POST /api/derive-requests), with each error next to its field.
(function () {
  "use strict";
  const { api } = window.switchyard;

  const compare = document.getElementById("compare-form");
  if (compare) {
    compare.querySelectorAll("select").forEach((select) => select.addEventListener("change", () => compare.requestSubmit()));
  }

  const form = document.getElementById("raise-form");
  if (!form) return;
  const progress = document.getElementById("raise-progress");
  const general = document.getElementById("raise-error");

  const split = (text, separator) => text.split(separator).map((item) => item.trim()).filter(Boolean);

  function clearErrors() {
    form.querySelectorAll(".field-error").forEach((p) => { p.hidden = true; p.textContent = ""; });
    form.querySelectorAll(".invalid").forEach((input) => input.classList.remove("invalid"));
    general.hidden = true;
  }

  // The API names where a problem is: "body.payload.specialization.new_name" (validation)
  // or "specialization.domain_focus: ..." (a service's message). Find the field it concerns.
  function fieldOf(where) {
    const last = (where || "").split(".").filter((part) => !/^\d+$/.test(part)).pop() || "";
    return form.querySelector(`.field-error[data-for="${CSS.escape(last.replace(/\[\d+\]$/, ""))}"]`);
  }

  function showError(error) {
    const problems = Array.isArray(error.details) && error.details.length
      ? error.details.filter((p) => p && p.where !== undefined)
      : [{ where: (error.message || "").split(": ")[0], message: error.message }];
    let placed = false;
    for (const problem of problems) {
      const slot = fieldOf(problem.where);
      if (!slot) continue;
      slot.textContent = problem.message.replace(/^[\w.[\]]+: /, "");
      slot.hidden = false;
      const input = form.querySelector(`[name="${slot.dataset.for}"]`);
      if (input) input.classList.add("invalid");
      placed = true;
    }
    if (!placed) {
      general.textContent = error.status === 403 ? `Not allowed: ${error.message}` : error.message;
      general.hidden = false;
    }
  }

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    clearErrors();
    const values = Object.fromEntries(new FormData(form));
    if (!values.new_name.trim()) {
      showError({ details: [{ where: "new_name", message: "Give the new agent a name." }] });
      return;
    }
    const body = {
      parent_agent_id: form.dataset.parent,
      trigger: values.trigger,
      trigger_context: values.note.trim() ? { raised_by_hand: true, note: values.note.trim() } : { raised_by_hand: true },
      specialization: {
        new_name: values.new_name.trim(),
        domain_focus: values.domain_focus.trim(),
        additional_skills: split(values.additional_skills, ","),
        additional_constraints: split(values.additional_constraints, "\n"),
      },
    };
    const button = form.querySelector("button[type=submit]");
    button.disabled = true;
    progress.hidden = false;
    try {
      const created = await api.post("/derive-requests", body);
      window.location.assign(`/derive-requests/${encodeURIComponent(created.derive_request_id)}/`);
    } catch (error) {
      showError(error);
      button.disabled = false;
      progress.hidden = true;
    }
  });
})();
