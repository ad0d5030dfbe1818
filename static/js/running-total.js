// The scoring workspace's running total: the points of the categories ticked, as they are
// ticked. Without this file the page shows the saved total, and saving computes it again.
(function () {
  "use strict";
  var total = document.querySelector("[data-running-total]");
  var form = document.getElementById("score-form");
  if (!total || !form) return;
  var output = total.querySelector("output");
  var state = total.querySelector("[data-total-state]");
  var saved = output.textContent.trim();
  var boxes = form.querySelectorAll("input[type=checkbox][data-points]");

  function update() {
    var points = 0;
    boxes.forEach(function (box) {
      if (box.checked) points += Number(box.dataset.points) || 0;
    });
    output.textContent = String(points);
    state.textContent = String(points) === saved && state.dataset.scored === "1"
      ? "(saved)"
      : "(as ticked, not saved yet)";
  }
  state.dataset.scored = state.textContent.indexOf("saved") >= 0 ? "1" : "0";
  form.addEventListener("change", function (event) {
    if (event.target.matches && event.target.matches("input[data-points]")) update();
  });
  update();
})();
