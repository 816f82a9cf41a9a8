// The campaign settings: a setting that does not apply to the chosen selection strategy is hidden
// (the server renders it so, learning.applies); this follows the select without a reload. A
// hidden row's input is still sent, so its value is kept; a row with an error stays shown.
{
  const strategy = document.querySelector("select[name=al_strategy]");
  strategy?.addEventListener("change", () => {
    for (const row of document.querySelectorAll("tr[data-al-strategies]")) {
      if (row.querySelector(".errorlist")) continue;
      row.hidden = !row.dataset.alStrategies.split(" ").includes(strategy.value);
    }
  });
}
