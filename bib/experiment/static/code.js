// bib experiment: coding mode for a second coder (code.html). The first coder's look log gives the
// session's trials (start and end on the page clock) and the recording's start; the recording (or,
// without one, the session's timeline run in real time) is replayed and the coder holds SPACE while
// the infant looks. Session time = recording start + the recording's current time. Each trial's
// looking time is the coder's looks within the first coder's trial, from where the study measures
// looking (the outcome frame or the trial start). With ?clock=manual the session time is set by hand
// (window.bibCoding.clock.set(ms)), as in the experiment's tests.
(function () {
  "use strict";
  var S = window.BIB_STUDY, C = S.criteria;
  var $ = function (id) { return document.getElementById(id); };
  var manual = /[?&]clock=manual\b/.test(window.location.search);
  var manualNow = 0, t0wall = null, t0session = 0;
  var plan = null, looks = [], looking = null, coding = false;
  var clock = {
    set: function (ms) { manualNow = ms; },
    now: function () {
      if (manual) return manualNow;
      var v = $("replay");
      if (plan && plan.recording) return plan.recording_start + v.currentTime * 1000;
      return t0session + (performance.now() - t0wall);
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
  // The session's trials from the first coder's look log: the attempt that ended each position.
  function sessionPlan(rows, name) {
    var missing = S.look_columns.filter(function (c) { return !(rows.length && c in rows[0]); });
    if (!rows.length || missing.length) fail(name + ": not a look log of bib experiment (columns " + S.look_columns.join(", ") + ")");
    var pid = rows[0].participant_id, order = rows[0].order, trials = {}, recStart = null;
    rows.forEach(function (r) {
      if (r.participant_id !== pid) fail(name + ": more than one participant (" + pid + ", " + r.participant_id + ")");
      var key = r.position + "/" + r.attempt, t = parseFloat(r.clock_ms);
      if (r.event === "recording_start") recStart = t;
      else if (r.event === "trial_start") trials[key] = { position: parseInt(r.position, 10), start: t };
      else if (r.event.indexOf("trial_end:") === 0 && trials[key]) trials[key].end = t;
    });
    var rowsOfOrder = S.orders[String(order)];
    if (!rowsOfOrder) fail(name + ": order " + order + " is not an order of study " + S.name);
    var done = Object.keys(trials).map(function (k) { return trials[k]; }).filter(function (t) { return t.end !== undefined; });
    done.sort(function (a, b) { return a.start - b.start; });
    done.forEach(function (t) {
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
    p.recording = file.name;
  }
  function status() {
    var t = clock.now(), cur = plan.trials.filter(function (x) { return x.start <= t && t < x.end; })[0];
    $("code-status").textContent = (cur ? "trial " + cur.position + " · " + cur.row.task + " " + cur.row.phase : "between trials") +
      " · " + (looking !== null ? "LOOKING" : "away") + " · " + looks.length + " looks coded";
  }
  function start() {
    $("code-error").hidden = true;
    var lf = $("looks-file").files[0], rf = $("recording-file").files[0];
    if (!lf) { $("code-error").textContent = "Choose the session's look log."; $("code-error").hidden = false; return; }
    lf.text().then(function (text) {
      var p = sessionPlan(parseCsv(text), lf.name);
      if (rf) checkRecording(p, rf);
      plan = p; looks = []; looking = null; coding = true;
      $("code-save").disabled = false;
      if (rf) {
        var v = $("replay");
        v.hidden = false;
        v.src = URL.createObjectURL(rf);
        v.addEventListener("loadedmetadata", function () {
          var last = plan.trials[plan.trials.length - 1].end - plan.recording_start;
          if (isFinite(v.duration) && v.duration * 1000 < last - 1000) {
            coding = false; $("code-save").disabled = true;
            try { fail(rf.name + ": the recording lasts " + v.duration.toFixed(1) + " s, the session " + (last / 1000).toFixed(1) +
              " s from the recording's start: not this session's recording"); } catch (err) { /* shown */ }
          }
        }, { once: true });
        if (!manual) v.play().catch(function () {});
      } else {
        t0wall = performance.now(); t0session = plan.trials[0].start;
      }
      status();
    }).catch(function (err) { if (!$("code-error").textContent) fail(String(err)); });
  }
  function save() {
    if (looking !== null) { looks.push([looking, clock.now()]); looking = null; }
    coding = false;
    var cols = S.columns.concat(["study", "position", "episode_id", "pair_id", "coder", "recording", "looking_from_s",
      "study_id", "criteria_hash"]);
    var coder = $("coder").value.trim() || "B";
    var rows = plan.trials.map(function (t) {
      var from = t.start + t.m, total = 0;
      looks.forEach(function (l) { total += Math.max(0, Math.min(l[1], t.end) - Math.max(l[0], from)); });
      var v = { participant_id: plan.participant_id, task: t.row.task, trial_num: t.position, phase: t.row.phase,
        outcome: t.row.outcome, looking_time_s: (total / 1000).toFixed(3), order: plan.order, item: t.row.pair_id,
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
  document.addEventListener("keydown", function (e) {
    if (!coding || e.key !== " ") return;
    e.preventDefault();
    if (e.repeat || looking !== null) return;
    looking = clock.now(); status();
  });
  document.addEventListener("keyup", function (e) {
    if (!coding || e.key !== " ") return;
    e.preventDefault();
    if (looking === null) return;
    looks.push([looking, clock.now()]); looking = null; status();
  });
  $("code-start").addEventListener("click", start);
  $("code-save").addEventListener("click", save);
  window.bibCoding = { clock: clock, plan: function () { return plan; }, looks: function () { return looks; } };
})();
