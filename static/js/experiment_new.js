// The new-experiment form: choosing another workflow (or dataset) asks for the form again
// with what was typed, so that the chosen workflow's nodes can be pinned and its agents given
// another model, and the dataset's versions listed. The CSRF token stays out of the address.
(function () {
  "use strict";

  const form = document.getElementById("experiment-form");
  if (!form) return;

  function choose(workflowChanged) {
    const data = new FormData(form);
    data.delete("csrfmiddlewaretoken");
    if (workflowChanged) {
      data.delete("workflow_version");
      for (const name of [...data.keys()]) {
        if (/^(pin|backend|model)__/.test(name)) data.delete(name);
      }
    }
    const query = new URLSearchParams();
    for (const [name, value] of data.entries()) if (value !== "") query.append(name, value);
    window.location.assign(`${window.location.pathname}?${query.toString()}`);
  }

  document.getElementById("choose-button").addEventListener("click", (event) => {
    event.preventDefault();
    choose(false);
  });
  form.elements.workflow_id.addEventListener("change", () => choose(true));
  form.elements.workflow_version.addEventListener("change", () => choose(false));
  form.elements.dataset.addEventListener("change", () => {
    form.elements.dataset_version.value = "";
    choose(false);
  });
})();
