// Sizes the server computed (a bar's width, a list item's depth) come as data-* attributes,
// because the Content-Security-Policy refuses style attributes; they are applied here
// through the DOM, which it allows. Loaded on every page.
(function () {
  "use strict";

  for (const element of document.querySelectorAll("[data-width]")) {
    element.style.width = `${element.dataset.width}%`;
  }
  for (const element of document.querySelectorAll("[data-depth]")) {
    element.style.setProperty("--depth", element.dataset.depth);
  }
})();
