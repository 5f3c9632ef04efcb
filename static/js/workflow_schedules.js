// The Schedules section of a workflow's page: the workflow's schedules, each with its cron in
// words and its next five fire times in its zone (as the API answers them), and, for authors,
// a form to add or edit one and buttons to pause, resume or delete it. Everything goes
// through /api/schedules, as programs do; a refusal is shown at the field it names.
(function () {
  "use strict";

  const { api, el, ApiError } = window.switchyard;
  const section = document.getElementById("schedules");
  if (!section) return;
  const workflowId = section.dataset.workflow;
  const editable = section.dataset.editable === "true";
  const $ = (id) => document.getElementById(id);
  const form = $("schedule-form");
  let editing = null; // the schedule the form edits; null: a new one

  function when(iso) {
    // The API gives each time with its zone's offset: shown as it reads there.
    const match = /^(\d{4}-\d{2}-\d{2})T(\d{2}:\d{2})(?::\d{2}(?:\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/.exec(iso);
    return match ? `${match[1]} ${match[2]} (${match[3] === "Z" ? "+00:00" : match[3]})` : iso;
  }

  function row(schedule) {
    const link = section.dataset.scheduleUrl.replace("__schedule__", String(schedule.id));
    const actions = editable ? el("div", { class: "row schedule-actions" },
      el("button", { type: "button", class: "schedule-edit", onclick: () => openForm(schedule) }, "Edit"),
      el("button", { type: "button", class: "schedule-toggle", onclick: () => act(schedule, schedule.enabled ? "pause" : "resume") },
        schedule.enabled ? "Pause" : "Resume"),
      el("button", { type: "button", class: "danger schedule-delete", onclick: () => remove(schedule) }, "Delete")) : null;
    return el("article", { class: "schedule", "data-schedule": schedule.name },
      el("div", { class: "row" },
        el("a", { href: link, class: "schedule-name" }, schedule.name),
        el("span", { class: `badge ${schedule.enabled ? "success" : "cancelled"}` }, schedule.enabled ? "enabled" : "paused"),
        el("span", { class: "spacer" }), actions),
      el("p", { class: "small" }, el("span", { class: "mono" }, schedule.cron), " — ",
        el("span", { class: "schedule-words" }, schedule.cron_description), `, in ${schedule.timezone}`,
        ` · ${schedule.version ? `version ${schedule.version}` : "the latest version"}`,
        ` · a missed fire is ${schedule.missed === "catch_up" ? "caught up" : "skipped"}`),
      schedule.next_fires.length
        ? el("ol", { class: "next-fires mono small", "aria-label": `The next fire times of ${schedule.name}` },
          schedule.next_fires.map((time) => el("li", {}, when(time))))
        : el("p", { class: "next-fires muted small" }, "No fire while it is paused."));
  }

  async function load() {
    try {
      const page = await api.get(`/schedules?workflow=${encodeURIComponent(workflowId)}&limit=500`);
      $("schedule-list").replaceChildren(...page.items.map(row));
      $("schedules-status").textContent = page.items.length ? "" : "No schedule yet.";
    } catch (error) {
      $("schedules-status").textContent = `The schedules could not be read: ${error.message}`;
    }
  }

  function showProblem(where, message) {
    const field = (where || "").split(".")[0];
    const slot = form.querySelector(`[data-problem="${field}"]`);
    const control = form.querySelector(`[name="${field}"]`);
    if (slot) {
      slot.textContent = where.includes(".") ? `${where}: ${message}` : message;
      if (control) {
        control.classList.add("invalid");
        control.setAttribute("aria-invalid", "true");
        control.focus();
      }
    } else {
      $("schedule-error").textContent = where ? `${where}: ${message}` : message;
      $("schedule-error").hidden = false;
    }
  }

  function clearProblems() {
    form.querySelectorAll("[data-problem]").forEach((slot) => { slot.textContent = ""; });
    form.querySelectorAll(".invalid").forEach((control) => {
      control.classList.remove("invalid");
      control.removeAttribute("aria-invalid");
    });
    $("schedule-error").hidden = true;
  }

  function openForm(schedule) {
    editing = schedule;
    clearProblems();
    $("schedule-form-heading").textContent = schedule ? `Edit ${schedule.name}` : "New schedule";
    $("schedule-name").value = schedule ? schedule.name : "";
    $("schedule-cron").value = schedule ? schedule.cron : "";
    $("schedule-timezone").value = schedule ? schedule.timezone : (Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC");
    $("schedule-version").value = schedule && schedule.version ? String(schedule.version) : "";
    $("schedule-missed").value = schedule ? schedule.missed : "skip";
    $("schedule-input").value = JSON.stringify(schedule ? schedule.input : {}, null, 2);
    form.hidden = false;
    $("schedule-name").focus();
  }

  async function save(event) {
    event.preventDefault();
    clearProblems();
    let input;
    try {
      input = JSON.parse($("schedule-input").value || "{}");
    } catch (error) {
      showProblem("input", `is not JSON: ${error.message}`);
      return;
    }
    const body = { name: $("schedule-name").value, cron: $("schedule-cron").value, timezone: $("schedule-timezone").value,
      version: $("schedule-version").value ? Number($("schedule-version").value) : null,
      missed: $("schedule-missed").value, input };
    try {
      if (editing) await api.patch(`/schedules/${editing.id}`, body);
      else await api.post("/schedules", { ...body, workflow_id: workflowId });
      form.hidden = true;
      await load();
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      showProblem(error.where, Array.isArray(error.details) && error.details[0] ? error.details[0].message : error.message);
    }
  }

  async function act(schedule, action) {
    try {
      await api.post(`/schedules/${schedule.id}/${action}`);
    } catch (error) {
      $("schedules-status").textContent = error.message;
    }
    await load();
  }

  async function remove(schedule) {
    if (!window.confirm(`Delete the schedule ${schedule.name}? The runs it started stay.`)) return;
    try {
      await api.delete(`/schedules/${schedule.id}`);
    } catch (error) {
      $("schedules-status").textContent = error.message;
    }
    await load();
  }

  if (editable) {
    $("schedule-add").addEventListener("click", () => openForm(null));
    $("schedule-cancel").addEventListener("click", () => { form.hidden = true; });
    form.addEventListener("submit", save);
  }
  load();
})();
