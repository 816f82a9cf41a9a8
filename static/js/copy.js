/* Copy buttons: <button data-copy="#id"> copies the value (or text) of the element it names and
 * says so. No inline script (the site runs under a Content Security Policy). */
(function () {
  "use strict";
  document.addEventListener("click", function (event) {
    var button = event.target.closest && event.target.closest("[data-copy]");
    if (!button) return;
    var source = document.querySelector(button.getAttribute("data-copy"));
    if (!source) return;
    var text = "value" in source ? source.value : source.textContent;
    function done() { button.textContent = "Copied"; }
    if (navigator.clipboard && navigator.clipboard.writeText) {
      navigator.clipboard.writeText(text).then(done, function () {
        source.select && source.select();
      });
    } else if (source.select) {
      source.select();
      if (document.execCommand("copy")) done();
    }
  });
})();
