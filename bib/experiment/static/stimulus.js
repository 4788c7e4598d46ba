// bib experiment: the stimulus window (the infant's screen). It shows the attention-getter or the
// trial's video and nothing else; the experimenter's window (index.html, experiment.js) opens it and
// drives it with postMessage (file:// pages are opaque origins, so messages rather than shared DOM).
// Keys pressed here (the window may have the focus on the infant's monitor) are sent back with their
// time on the shared clock (timeOrigin + timeStamp), and so are the video's playing/ended events.
//
// The frames actually presented are watched with requestVideoFrameCallback: for each trial (its token)
// the window reports the first frame shown, the first frame at or after the outcome time
// (video_outcome_shown, at its expected display time), every stall (a gap between presented frames
// longer than the frames it advanced by more than one frame interval; its length is the gap minus
// those frames' nominal time) and, after every frame, the running counts (frames, stalls, longest).
(function () {
  "use strict";
  var video = document.getElementById("stimulus");
  var attention = document.getElementById("attention");
  var control = window.opener;
  function now() { return performance.timeOrigin + performance.now(); }
  function tell(message) { if (control && !control.closed) control.postMessage(message, "*"); }
  var run = null;  // the trial whose frames are watched
  function stopWatch() { run = null; }
  function watch(token, fps, outcome) {
    stopWatch();
    if (!video.requestVideoFrameCallback) {
      tell({ kind: "warning", text: "This browser cannot report the frames it presents (requestVideoFrameCallback): timing not logged." });
      return;
    }
    var mine = { token: token, interval: fps > 0 ? 1000 / fps : 1000 / 30, outcome: outcome, count: 0, first: null,
                 lastTime: null, lastFrames: null, stalls: 0, maxStall: 0, outcomeSent: false };
    run = mine;
    function onFrame(now, meta) {
      if (run !== mine) return;
      var shown = meta.expectedDisplayTime || meta.presentationTime, at = performance.timeOrigin + shown;
      if (mine.first === null) {
        mine.first = meta.presentedFrames;
        tell({ kind: "video", event: "video_first_frame", at: at, token: token });
      } else {
        var advanced = Math.max(1, meta.presentedFrames - mine.lastFrames), stall = shown - mine.lastTime - advanced * mine.interval;
        if (stall > mine.interval) {
          mine.stalls += 1; mine.maxStall = Math.max(mine.maxStall, stall);
          tell({ kind: "video", event: "video_stall", at: at, ms: stall, token: token });
        }
      }
      mine.lastTime = shown; mine.lastFrames = meta.presentedFrames;
      mine.count = meta.presentedFrames - mine.first + 1;
      if (!mine.outcomeSent && meta.mediaTime >= mine.outcome - mine.interval / 2000) {
        mine.outcomeSent = true;
        tell({ kind: "video", event: "video_outcome_shown", at: at, token: token, media_time: meta.mediaTime });
      }
      tell({ kind: "frame", token: token, count: mine.count, stalls: mine.stalls, max_stall_ms: mine.maxStall });
      if (!video.ended) video.requestVideoFrameCallback(onFrame);
    }
    video.requestVideoFrameCallback(onFrame);
  }
  function show(what, src) {
    attention.hidden = what !== "attention";
    video.hidden = what !== "video";
    if (what !== "video") video.pause();
    if (src && video.getAttribute("src") !== src) { video.src = src; video.load(); }
  }
  window.addEventListener("message", function (e) {
    var m = e.data || {};
    if (m.cmd === "ping") { tell({ kind: "pong", t0: m.t0, t1: now() }); return; }
    if (m.cmd !== "play") stopWatch();
    if (m.cmd === "attention") show("attention", m.video);
    else if (m.cmd === "play") {
      show("video", m.video);
      watch(m.token, m.fps, m.outcome_s);
      try { video.currentTime = 0; } catch (err) { /* not loaded yet */ }
      var played = video.play();
      if (played && played.catch) played.catch(function (err) { tell({ kind: "warning", text: "The video did not play: " + err }); });
    } else if (m.cmd === "blank") show("blank");
    else if (m.cmd === "close") window.close();
  });
  video.addEventListener("playing", function () { tell({ kind: "video", event: "video_playing", at: now() }); });
  video.addEventListener("ended", function () {
    tell({ kind: "video", event: "video_ended", at: now(), token: run ? run.token : null });
    stopWatch();
  });
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
