// Renders formulas with KaTeX, the same way on every page (labelling, review, gold): no trusted
// commands, errors shown in place. The server marks each formula as a .math span
// (labeling_tags' markdown_math filter), escaped, so only those are rendered, each once.
// window.stepwiseRenderMath(root) renders what is new under root (label.js calls it after htmx
// swaps); the whole page is rendered once it has loaded.
(function () {
  "use strict";
  var OPTIONS = {
    delimiters: [
      { left: "$$", right: "$$", display: true },
      { left: "\\[", right: "\\]", display: true },
      { left: "\\(", right: "\\)", display: false },
      { left: "$", right: "$", display: false },
    ],
    trust: false,
    throwOnError: false,
    strict: "ignore",
  };

  function render(root) {
    if (typeof window.renderMathInElement !== "function") return;
    var nodes = root.querySelectorAll ? root.querySelectorAll(".math:not([data-rendered])") : [];
    for (var i = 0; i < nodes.length; i++) {
      window.renderMathInElement(nodes[i], OPTIONS);
      nodes[i].setAttribute("data-rendered", "");
    }
  }

  window.stepwiseRenderMath = render;
  // Content swapped in by htmx (an import preview, a review row) is rendered as it arrives.
  document.addEventListener("htmx:afterSettle", function (event) { render(event.target); });
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", function () { render(document); });
  } else {
    render(document);
  }
})();
