/* The labelling page: keys, time measurement, math rendering and htmx glue.
 *
 * Everything the page does works without this file (plain forms that post and redirect); this
 * adds the keyboard, KaTeX, client-measured times and the htmx niceties. No inline scripts or
 * on*= handlers anywhere (the site runs under a Content Security Policy): the templates mark
 * what this file needs with data- attributes:
 *   #steps[data-assignment, data-current, data-announce]   state of the solution being labelled
 *   [data-key="1|2|3"]  rating buttons;   [data-key-flag]  the current step's "unsure" box
 *   [data-key-flag-last] [data-key-undo] [data-key-skip] [data-key-submit]   buttons for keys
 *   [data-time="step|total"]  hidden inputs filled with milliseconds just before a form posts
 *   [data-correction]  the correction textarea (keys are off inside it)
 *   [data-missing]  hidden text shown when Enter is pressed before every step is rated
 *   [data-outcome="1|2|3"]  an agent trajectory's final-outcome radios (1, 2, 3 choose them
 *     once every turn is rated; Enter then submits with the choice)
 *   [data-notice]  the message about the previous action, removed at the next one
 * Phase 1 mode (#steps[data-phase1]): [data-candidate] candidates, the highlighted one
 *   ".selected"; in each [data-rate="1|2|3"] rating buttons, [data-flag] its "unsure" box,
 *   [data-choose] "continue with it"; [data-write-box] (a <details>) with [data-write] (the
 *   textarea of one's own step, keys off inside it) and [data-write-submit]
 * Formulas are rendered by static/js/math.js, loaded before this file.
 */
(function () {
  "use strict";

  var STORE_PREFIX = "stepwise:";

  // True from a request until its answer has settled. Keys pressed meanwhile wait in ``pending``
  // and are applied in order once the answer is shown: each acts on the page as it then is (the
  // step the previous key led to; an undo names the step the page shows as last), so fast typing
  // loses nothing and nothing is applied to a step the page has not reached. A refusal (400,
  // 409) or a failed request drops what is waiting: the page is not where those keys expected.
  var busy = false;
  var pending = [];

  // --- Storage (times and correction drafts survive a reload; private modes may refuse it) ---

  var store = {
    get: function (k) {
      try { return window.sessionStorage.getItem(STORE_PREFIX + k); } catch (e) { return null; }
    },
    set: function (k, v) {
      try { window.sessionStorage.setItem(STORE_PREFIX + k, v); } catch (e) { /* ignore */ }
    },
    forgetOthers: function (assignment) {
      try {
        var keep = STORE_PREFIX + assignment + ":";
        for (var i = window.sessionStorage.length - 1; i >= 0; i--) {
          var k = window.sessionStorage.key(i);
          if (k && k.indexOf(STORE_PREFIX) === 0 && k.indexOf(keep) !== 0) {
            window.sessionStorage.removeItem(k);
          }
        }
      } catch (e) { /* ignore */ }
    },
  };

  function startedAt(assignment, what) {
    var key = assignment + ":" + what;
    var value = Number(store.get(key));
    if (!value) {
      value = Date.now();
      store.set(key, String(value));
    }
    return value;
  }

  function stepsEl() { return document.getElementById("steps"); }

  // --- Math ---

  // static/js/math.js renders formulas (on every page that shows them); here, after each swap.
  function renderMath(root) {
    if (typeof window.stepwiseRenderMath === "function") window.stepwiseRenderMath(root);
  }

  // --- New content: math, timers, announcements, scrolling ---

  function onNewContent(root) {
    renderMath(root);
    var steps = stepsEl();
    if (!steps) return;
    var assignment = steps.getAttribute("data-assignment");
    store.forgetOthers(assignment);
    startedAt(assignment, "total");
    startedAt(assignment, "step:" + steps.getAttribute("data-current"));
    var help = document.querySelector("[data-open-help]");
    if (help) help.hidden = false;
    var correction = steps.querySelector("[data-correction]");
    if (correction && !correction.value) correction.value = store.get(assignment + ":correction") || "";
    var current = steps.querySelector(".step.current, #finish");
    if (root === document.body) {
      // A reload in the middle of a solution: bring the step being rated into view.
      if (current && steps.querySelector(".step.rated") && current.scrollIntoView) {
        current.scrollIntoView({ block: "nearest" });
      }
      return;
    }
    var announce = document.getElementById("announce");
    var notice = document.querySelector("#workspace .notice");
    var said = steps.getAttribute("data-announce") || "";
    if (root.id === "workspace") {
      if (notice) said = notice.textContent + " " + said;
      window.scrollTo(0, 0);
    } else if (current && current.scrollIntoView) {
      current.scrollIntoView({ block: "nearest" });
    }
    if (announce) announce.textContent = said;
    keepFocus(steps);
  }

  // After a swap the element that had focus is gone and focus falls to the page's body, where a
  // screen reader loses its place: put it on what comes next instead. The next step's rating
  // group (a focusable group, not a button: Enter on it stays the page's Enter), else the
  // highlighted candidate's in phase 1, else the submit button.
  function focusTarget(steps) {
    return steps.querySelector(".step.current .rate-buttons") ||
      steps.querySelector("[data-candidate].selected .rate-buttons") ||
      steps.querySelector("[data-key-submit]");
  }

  function keepFocus(steps) {
    var active = document.activeElement;
    if (active && active !== document.body && active.isConnected) return;
    var target = focusTarget(steps);
    if (target) target.focus({ preventScroll: true });
  }

  // Leaving a text box with Esc: to what comes next, not to the body.
  function leaveTextBox(box) {
    box.blur();
    var steps = stepsEl();
    var target = steps && focusTarget(steps);
    if (target) target.focus({ preventScroll: true });
  }

  // --- Times: filled in just before a form posts (capture phase runs before htmx's handler) ---

  document.addEventListener("submit", function (event) {
    var steps = stepsEl();
    if (!steps) return;
    var assignment = steps.getAttribute("data-assignment");
    var now = Date.now();
    var inputs = event.target.querySelectorAll("[data-time]");
    for (var i = 0; i < inputs.length; i++) {
      var what = inputs[i].getAttribute("data-time") === "step"
        ? "step:" + steps.getAttribute("data-current")
        : "total";
      inputs[i].value = String(now - startedAt(assignment, what));
    }
  }, true);

  document.addEventListener("input", function (event) {
    var target = event.target;
    var steps = stepsEl();
    if (steps && target.matches && target.matches("[data-correction]")) {
      store.set(steps.getAttribute("data-assignment") + ":correction", target.value);
    }
  });

  // --- Keys ---

  function press(el) {
    if (!el || el.disabled) return false;
    el.click();
    return true;
  }

  // Phase 1 mode: the keys act on the highlighted candidate (the server highlights the first
  // unrated one, else the best rated; j/k and the arrows move it).
  function selectedCandidate(steps) {
    return steps.querySelector("[data-candidate].selected");
  }

  function moveSelection(steps, by) {
    var all = steps.querySelectorAll("[data-candidate]");
    if (!all.length) return false;
    var at = Array.prototype.indexOf.call(all, selectedCandidate(steps));
    var next = at < 0 ? 0 : Math.min(all.length - 1, Math.max(0, at + by));
    if (at >= 0) all[at].classList.remove("selected");
    all[next].classList.add("selected");
    if (all[next].scrollIntoView) all[next].scrollIntoView({ block: "nearest" });
    return true;
  }

  function phase1Act(steps, key) {
    var selected = selectedCandidate(steps);
    switch (key) {
      case "1": case "2": case "3":
        return Boolean(selected) && press(selected.querySelector('[data-rate="' + key + '"]'));
      case "j": case "ArrowDown":
        return moveSelection(steps, 1);
      case "k": case "ArrowUp":
        return moveSelection(steps, -1);
      case "f": {
        var box = selected && selected.querySelector("[data-flag]");
        if (!box) return false;
        box.checked = !box.checked;
        return true;
      }
      case "Enter":
        return (Boolean(selected) && press(selected.querySelector("[data-choose]"))) ||
          press(steps.querySelector("[data-key-submit]")) || showMissing(steps);
      case "e":
        return press(steps.querySelector("[data-key-submit]"));
      case "w": {
        var details = steps.querySelector("[data-write-box]");
        var text = steps.querySelector("[data-write]");
        if (!text) return false;
        if (details) details.open = true;
        text.focus();
        return true;
      }
      case "write":
        return press(steps.querySelector("[data-write-submit]"));
      case "u": case "Backspace":
        return press(steps.querySelector("[data-key-undo]"));
      case "s":
        return press(steps.querySelector("[data-key-skip]"));
    }
    return false;
  }

  function act(key) {
    var steps = stepsEl();
    if (!steps) return false;
    if (steps.hasAttribute("data-phase1")) return phase1Act(steps, key);
    switch (key) {
      case "1": case "2": case "3":
        return press(steps.querySelector('[data-key="' + key + '"]')) || chooseOutcome(steps, key);
      case "f": {
        var box = steps.querySelector("[data-key-flag]");
        if (box) {
          box.checked = !box.checked;
          return true;
        }
        return press(steps.querySelector("[data-key-flag-last]"));
      }
      case "u": case "Backspace":
        return press(steps.querySelector("[data-key-undo]"));
      case "s":
        return press(steps.querySelector("[data-key-skip]"));
      case "Enter":
        return press(steps.querySelector("[data-key-submit]")) || showMissing(steps);
      case "c": {
        var correction = steps.querySelector("[data-correction]");
        if (correction) correction.focus();
        return Boolean(correction);
      }
    }
    return false;
  }

  // Every turn rated: 1, 2, 3 rate the trajectory's final outcome (sent with the submission).
  function chooseOutcome(steps, key) {
    var radio = steps.querySelector('[data-outcome="' + key + '"]');
    if (!radio) return false;
    radio.checked = true;
    var announce = document.getElementById("announce");
    var label = radio.closest("label");
    if (announce && label) announce.textContent = "Final outcome: " + label.textContent.trim() + ". Press Enter to submit.";
    return true;
  }

  // Enter before the solution is finished: say which steps are not rated yet (the text comes
  // from the server, hidden in the steps partial) instead of doing nothing.
  function showMissing(steps) {
    var missing = steps.querySelector("[data-missing]");
    if (!missing) return false;
    missing.hidden = false;
    var announce = document.getElementById("announce");
    if (announce) announce.textContent = missing.textContent;
    return true;
  }

  // A message about the previous action ("Submitted.", "Skipped.") is gone at the next one.
  function clearNotices() {
    var old = document.querySelectorAll("#workspace [data-notice], .messages");
    for (var i = 0; i < old.length; i++) old[i].remove();
  }

  var KEYS = { "1": 1, "2": 1, "3": 1, f: 1, u: 1, Backspace: 1, s: 1, Enter: 1, c: 1 };
  // Phase 1 mode's own keys, heard only on its page (the arrows scroll anywhere else).
  var PHASE1_KEYS = { j: 1, k: 1, ArrowDown: 1, ArrowUp: 1, e: 1, w: 1 };

  function shownAssignment() {
    var steps = stepsEl();
    return steps ? steps.getAttribute("data-assignment") : null;
  }

  // Each waiting key remembers the solution on screen when it was pressed: a key pressed for a
  // solution that has since been submitted or skipped (Enter pressed twice) is dropped, never
  // applied to the next one, which the person has not seen yet.
  function run(key) {
    pending.push({ key: key, assignment: shownAssignment() });
    drain();
  }

  // Apply waiting keys until one starts a request (or none is left). Called after each answer
  // has settled, on the next turn of the event loop, once htmx has wired up the new forms.
  function drain() {
    while (!busy && pending.length) {
      var next = pending.shift();
      if (next.assignment === shownAssignment()) act(next.key);
    }
  }

  function drainSoon() { window.setTimeout(drain, 0); }

  function isTextEntry(el) {
    if (!el || !el.closest) return false;
    return Boolean(el.closest(
      "textarea, select, [contenteditable]:not([contenteditable='false']), " +
      "input:not([type=checkbox]):not([type=radio]):not([type=button]):not([type=submit]):not([type=hidden])"
    ));
  }

  function openHelp() {
    var dialog = document.getElementById("key-help");
    if (dialog && !dialog.open && dialog.showModal) dialog.showModal();
  }

  document.addEventListener("keydown", function (event) {
    if (event.defaultPrevented || event.isComposing) return;
    var target = event.target;
    var dialog = document.getElementById("key-help");
    if (dialog && dialog.open) {
      if (event.key === "?") {
        dialog.close();
        event.preventDefault();
      }
      return; // Escape closes it natively
    }
    if (target && target.matches && target.matches("[data-write]")) {
      // One's own step: Enter (or Ctrl+Enter) continues with it, Shift+Enter is a new line.
      if (event.key === "Enter" && !event.shiftKey) {
        event.preventDefault();
        target.blur();
        run("write");
      } else if (event.key === "Escape") {
        leaveTextBox(target);
      }
      return;
    }
    if (target && target.matches && target.matches("[data-correction]")) {
      if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
        event.preventDefault();
        target.blur();
        run("Enter");
      } else if (event.key === "Escape") {
        leaveTextBox(target);
      }
      return;
    }
    if (isTextEntry(target) || event.ctrlKey || event.metaKey || event.altKey) return;
    var key = event.key.length === 1 ? event.key.toLowerCase() : event.key;
    if (key === "?") {
      event.preventDefault();
      openHelp();
      return;
    }
    var steps = stepsEl();
    var phase1 = Boolean(steps && steps.hasAttribute("data-phase1"));
    if (!KEYS[key] && !(phase1 && PHASE1_KEYS[key])) return;
    // Enter on a focused button, link or summary keeps its own meaning.
    if (key === "Enter" && target.closest && target.closest("button, a, summary, [role=button]")) return;
    event.preventDefault();
    run(key);
  });

  document.addEventListener("click", function (event) {
    if (event.target.closest && event.target.closest("[data-open-help]")) openHelp();
  });

  // --- htmx ---

  // Busy until the answer has settled: only then has htmx wired up the new forms (a click
  // before that would post the plain form and load a whole page). The templates swap with
  // ``settle:0ms``, so that is the moment the new content appears. Answers that swap nothing
  // (failures, 204) end it at once.
  document.addEventListener("htmx:beforeRequest", function (event) {
    busy = true;
    // Polls ("Check again" on a timer) are not the annotator's actions.
    if (event.detail.requestConfig && event.detail.requestConfig.verb !== "get") clearNotices();
  });
  document.addEventListener("htmx:afterRequest", function (event) {
    var status = event.detail.xhr ? event.detail.xhr.status : 0;
    var swapped = (status >= 200 && status < 400 && status !== 204) || status === 400 || status === 409;
    if (status < 200 || status >= 300) pending = [];
    if (!swapped) {
      busy = false;
      drainSoon();
    }
  });
  document.addEventListener("htmx:afterSettle", function () {
    busy = false;
    drainSoon();
  });

  // Refusals (400: a broken rule, 409: the assignment is no longer yours to change) come back as
  // the partial with the reason in it: show it instead of dropping it like other errors.
  document.addEventListener("htmx:beforeSwap", function (event) {
    var xhr = event.detail.xhr;
    // The page's views never redirect an htmx request; a redirect that was followed is the
    // login page (the session expired): go there for real instead of swapping it in.
    if (xhr.responseURL && event.detail.requestConfig) {
      var asked = new URL(event.detail.requestConfig.path, window.location.href);
      var got = new URL(xhr.responseURL);
      if (got.pathname !== asked.pathname) {
        event.detail.shouldSwap = false;
        pending = [];
        window.location.assign(got.href);
        return;
      }
    }
    var status = xhr.status;
    if (status === 400 || status === 409) {
      event.detail.shouldSwap = true;
      event.detail.isError = false;
    }
  });

  function showRequestError(text) {
    var box = document.getElementById("request-error");
    if (!box) {
      box = document.createElement("p");
      box.id = "request-error";
      box.className = "error";
      box.setAttribute("role", "alert");
      var main = document.getElementById("main");
      main.insertBefore(box, main.firstChild);
    }
    box.textContent = text;
  }

  document.addEventListener("htmx:responseError", function (event) {
    var status = event.detail.xhr.status;
    if (status === 400 || status === 409) return;
    showRequestError("The server refused that (" + status + "). Reload the page to continue.");
  });
  document.addEventListener("htmx:sendError", function () {
    showRequestError("The server could not be reached: your last action was not saved. Try again.");
  });
  document.addEventListener("htmx:afterSwap", function () {
    var box = document.getElementById("request-error");
    if (box) box.remove();
  });

  if (window.htmx) {
    window.htmx.onLoad(onNewContent);
  } else {
    document.addEventListener("DOMContentLoaded", function () { onNewContent(document.body); });
  }
})();
