// The agent edit form: say that it is saving, warn before leaving with unsaved changes, and
// offer "calls wait for approval" only for a tool the agent has (ticked, or its server's `*`).
(function () {
  "use strict";
  const form = document.getElementById("agent-form");
  if (!form) return;

  function ticked(name) {
    const box = Array.from(form.querySelectorAll('input[name="tools"]')).find((input) => input.value === name);
    return Boolean(box && box.checked);
  }

  // A disabled box is not sent: unticking a tool drops its approval with it.
  function syncApprovals() {
    form.querySelectorAll('input[name="tools_needing_approval"]').forEach((box) => {
      const server = box.dataset.server;
      const has = ticked(box.dataset.forTool) || (Boolean(server) && ticked(server + ".*"));
      box.disabled = !has;
      box.closest("label").classList.toggle("muted", !has);
    });
  }
  form.querySelectorAll('input[name="tools"]').forEach((box) => box.addEventListener("change", syncApprovals));
  syncApprovals();

  const initial = new URLSearchParams(new FormData(form)).toString();
  let submitting = false;
  form.addEventListener("submit", () => {
    submitting = true;
    const button = document.getElementById("save-agent");
    button.disabled = true;
    button.textContent = "Saving…";
  });
  window.addEventListener("beforeunload", (event) => {
    if (!submitting && new URLSearchParams(new FormData(form)).toString() !== initial) {
      event.preventDefault();
      event.returnValue = "";
    }
  });
  const firstError = form.querySelector(".invalid");
  if (firstError) firstError.focus();
})();
