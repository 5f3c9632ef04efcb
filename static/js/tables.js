// A table wider than its place scrolls sideways inside a frame of its own rather than
// widening the page: the frame takes keyboard focus (arrow keys scroll it) and shows a
// shadow and "scroll →" on the side that has more. Loaded on every page; tables that page
// scripts draw later are framed as they appear.
(function () {
  "use strict";

  function cue(frame, scroller) {
    const more = scroller.scrollWidth - scroller.clientWidth;
    frame.classList.toggle("more-right", more > 1 && scroller.scrollLeft < more - 1);
    frame.classList.toggle("more-left", more > 1 && scroller.scrollLeft > 1);
    scroller.tabIndex = more > 1 ? 0 : -1;
  }

  const watcher = typeof ResizeObserver === "function"
    ? new ResizeObserver((entries) => entries.forEach((entry) => cue(entry.target.parentElement, entry.target)))
    : null;

  function frame(table) {
    if (table.closest(".table-scroll, .no-table-frame")) return;
    const outer = document.createElement("div");
    outer.className = "table-frame";
    const scroller = document.createElement("div");
    scroller.className = "table-scroll";
    scroller.setAttribute("role", "region");
    const caption = table.getAttribute("aria-label") || (table.caption && table.caption.textContent) || "Table";
    scroller.setAttribute("aria-label", `${caption.trim()} (scrolls sideways)`);
    table.replaceWith(outer);
    scroller.append(table);
    outer.append(scroller);
    scroller.addEventListener("scroll", () => cue(outer, scroller), { passive: true });
    if (watcher) watcher.observe(scroller);
    cue(outer, scroller);
  }

  // A table's own size changes too (rows drawn later): watch it and report to its frame.
  const tableWatcher = typeof ResizeObserver === "function"
    ? new ResizeObserver((entries) => entries.forEach((entry) => {
      const scroller = entry.target.closest(".table-scroll");
      if (scroller) cue(scroller.parentElement, scroller);
    }))
    : null;

  function frameAll(root) {
    root.querySelectorAll("table").forEach((table) => {
      frame(table);
      if (tableWatcher) tableWatcher.observe(table);
    });
  }

  frameAll(document);
  new MutationObserver((changes) => {
    for (const change of changes) {
      for (const node of change.addedNodes) {
        if (node.nodeType !== 1) continue;
        if (node.tagName === "TABLE") frameAll(node.parentElement || document);
        else if (node.querySelector("table")) frameAll(node);
      }
    }
  }).observe(document.body, { childList: true, subtree: true });
})();
