// bib experiment: the stimulus window (the infant's screen). It shows the attention-getter or the
// trial's video and nothing else; the experimenter's window (index.html, experiment.js) opens it and
// drives it with postMessage (file:// pages are opaque origins, so messages rather than shared DOM).
// Keys pressed here (the window may have the focus on the infant's monitor) are sent back with their
// time on the shared clock (timeOrigin + timeStamp), and so are the video's playing/ended events.
(function () {
  "use strict";
  var video = document.getElementById("stimulus");
  var attention = document.getElementById("attention");
  var control = window.opener;
  function now() { return performance.timeOrigin + performance.now(); }
  function tell(message) { if (control && !control.closed) control.postMessage(message, "*"); }
  function show(what, src) {
    attention.hidden = what !== "attention";
    video.hidden = what !== "video";
    if (what !== "video") video.pause();
    if (src && video.getAttribute("src") !== src) { video.src = src; video.load(); }
  }
  window.addEventListener("message", function (e) {
    var m = e.data || {};
    if (m.cmd === "attention") show("attention", m.video);
    else if (m.cmd === "play") {
      show("video", m.video);
      try { video.currentTime = 0; } catch (err) { /* not loaded yet */ }
      var played = video.play();
      if (played && played.catch) played.catch(function (err) { tell({ kind: "warning", text: "The video did not play: " + err }); });
    } else if (m.cmd === "blank") show("blank");
    else if (m.cmd === "close") window.close();
  });
  video.addEventListener("playing", function () { tell({ kind: "video", event: "video_playing", at: now() }); });
  video.addEventListener("ended", function () { tell({ kind: "video", event: "video_ended", at: now() }); });
  ["keydown", "keyup"].forEach(function (type) {
    document.addEventListener(type, function (e) {
      if (e.key === " " || e.key.toLowerCase() === "r" || e.key.toLowerCase() === "y") e.preventDefault();
      tell({ kind: "key", type: type, key: e.key, repeat: e.repeat, at: performance.timeOrigin + e.timeStamp });
    });
  });
  document.addEventListener("click", function () {
    var el = document.documentElement;
    if (!document.fullscreenElement && el.requestFullscreen) el.requestFullscreen().catch(function () {});
  });
  show("blank");
  tell({ kind: "ready" });
})();
