// Player buttons and the scoring workspace's keys. The pages work without this file:
// the browser's own audio controls play, seek and change speed, and the form submits.
(function () {
  "use strict";
  var audio = document.getElementById("recording");
  var rates = [1, 1.5, 2];

  function skip(seconds) {
    if (!audio) return;
    audio.currentTime = Math.max(0, Math.min((audio.duration || Infinity), audio.currentTime + seconds));
  }
  function setRate(rate) {
    if (!audio) return;
    audio.playbackRate = rate;
    document.querySelectorAll("[data-rate]").forEach(function (button) {
      button.setAttribute("aria-pressed", String(Number(button.dataset.rate) === rate));
    });
  }
  function toggle() {
    if (!audio) return;
    if (audio.paused) { audio.play().catch(function () {}); } else { audio.pause(); }
  }
  document.querySelectorAll("[data-skip]").forEach(function (button) {
    button.addEventListener("click", function () { skip(Number(button.dataset.skip)); });
  });
  document.querySelectorAll("[data-rate]").forEach(function (button) {
    button.addEventListener("click", function () { setRate(Number(button.dataset.rate)); });
  });

  var form = document.querySelector("form[data-scoring]");
  if (!form) return;

  function typing(target) {
    var tag = target.tagName;
    if (tag === "TEXTAREA" || tag === "SELECT") return true;
    return tag === "INPUT" && !["checkbox", "radio", "button", "submit"].includes(target.type);
  }
  function check(name) {
    var box = form.querySelector('input[type=checkbox][name="' + name + '"]');
    if (box) { box.checked = !box.checked; box.dispatchEvent(new Event("change", { bubbles: true })); }
  }

  document.addEventListener("keydown", function (event) {
    if ((event.ctrlKey || event.metaKey) && event.key === "Enter") {
      event.preventDefault();
      document.getElementById("save-next").click();
      return;
    }
    if (event.key === "Escape" && typing(event.target)) { event.target.blur(); return; }
    if (event.ctrlKey || event.metaKey || event.altKey || typing(event.target)) return;
    var key = event.key;
    if (key === " ") { event.preventDefault(); toggle(); }
    else if (key === "ArrowLeft") { event.preventDefault(); skip(-5); }
    else if (key === "ArrowRight") { event.preventDefault(); skip(5); }
    else if (key === "s" || key === "S") {
      var now = audio ? rates.indexOf(audio.playbackRate) : -1;
      setRate(rates[(now + 1) % rates.length]);
    }
    else if (key === "w" || key === "W") { check("wow"); }
    else if (/^[0-9]$/.test(key)) { check("cat" + (key === "0" ? 10 : Number(key))); }
  });
})();
