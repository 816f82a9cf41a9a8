/* The import page's preview: a refused file (binary, not UTF-8, a bad split, the wrong format)
 * answers 400 with the reason in the preview partial. htmx drops error answers by default,
 * which left the preview empty; this swaps that one in, as the upload shows its refusal. */
(function () {
  "use strict";
  document.addEventListener("htmx:beforeSwap", function (event) {
    var target = event.detail.target;
    if (event.detail.xhr.status === 400 && target && target.id === "import-preview") {
      event.detail.shouldSwap = true;
      event.detail.isError = false;
    }
  });
})();
