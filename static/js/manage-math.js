// Renders the formulas of the review and gold pages with KaTeX (the same options as the
// labelling page: no trusted commands, errors shown in place). The server marks each formula
// as a .math span (labeling_tags' markdown_math filter), escaped, so only those are rendered.
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

  function render() {
    if (typeof window.renderMathInElement !== "function") return;
    var nodes = document.querySelectorAll(".math:not([data-rendered])");
    for (var i = 0; i < nodes.length; i++) {
      window.renderMathInElement(nodes[i], OPTIONS);
      nodes[i].setAttribute("data-rendered", "");
    }
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", render);
  } else {
    render();
  }
})();
