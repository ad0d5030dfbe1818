// The transcript seeks the player: a click on a line plays the recording from that
// line's start, and the line being played is marked (class "current", aria-current).
// Without this file the transcript is plain text and the player works on its own.
(function () {
  "use strict";
  var audio = document.getElementById("recording");
  var list = document.querySelector("[data-transcript]");
  if (!audio || !list) return;
  var lines = Array.prototype.slice.call(list.querySelectorAll("[data-start]"));
  var current = null;

  function mark(line) {
    if (line === current) return;
    if (current) { current.classList.remove("current"); current.removeAttribute("aria-current"); }
    current = line;
    if (line) { line.classList.add("current"); line.setAttribute("aria-current", "true"); }
  }
  function playing(time) {
    var found = null;
    lines.forEach(function (line) {
      if (Number(line.dataset.start) <= time + 0.05) found = line;
    });
    return found;
  }
  list.classList.add("seekable");
  lines.forEach(function (line) {
    line.addEventListener("click", function () {
      audio.currentTime = Number(line.dataset.start);
      mark(line);
      audio.play().catch(function () {});
    });
  });
  audio.addEventListener("timeupdate", function () { mark(playing(audio.currentTime)); });
})();
