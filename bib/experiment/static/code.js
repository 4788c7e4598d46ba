// bib experiment: the coding tool for a second coder (code.html). The first coder's look log gives the
// session's trials (start and end on the page clock) and the recording's start; the recording (or,
// without one, the session's timeline run in real time) is replayed and the coder holds SPACE while
// the infant looks. Session time = recording start + the recording's current time. Each trial's
// looking time is the coder's looks within the first coder's trial, from where the study measures
// looking (the outcome frame or the trial start).
//
// Coding paints the timeline: while the session time moves forward (playing, or a frame step forward),
// the span it crosses is set to what the coder does, looking with SPACE held and away without, so
// coding a span again replaces what was coded there and never adds to it. A jump (a seek, a step
// back, the timeline clicked) moves without painting. The looks are kept as disjoint intervals.
// Keys: SPACE look; "." or ArrowRight one frame forward, "," or ArrowLeft one frame back (paused, at
// the recording's frame rate); "u" undoes the last look (back to what was coded when the look
// before it ended, or at the last jump); "k" play/pause. The recording's length and frame rate are read from the WebM file itself
// (its clusters' and blocks' timecodes: a browser recording has no duration in its header), and a
// recording shorter than the session is refused. Like the experimenter's window, this page shows no
// condition or outcome. With ?clock=manual the session time is set by hand
// (window.bibCoding.clock.set(ms) moves forward or back, .seek(ms) jumps), as in the tests.
(function () {
  "use strict";
  var S = window.BIB_STUDY, C = S.criteria;
  var $ = function (id) { return document.getElementById(id); };
  var manual = /[?&]clock=manual\b/.test(window.location.search);
  var manualNow = 0, t0wall = null, t0session = 0, rate = 1;
  var plan = null, coding = false;
  var looks = [];        // disjoint [on, off] intervals (session ms), sorted
  var cursor = null;     // the session time coded up to
  var down = false;      // SPACE held
  var history = [];      // looks before each look, for undo
  var mark = null;       // looks when the last look ended or the coder last jumped
  var fps = 30;
  var TOLERANCE_MS = 500;  // a recording may end this much before the session's last trial

  var clock = {
    set: function (ms) { manualNow = ms; advance(ms, false); },
    seek: function (ms) { manualNow = ms; jump(ms); },
    now: function () {
      if (manual) return manualNow;
      var v = $("replay");
      if (plan && plan.recording) return plan.recording_start + v.currentTime * 1000;
      return t0session + (performance.now() - t0wall) * rate;
    }
  };
  function fail(text) { $("code-error").textContent = text; $("code-error").hidden = false; throw new Error(text); }
  function parseCsv(text) {
    var lines = text.replace(/\r/g, "").split("\n").filter(function (l) { return l.length; });
    var head = lines[0].split(",");
    return lines.slice(1).map(function (l) {
      var cells = l.split(","), row = {};
      head.forEach(function (h, i) { row[h] = cells[i] === undefined ? "" : cells[i]; });
      return row;
    });
  }

  // ------------------------------------------------------------------ the WebM file's own timing
  // EBML: element ids and sizes are variable-length integers. A flat scan descends into the master
  // elements (Segment, Cluster, BlockGroup; their size may be "unknown", as MediaRecorder writes them)
  // and skips every other element; a truncated last element is ignored.
  var MASTER = { 0x18538067: 1, 0x1F43B675: 1, 0xA0: 1, 0x1549A966: 1 };
  function vint(b, i, raw) {
    if (i >= b.length) return null;
    var first = b[i], len = 1, mask = 0x80;
    while (len <= 8 && !(first & mask)) { len++; mask >>= 1; }
    if (len > 8 || i + len > b.length) return null;
    var value = raw ? first : first & (mask - 1), ones = value === mask - 1;
    for (var j = 1; j < len; j++) { value = value * 256 + b[i + j]; if (b[i + j] !== 0xff) ones = false; }
    return { value: value, len: len, unknown: !raw && ones };
  }
  function uint(b, i, n) { var v = 0; for (var j = 0; j < n; j++) v = v * 256 + b[i + j]; return v; }
  // The recording's timing, read in windows of 1 MiB (a long recording is never held in memory whole;
  // ``windowBytes`` for the tests): resolves to {duration_ms, frame_ms, frames}, or null when no frames
  // with timecodes were found.
  function webmTiming(file, windowBytes) {
    var WINDOW = Math.max(64, windowBytes || 1 << 20);
    var st = { i: 0, scale: 1e6, cluster: 0, times: [], track: null };
    function element(b, at, last, size) {  // parse the element at b[at]: its end (file offset), or null to stop / -1 to reload
      var i = at - st.base;
      if (!last && i + 16 > b.length) return -1;
      var id = vint(b, i, true); if (!id) return null;
      var sz = vint(b, i + id.len, false); if (!sz) return null;
      var body = i + id.len + sz.len;
      if (MASTER[id.value]) return st.base + body;
      if (sz.unknown || st.base + body + sz.value > size) return null;  // cut off: the file ends here
      var reads = id.value === 0x2AD7B1 || id.value === 0xE7 || id.value === 0xA3 || id.value === 0xA1;
      if (reads && body + Math.min(sz.value, 12) > b.length) return -1;
      if (id.value === 0x2AD7B1) st.scale = uint(b, body, sz.value);
      else if (id.value === 0xE7) st.cluster = uint(b, body, sz.value);
      else if (id.value === 0xA3 || id.value === 0xA1) {
        var tn = vint(b, body, false);
        if (tn) {
          if (st.track === null) st.track = tn.value;
          if (tn.value === st.track) {
            var rel = (b[body + tn.len] << 8) | b[body + tn.len + 1];
            if (rel & 0x8000) rel -= 0x10000;
            st.times.push((st.cluster + rel) * st.scale / 1e6);
          }
        }
      }
      return st.base + body + sz.value;
    }
    function result() {
      var times = st.times;
      if (times.length < 2) return null;
      times.sort(function (x, y) { return x - y; });
      var gaps = [];
      for (var k = 1; k < times.length; k++) if (times[k] > times[k - 1]) gaps.push(times[k] - times[k - 1]);
      gaps.sort(function (x, y) { return x - y; });
      var frame = gaps.length ? gaps[Math.floor(gaps.length / 2)] : 1000 / 30;
      return { duration_ms: times[times.length - 1] + frame, frame_ms: frame, frames: times.length };
    }
    function round() {
      st.base = st.i;
      return file.slice(st.base, Math.min(file.size, st.base + WINDOW)).arrayBuffer().then(function (buf) {
        var b = new Uint8Array(buf), last = st.base + b.length >= file.size;
        while (st.i < file.size) {
          if (st.i >= st.base + b.length) return round();  // skipped past this window
          var next = element(b, st.i, last, file.size);
          if (next === null) break;
          if (next === -1) return round();  // the element's head lies across the window's end
          st.i = next;
        }
        return result();
      });
    }
    return round();
  }

  // ------------------------------------------------------------------ the session
  // The session's trials from the first coder's look log: each trial_start that a trial_end closed (a
  // restarted attempt is dropped), in time order; trial k (1-based) is the trials file's trial_num k.
  // A position may come back (habituation repeats a pair's familiarization videos).
  function sessionPlan(rows, name) {
    var missing = S.look_columns.filter(function (c) { return !(rows.length && c in rows[0]); });
    if (!rows.length || missing.length) fail(name + ": not a look log of bib experiment (columns " + S.look_columns.join(", ") + ")");
    var pid = rows[0].participant_id, order = rows[0].order, done = [], open = null, recStart = null;
    rows.forEach(function (r) {
      if (r.participant_id !== pid) fail(name + ": more than one participant (" + pid + ", " + r.participant_id + ")");
      var t = parseFloat(r.clock_ms), position = parseInt(r.position, 10);
      if (r.event === "recording_start") recStart = t;
      else if (r.event === "trial_start") open = { position: position, start: t };
      else if (r.event === "trial_restart") open = null;
      else if (r.event.indexOf("trial_end:") === 0 && open && open.position === position) { open.end = t; done.push(open); open = null; }
    });
    var rowsOfOrder = S.orders[String(order)];
    if (!rowsOfOrder) fail(name + ": order " + order + " is not an order of study " + S.name);
    done.sort(function (a, b) { return a.start - b.start; });
    done.forEach(function (t, i) {
      t.trial_num = i + 1;
      var row = rowsOfOrder[t.position - 1];
      if (!row) fail(name + ": position " + t.position + " is not in order " + order + " of study " + S.name);
      t.row = row;
      t.m = C.measure_from === "outcome" ? row.outcome_s * 1000 : 0;
    });
    if (!done.length) fail(name + ": no finished trial in the look log");
    return { participant_id: pid, order: order, trials: done, recording_start: recStart, recording: null };
  }
  function checkRecording(p, file) {
    var want = S.name + "_" + p.participant_id + S.recording_suffix;
    if (file.name !== want) fail(file.name + ": not the recording of session " + S.name + " " + p.participant_id +
      " (its recording is " + want + ")");
    if (p.recording_start === null) fail(file.name + ": session " + S.name + " " + p.participant_id + " was not recorded (its look log has no recording_start)");
    return webmTiming(file).then(function (timing) {
      if (!timing) fail(file.name + ": not a WebM recording (no video frames with timecodes found)");
      var need = p.trials[p.trials.length - 1].end - p.recording_start;
      if (timing.duration_ms < need - TOLERANCE_MS) fail(file.name + ": the recording lasts " + (timing.duration_ms / 1000).toFixed(3) +
        " s, the session " + (need / 1000).toFixed(3) + " s from the recording's start: shorter than the session (cut, or another session's)");
      p.recording = file.name;
      p.recording_ms = timing.duration_ms;
      p.fps = 1000 / timing.frame_ms;
    });
  }

  // ------------------------------------------------------------------ coding: painting the timeline
  function paint(a, b, on) {
    if (!(b > a)) return;
    var out = [];
    looks.forEach(function (l) {
      if (l[1] <= a || l[0] >= b) { out.push(l); return; }
      if (l[0] < a) out.push([l[0], a]);
      if (l[1] > b) out.push([b, l[1]]);
    });
    if (on) out.push([a, b]);
    out.sort(function (x, y) { return x[0] - y[0]; });
    looks = [];
    out.forEach(function (l) {  // merge touching intervals
      var last = looks[looks.length - 1];
      if (last && l[0] <= last[1]) last[1] = Math.max(last[1], l[1]); else looks.push([l[0], l[1]]);
    });
  }
  // Time moved to t: forward paints what the coder did over the span; back (or a long skip) jumps.
  function advance(t, seeking) {
    if (!coding) return;
    if (cursor === null || t < cursor || (seeking && t - cursor > 2000 / fps)) { jump(t); return; }
    paint(cursor, t, down);
    cursor = t;
    render();
  }
  function jump(t) { if (!coding) return; cursor = t; mark = copyLooks(); render(); }
  // Undo restores the looks as they were when the previous look ended or the coder last jumped
  // (``mark``): the look and the span coded away just before it are undone together.
  function copyLooks() { return looks.map(function (l) { return l.slice(); }); }
  function lookDown() { history.push(mark || copyLooks()); advance(clock.now(), false); down = true; render(); }
  function lookUp() { advance(clock.now(), false); down = false; mark = copyLooks(); render(); }
  function undo() {
    if (!history.length) return;
    looks = history.pop();
    mark = copyLooks();
    down = false;
    render();
  }
  function step(frames) {
    var v = $("replay");
    if (!manual && plan.recording) {
      v.pause();
      v.currentTime = Math.max(0, v.currentTime + frames / fps);
      advance(clock.now(), frames > 0);
    } else {
      var t = clock.now() + frames * 1000 / fps;
      if (manual) manualNow = t; else { t0session = t; t0wall = performance.now(); }
      advance(t, frames > 0);
    }
  }
  function setRate(r) {
    if (!manual && !(plan && plan.recording)) { t0session = clock.now(); t0wall = performance.now(); }
    rate = r;
    $("replay").playbackRate = r;
  }

  // ------------------------------------------------------------------ display (no condition, no outcome)
  function looked(t) {
    var from = t.start + t.m, total = 0;
    looks.forEach(function (l) { total += Math.max(0, Math.min(l[1], t.end) - Math.max(l[0], from)); });
    return total;
  }
  function render() {
    if (!plan) return;
    var t = clock.now(), cur = plan.trials.filter(function (x) { return x.start <= t && t < x.end; })[0];
    $("code-status").textContent = (cur ? "trial " + cur.trial_num + " · " + cur.row.phase : "between trials") +
      " · " + (down ? "LOOKING" : "away") + " · " + looks.length + " look" + (looks.length === 1 ? "" : "s") + " coded · " +
      fps.toFixed(fps % 1 ? 2 : 0) + " fps · " + rate + "x";
    var line = $("timeline"), t0 = plan.trials[0].start, t1 = plan.trials[plan.trials.length - 1].end, span = t1 - t0;
    var pct = function (x) { return (100 * (x - t0) / span).toFixed(4) + "%"; };
    line.innerHTML = "";
    plan.trials.forEach(function (x) {
      var d = document.createElement("div");
      d.className = "tl-trial"; d.style.left = pct(x.start); d.style.width = pct(t0 + x.end - x.start);
      d.title = "trial " + x.trial_num + " (" + x.row.phase + "): " + (looked(x) / 1000).toFixed(3) + " s coded";
      d.textContent = String(x.trial_num);
      d.addEventListener("click", function () { seekTo(x.start); });
      line.appendChild(d);
    });
    looks.forEach(function (l) {
      var d = document.createElement("div");
      d.className = "tl-look"; d.style.left = pct(Math.max(l[0], t0)); d.style.width = pct(t0 + Math.min(l[1], t1) - Math.max(l[0], t0));
      line.appendChild(d);
    });
    var head = document.createElement("div");
    head.className = "tl-head"; head.style.left = pct(Math.min(Math.max(t, t0), t1));
    line.appendChild(head);
  }
  function seekTo(ms) {
    if (manual) { clock.seek(ms); return; }
    if (plan.recording) $("replay").currentTime = Math.max(0, (ms - plan.recording_start) / 1000);
    else { t0session = ms; t0wall = performance.now(); jump(ms); }
  }

  function start() {
    $("code-error").hidden = true;
    $("code-error").textContent = "";
    var lf = $("looks-file").files[0], rf = $("recording-file").files[0];
    if (!lf) { $("code-error").textContent = "Choose the session's look log."; $("code-error").hidden = false; return; }
    var p;
    lf.text().then(function (text) {
      p = sessionPlan(parseCsv(text), lf.name);
      return rf ? checkRecording(p, rf) : null;
    }).then(function () {
      plan = p; looks = []; history = []; mark = null; down = false; cursor = null; coding = true;
      fps = p.fps || parseFloat($("fps").value) || 30;
      $("fps").value = fps.toFixed(fps % 1 ? 2 : 0);
      $("code-save").disabled = false;
      $("tools").hidden = false;
      if (rf) {
        var v = $("replay");
        v.hidden = false;
        v.src = URL.createObjectURL(rf);
        v.playbackRate = rate;
        v.addEventListener("timeupdate", function () { advance(clock.now(), false); });
        v.addEventListener("seeked", function () { advance(clock.now(), true); });
        if (!manual) v.play().catch(function () {});
        cursor = clock.now();
      } else {
        t0wall = performance.now(); t0session = plan.trials[0].start; cursor = manual ? manualNow : t0session;
        if (!manual) setInterval(function () { advance(clock.now(), false); }, 100);
      }
      render();
    }).catch(function (err) { if (!$("code-error").textContent) { $("code-error").textContent = String(err); } $("code-error").hidden = false; });
  }
  function save() {
    if (down) lookUp();
    coding = false;
    var cols = S.columns.concat(["study", "position", "episode_id", "pair_id", "coder", "recording", "looking_from_s",
      "study_id", "criteria_hash"]);
    var coder = $("coder").value.trim() || "B";
    var rows = plan.trials.map(function (t) {
      var v = { participant_id: plan.participant_id, task: t.row.task, trial_num: t.trial_num, phase: t.row.phase,
        outcome: t.row.outcome, looking_time_s: (looked(t) / 1000).toFixed(3), order: plan.order, item: t.row.pair_id,
        study: S.name, position: t.position, episode_id: t.row.episode_id, pair_id: t.row.pair_id, coder: coder,
        recording: plan.recording || "", looking_from_s: (t.m / 1000).toFixed(3), study_id: S.id,
        criteria_hash: S.criteria_hash };
      return cols.map(function (c) { return v.hasOwnProperty(c) ? v[c] : ""; }).join(",");
    });
    var text = [cols.join(",")].concat(rows).join("\n") + "\n";
    var a = document.createElement("a");
    a.href = URL.createObjectURL(new Blob([text], { type: "text/csv" }));
    a.download = S.name + "_" + plan.participant_id + "_coder" + coder + "_trials.csv";
    document.body.appendChild(a); a.click(); a.remove();
    $("code-status").textContent = "Saved " + a.download + " (" + rows.length + " trials).";
  }
  function typing(e) { var el = e.target; return el && el.closest && el.closest("input, select, textarea") !== null; }
  document.addEventListener("keydown", function (e) {
    if (!coding || typing(e)) return;
    var k = e.key.length === 1 ? e.key.toLowerCase() : e.key;
    if (k === " ") { e.preventDefault(); if (!e.repeat && !down) lookDown(); }
    else if (k === "." || k === "ArrowRight") { e.preventDefault(); step(1); }
    else if (k === "," || k === "ArrowLeft") { e.preventDefault(); step(-1); }
    else if (k === "u") { e.preventDefault(); undo(); }
    else if (k === "k" && plan.recording && !manual) { var v = $("replay"); if (v.paused) v.play(); else v.pause(); }
  });
  document.addEventListener("keyup", function (e) {
    if (!coding || typing(e) || e.key !== " ") return;
    e.preventDefault();
    if (down) lookUp();
  });
  $("code-start").addEventListener("click", start);
  $("code-save").addEventListener("click", save);
  $("undo").addEventListener("click", function () { undo(); $("undo").blur(); });
  $("step-back").addEventListener("click", function () { step(-1); $("step-back").blur(); });
  $("step-fwd").addEventListener("click", function () { step(1); $("step-fwd").blur(); });
  $("speed").addEventListener("change", function () { setRate(parseFloat($("speed").value)); $("speed").blur(); render(); });
  $("fps").addEventListener("change", function () { var f = parseFloat($("fps").value); if (f >= 1 && f <= 240) fps = f; render(); });
  window.bibCoding = {
    clock: clock, plan: function () { return plan; }, looks: function () { return looks.map(function (l) { return l.slice(); }); },
    fps: function () { return fps; }, rate: function () { return rate; }, webmTiming: webmTiming
  };
})();
