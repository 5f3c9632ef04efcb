// The agent edit form: say that it is saving, and warn before leaving with unsaved changes.
(function () {
  "use strict";
  const form = document.getElementById("agent-form");
  if (!form) return;
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
