// The Retention section of a workflow's page: the workflow's own rule (each field empty: the
// global setting, whose value is shown as the field's placeholder) and the rule its runs get.
// Authors save it with PUT /api/workflows/{id}/retention; a refusal is shown at the field it
// names. Where runs are deleted, the Cost card says that deleted runs leave its chart.
(function () {
  "use strict";

  const { api, ApiError } = window.switchyard;
  const section = document.getElementById("retention");
  if (!section) return;
  const url = `/workflows/${encodeURIComponent(section.dataset.workflow)}/retention`;
  const $ = (id) => document.getElementById(id);
  const form = $("retention-form");
  const FIELDS = ["days", "failed_days", "success_detail_days"];
  const field = (name) => form.querySelector(`[name="${name}"]`);

  function words(days, what) {
    return days ? `${what} after ${days} days` : `${what} never`;
  }

  function show(rule) {
    const effective = rule.effective;
    FIELDS.forEach((name) => {
      field(name).value = rule[name] === null ? "" : String(rule[name]);
      // A field left empty gets the global setting: the rule's effective value is then it.
      field(name).placeholder = rule[name] === null ? `global: ${effective[name]}` : "empty: the global setting";
    });
    $("retention-effective").textContent = `Its runs get: ${words(effective.days, "deleted")}; failed runs `
      + `${effective.failed_days ? `kept ${effective.failed_days} days` : "as the others"}; `
      + `${words(effective.success_detail_days, "successful runs' details removed")}`
      + (rule.updated_by ? ` (set by ${rule.updated_by})` : " (the global settings)") + ".";
    const note = $("cost-retention-note");
    if (note) note.hidden = !effective.days;
    $("retention-status").textContent = "";
  }

  function clearProblems() {
    form.querySelectorAll("[data-problem]").forEach((slot) => { slot.textContent = ""; });
    FIELDS.forEach((name) => { field(name).classList.remove("invalid"); field(name).removeAttribute("aria-invalid"); });
    $("retention-error").hidden = true;
  }

  function showProblem(where, message) {
    const name = (where || "").split(".").pop();
    if (FIELDS.includes(name)) {
      form.querySelector(`[data-problem="${name}"]`).textContent = message;
      field(name).classList.add("invalid");
      field(name).setAttribute("aria-invalid", "true");
      field(name).focus();
    } else {
      $("retention-error").textContent = where ? `${where}: ${message}` : message;
      $("retention-error").hidden = false;
    }
  }

  async function load() {
    try {
      show(await api.get(url));
    } catch (error) {
      $("retention-status").textContent = `The rule could not be read: ${error.message}`;
    }
  }

  async function save(event) {
    event.preventDefault();
    clearProblems();
    const body = {};
    for (const name of FIELDS) {
      const text = field(name).value.trim();
      if (text !== "" && !/^\d+$/.test(text)) {
        showProblem(name, "is not a whole number of days (empty: the global setting)");
        return;
      }
      body[name] = text === "" ? null : Number(text);
    }
    try {
      show(await api.put(url, body));
      $("retention-status").textContent = "Saved.";
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      const first = Array.isArray(error.details) && error.details[0] ? error.details[0] : null;
      showProblem(first ? first.where : error.where, first ? first.message : error.message);
    }
  }

  if (section.dataset.editable === "true") form.addEventListener("submit", save);
  load();
})();
