/* Highlights code and JSON in agent trajectories (tool calls' arguments, code a tool ran, tools'
 * schemas) with the vendored highlight.js core and three grammars (static/vendor/highlight/).
 *
 * The template names the vendored files on this script's own tag (data-core, data-json,
 * data-python, data-bash: their static URLs, whatever the storage calls them), and marks what to
 * highlight as <code class="language-json|python|bash">. Highlighting only adds classes: no
 * inline style, so the Content Security Policy holds. Anything new that htmx swaps in is
 * highlighted once it has settled; a block already done is left alone.
 */
(function () {
  "use strict";

  var tag = document.querySelector("script[data-highlight-core]");
  if (!tag) return;
  var LANGUAGES = ["json", "python", "bash"];
  var ready = null;

  function load() {
    if (ready) return ready;
    var urls = [tag.getAttribute("data-highlight-core")].concat(
      LANGUAGES.map(function (name) { return tag.getAttribute("data-highlight-" + name); })
    );
    ready = Promise.all(urls.map(function (url) { return import(url); })).then(function (mods) {
      var hljs = mods[0].default;
      LANGUAGES.forEach(function (name, i) { hljs.registerLanguage(name, mods[i + 1].default); });
      return hljs;
    });
    return ready;
  }

  function highlight(root) {
    var blocks = (root || document).querySelectorAll(
      "code.language-json:not(.hljs), code.language-python:not(.hljs), code.language-bash:not(.hljs)"
    );
    if (!blocks.length) return;
    load().then(function (hljs) {
      for (var i = 0; i < blocks.length; i++) {
        if (!blocks[i].classList.contains("hljs")) hljs.highlightElement(blocks[i]);
      }
    }).catch(function () { /* left as plain text: still readable */ });
  }

  highlight(document);
  document.addEventListener("htmx:afterSettle", function (event) { highlight(event.target); });
})();
