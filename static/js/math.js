// Renders formulas with KaTeX, the same way on every page (labelling, review, gold): no trusted
// commands, and a formula that cannot be rendered fails alone. The server marks each formula as
// a .math span holding one formula with its delimiters ($...$, $$...$$, \(...\), \[...\]),
// escaped (labeling_tags' markdown_math filter), so only those are rendered, each once.
//
// Each formula is rendered by itself with throwOnError: KaTeX's own error markup carries an
// inline style, which the Content Security Policy refuses (and reports). Any error (a parse
// error, a macro that expands forever, a stack overflow from deep nesting) leaves that formula
// as its escaped source with the class math-error and the reason in its title; the rest of the
// page renders. maxExpand and maxSize bound what a formula may cost.
//
// window.stepwiseRenderMath(root) renders what is new under root (label.js calls it after htmx
// swaps); the whole page is rendered once it has loaded. A display formula that is wider than
// its box scrolls inside it and is made focusable, with a label (markScrollers).
(function () {
  "use strict";
  var OPTIONS = {
    trust: false,
    throwOnError: true,
    strict: "ignore",
    maxExpand: 500,
    maxSize: 20,
  };
  var MAX_LENGTH = 20000; // characters of one formula
  var MAX_DEPTH = 100; // nested groups { ... } of one formula

  var DELIMITERS = [
    ["$$", "$$", true],
    ["\\[", "\\]", true],
    ["\\(", "\\)", false],
    ["$", "$", false],
  ];

  function split(source) {
    for (var i = 0; i < DELIMITERS.length; i++) {
      var d = DELIMITERS[i];
      var inner = source.length >= d[0].length + d[1].length;
      if (inner && source.indexOf(d[0]) === 0 && source.slice(-d[1].length) === d[1]) {
        return { tex: source.slice(d[0].length, source.length - d[1].length), display: d[2] };
      }
    }
    return null;
  }

  function tooDeep(tex) {
    var depth = 0;
    for (var i = 0; i < tex.length; i++) {
      var c = tex.charAt(i);
      if (c === "\\") i++;
      else if (c === "{" && ++depth > MAX_DEPTH) return true;
      else if (c === "}") depth--;
    }
    return false;
  }

  function fail(node, source, reason) {
    node.textContent = source; // as text: nothing in it is markup
    node.classList.add("math-error");
    node.setAttribute("title", "This formula could not be rendered: " + reason);
  }

  function renderOne(node) {
    var source = node.textContent;
    var formula = split(source);
    if (!formula) return fail(node, source, "no delimiters");
    if (formula.tex.length > MAX_LENGTH) return fail(node, source, "too long");
    if (tooDeep(formula.tex)) return fail(node, source, "nested too deeply");
    var holder = document.createElement("span");
    try {
      window.katex.render(formula.tex, holder, {
        displayMode: formula.display,
        trust: OPTIONS.trust,
        throwOnError: OPTIONS.throwOnError,
        strict: OPTIONS.strict,
        maxExpand: OPTIONS.maxExpand,
        maxSize: OPTIONS.maxSize,
      });
    } catch (error) {
      var reason = error && error.message ? String(error.message) : "error";
      return fail(node, source, reason.slice(0, 200));
    }
    node.textContent = "";
    while (holder.firstChild) node.appendChild(holder.firstChild);
  }

  function render(root) {
    if (!window.katex || typeof window.katex.render !== "function") return;
    var nodes = root.querySelectorAll ? root.querySelectorAll(".math:not([data-rendered])") : [];
    for (var i = 0; i < nodes.length; i++) {
      nodes[i].setAttribute("data-rendered", "");
      try {
        renderOne(nodes[i]);
      } catch (error) {
        // Never let one formula stop the others.
      }
    }
  }

  // A display formula wider than its box scrolls inside it (stepwise.css); one that does is a
  // focusable, named group, so the keyboard can reach it and scroll it with the arrow keys.
  // Formulas that fit stay out of the tab order.
  function markScrollers(root) {
    var nodes = root.querySelectorAll ? root.querySelectorAll(".math-display") : [];
    for (var i = 0; i < nodes.length; i++) {
      var node = nodes[i];
      if (node.scrollWidth > node.clientWidth + 1) {
        node.setAttribute("tabindex", "0");
        node.setAttribute("role", "group");
        node.setAttribute("aria-label", "Wide formula: scroll sideways with the arrow keys");
      } else if (node.getAttribute("tabindex") === "0") {
        node.removeAttribute("tabindex");
        node.removeAttribute("role");
        node.removeAttribute("aria-label");
      }
    }
  }

  function renderAndMark(root) {
    render(root);
    markScrollers(root === document ? document : root);
  }

  var resized = null;
  window.addEventListener("resize", function () {
    window.clearTimeout(resized);
    resized = window.setTimeout(function () { markScrollers(document); }, 100);
  });

  window.stepwiseRenderMath = renderAndMark;
  // Content swapped in by htmx (an import preview, a review row) is rendered as it arrives.
  document.addEventListener("htmx:afterSettle", function (event) { renderAndMark(event.target); });
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", function () { renderAndMark(document); });
  } else {
    renderAndMark(document);
  }
})();
