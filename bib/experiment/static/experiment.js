// bib experiment: a looking-time study in the browser (plain JavaScript, no libraries, works from file://).
//
// The study (orders, criteria, data columns) comes from study.js (window.BIB_STUDY). The experimenter
// holds the look key while the infant looks. A trial starts at the first look-key press after the
// attention-getter and ends by the rule of bib.stimuli.timing (docs/experiment.md): looking is measured
// from m (the trial start, or the outcome frame of the video); look-aways count from
// arm = max(m, the video's end with play_through); once the infant has looked for min_on seconds (after
// m), a look-away of `lookaway` seconds in a row ends it (at its counted start + lookaway, never before
// min_trial); otherwise it ends at max_trial seconds. Times are the key events' own timestamps (event.timeStamp,
// the page clock), so a busy machine delays when the page notices the end, not the recorded times.
// With ?clock=manual in the URL the page clock is set by hand (window.bibExperiment.clock.set(ms)),
// which is how the tests drive time.
//
// This page is the experimenter's (controls, status, data); the infant sees only the stimulus window
// (stimulus.html, stimulus.js) it opens, which shows the attention-getter or the trial's video and
// nothing else. The two talk by postMessage; keys pressed in either window count.
//
// The experimenter is blind: while a session runs (and on its end screen) this window shows the trial
// number, the phase, the looking clock and totals, the look-away and the criterion state, and never
// the task (condition), the outcome, the pair, the episode or the video; those go only into the saved
// data. The participant record (date of birth and test date -> age in days, exclusion codes per trial
// and per session, notes, a good/no-good flag, the recording consent asked anew for each session)
// goes into every row.
(function () {
  "use strict";
  var S = window.BIB_STUDY;
  var C = S.criteria;
  var KEYS = { look: " ", restart: "r", end: "y" };
  var manual = /[?&]clock=manual\b/.test(window.location.search);
  var manualNow = 0;
  var clock = {
    now: function () { return manual ? manualNow : performance.now(); },
    eventTime: function (e) { return manual ? manualNow : e.timeStamp; },
    set: function (ms) { manualNow = ms; settle(ms); updateStatus(); }
  };
  var $ = function (id) { return document.getElementById(id); };
  var session = null;   // the session being run (persisted after every trial unless practice)
  var trial = null;     // the running trial
  var state = "setup";  // setup | attention | trial | done
  var tick = null;
  var screenWin = null;  // the stimulus window
  var screenNow = null;  // the last command sent to it (sent again when it (re)loads)
  var recorder = null, chunks = [];  // the webcam recording (MediaRecorder), kept on this computer

  // ------------------------------------------------------------------ storage
  // sessions of a study built with other criteria never share storage (nor resume into each other)
  var PREFIX = "bib-experiment/" + S.id + "/" + S.criteria_hash + "/";
  function storageKey(pid) { return PREFIX + pid; }
  function load(pid) {
    try { var text = window.localStorage.getItem(storageKey(pid)); return text ? JSON.parse(text) : null; }
    catch (err) { return null; }
  }
  function persist() {
    if (!session || session.practice) return;
    try { window.localStorage.setItem(storageKey(session.participant_id), JSON.stringify(session)); }
    catch (err) { showWarning("Could not save to this browser's storage: " + err); }
  }
  function savedSessions() {
    var out = [];
    for (var i = 0; i < window.localStorage.length; i++) {
      var key = window.localStorage.key(i);
      if (key && key.indexOf(PREFIX) === 0) {
        try { out.push(JSON.parse(window.localStorage.getItem(key))); } catch (err) { /* skip a damaged entry */ }
      }
    }
    out.sort(function (a, b) { return a.participant_id < b.participant_id ? -1 : 1; });
    return out;
  }

  // ------------------------------------------------------------------ CSV
  function cell(v) {
    var s = v === null || v === undefined ? "" : String(v);
    return /[",\n\r]/.test(s) ? '"' + s.replace(/"/g, '""') + '"' : s;
  }
  function csv(header, rows) {
    return [header.map(cell).join(",")].concat(rows.map(function (r) {
      return header.map(function (h) { return cell(r[h]); }).join(",");
    })).join("\n") + "\n";
  }
  function trialsCsv(s) { return csv(S.columns.concat(S.extra_columns), s.trials); }
  function looksCsv(s) { return csv(S.look_columns, s.looks); }
  function download(name, text) { downloadBlob(name, new Blob([text], { type: "text/csv" })); }
  function downloadBlob(name, blob) {
    var a = document.createElement("a");
    a.href = URL.createObjectURL(blob);
    a.download = name;
    document.body.appendChild(a);
    a.click();
    a.remove();
  }
  function fileStem(s) { return S.name + "_" + s.participant_id; }
  function downloadAll(s) {
    download(fileStem(s) + "_trials.csv", trialsCsv(s));
    download(fileStem(s) + "_looks.csv", looksCsv(s));
  }

  // ------------------------------------------------------------------ sessions
  function sequence(order, practice) {
    var rows = S.orders[String(order)];
    return practice ? rows.slice(0, S.practice_trials) : rows;
  }
  function newSession(form, practice) {
    return {
      study: S.id, participant_id: practice ? "practice" : form.pid, order: form.order, lab: form.lab,
      age_days: form.age, practice: practice, session_date: form.testDate,
      session_exclusion: "", session_ok: "", session_notes: "", recording_consent: form.consent ? "yes" : "no",
      next: 0, attempt: 1, finished: false, trials: [], looks: [], hab: C.habituation && !practice ? freshBlock(0) : null
    };
  }
  // The participant record's session fields, copied into every row (also rows saved before a change).
  var SESSION_FIELDS = ["session_exclusion", "session_ok", "session_notes"];
  function setSessionField(name, value) {
    if (!session) return;
    session[name] = value;
    session.trials.forEach(function (r) { r[name] = value; });
    persist();
  }
  function logEvent(event, relMs, absMs) {
    var row = trial ? trial.row : current() || {};
    session.looks.push({
      participant_id: session.participant_id, order: session.order, position: row.position || "",
      attempt: session.attempt, event: event,
      t_s: relMs === null ? "" : (relMs / 1000).toFixed(6), clock_ms: absMs.toFixed(3)
    });
  }

  // ------------------------------------------------------------------ trials
  function current() {
    if (!session.hab) return sequence(session.order, session.practice)[session.next];
    var h = session.hab, blocks = blocksOf(session.order), b = blocks[h.block];
    if (!b) return undefined;
    if (h.stage === "hab") return b.fam[h.k % b.fam.length];
    if (h.stage === "test") return b.test[h.k];
    return blocks[(h.block + 1) % blocks.length].fam[0];  // recovery: a video not habituated to
  }
  // "12 of 20 trials", or with habituation (no fixed length) "12 trials"
  function progress(s) {
    return s.trials.length + (s.hab ? "" : " of " + sequence(s.order, false).length) + " trials";
  }

  // ------------------------------------------------------------------ habituation (habituation.js's rule)
  // Each pair is a block; its familiarization videos play in turn until the criterion is met or
  // hab_max_trials ran, then its test trials, then (hab_recovery) one trial of the next block's first video.
  function blocksOf(order) { return window.bibHabituation.blocks(S.orders[String(order)]); }
  function freshBlock(block) { return { block: block, stage: "hab", k: 0, looks: [], crit: 0, at: "", end: "", rows: [] }; }
  function habituationEnd(looks) { return window.bibHabituation.end(looks, C); }
  // After a trial of a habituation session: its role and the block's state into the row, then the next step.
  function advanceHab(record, seconds) {
    var h = session.hab, b = blocksOf(session.order)[h.block];
    record.hab_role = h.stage === "hab" ? "habituation" : h.stage;
    if (h.stage === "hab") {
      h.looks.push(seconds);
      h.rows.push(session.trials.length - 1);
      h.k += 1;
      var r = habituationEnd(h.looks);
      h.crit = r.crit;
      record.hab_criterion_s = r.crit.toFixed(3);
      if (r.n !== null) {
        h.at = r.n; h.end = r.reason;
        h.rows.forEach(function (i) { session.trials[i].habituated_at = r.n; session.trials[i].hab_end = r.reason; });
        h.stage = "test"; h.k = 0;
      }
      return;
    }
    record.habituated_at = h.at; record.hab_end = h.end; record.hab_criterion_s = h.crit.toFixed(3);
    if (h.stage === "test" && ++h.k < b.test.length) return;
    if (h.stage === "test" && C.hab_recovery) { h.stage = "recovery"; h.k = 0; return; }
    session.hab = freshBlock(h.block + 1);
  }
  // ------------------------------------------------------------------ the stimulus window
  function screenSend(message) {
    screenNow = message;
    if (screenWin && !screenWin.closed) screenWin.postMessage(message, "*");
  }
  function openScreen() {
    if (screenWin && !screenWin.closed) return;
    screenWin = window.open("stimulus.html", "bib-stimulus", "popup,width=960,height=600");
    if (!screenWin) showWarning("The stimulus window was blocked: allow pop-ups for this page, then start again.");
  }
  function showAttention() {
    state = "attention";
    var row = current();
    screenSend({ cmd: "attention", video: row ? row.video : null });
    updateStatus();
  }
  function startTrial(t) {
    var row = current();
    var m = C.measure_from === "outcome" ? row.outcome_s * 1000 : 0;
    var arm = Math.max(m, C.play_through ? row.video_s * 1000 : 0);
    var token = session.participant_id + "/" + (session.next + 1) + "/" + session.attempt;
    trial = { row: row, t0: t, looking: true, onSince: 0, offSince: null, spans: [], nLooks: 1, m: m, arm: arm, code: "",
              token: token, frames: 0, stalls: 0, maxStall: 0, shown: null, videoEnd: null };
    $("trial-code").value = "";
    state = "trial";
    logEvent("trial_start", 0, t);
    // the stimulus window's clock offset (ms) and its uncertainty (half the best round trip)
    if (!manual) logEvent("clock_offset_ms:" + (isFinite(sync.rtt) ? sync.offset.toFixed(3) + "+-" + (sync.rtt / 2).toFixed(3) : "unknown"), 0, t);
    logEvent("look_on", 0, t);
    screenSend({ cmd: "play", video: row.video, token: token, fps: row.fps || 0, outcome_s: row.outcome_s });
    updateStatus();
  }
  // The part of a look [a, b) (ms from the trial start) that counts: the part after m.
  function seen(a, b) { return Math.max(0, b - Math.max(a, trial.m)); }
  // Looking in the completed looks, from m (recomputed, so a presented outcome frame reported late counts)
  function done() { return trial.spans.reduce(function (acc, l) { return acc + seen(l[0], l[1]); }, 0); }
  // End the trial if the rule says it ended at or before page time t (ms).
  function settle(t) {
    if (state !== "trial" || !trial) return;
    var rel = t - trial.t0, maxMs = C.max_trial * 1000, minMs = C.min_trial * 1000;
    // with the real clock and play-through, a look-away counts only once the video has really ended
    // (if the stimulus window was closed, its nominal end stands)
    var playing = C.play_through && !manual && trial.videoEnd === null && screenWin !== null && !screenWin.closed;
    if (!playing && !trial.looking && trial.offSince !== null && done() >= C.min_on * 1000) {
      var from = Math.max(trial.offSince, trial.arm), end = Math.max(from + C.lookaway * 1000, minMs);
      if (end <= Math.min(rel, maxMs)) {
        endTrial(end, from + C.lookaway * 1000 >= minMs ? "lookaway" : "min_trial", "");
        return;
      }
    }
    if (rel >= maxMs) endTrial(maxMs, "max_trial", "");
  }
  function lookOn(t) {
    settle(t);
    if (state === "attention") { startTrial(t); return; }
    if (state !== "trial" || trial.looking) return;
    trial.looking = true; trial.onSince = t - trial.t0; trial.nLooks += 1;
    logEvent("look_on", trial.onSince, t);
    updateStatus();
  }
  function lookOff(t) {
    settle(t);
    if (state !== "trial" || !trial.looking) return;
    var rel = t - trial.t0;
    trial.looking = false; trial.offSince = rel; trial.spans.push([trial.onSince, rel]);
    logEvent("look_off", rel, t);
    updateStatus();
  }
  function endTrial(relEnd, reason, error, last) {
    var row = trial.row;
    if (trial.looking) trial.spans.push([trial.onSince, relEnd]);  // a look in progress is cut at the end
    var total = done();
    if (trial.looking) logEvent("look_off", relEnd, trial.t0 + relEnd);
    logEvent("trial_end:" + reason, relEnd, trial.t0 + relEnd);
    var values = {
      participant_id: session.participant_id, lab: session.lab, age_days: session.age_days, task: row.task,
      trial_num: session.next + 1, phase: row.phase, outcome: row.outcome,
      looking_time_s: (total / 1000).toFixed(3), order: session.order, trial_error: error, item: row.pair_id,
      study: S.name, position: row.position, episode_id: row.episode_id, pair_id: row.pair_id, video: row.video,
      trial_duration_s: (relEnd / 1000).toFixed(3), n_looks: trial.nLooks, end_reason: reason,
      video_s: row.video_s.toFixed(3), looking_from_s: (trial.m / 1000).toFixed(3),
      restarts: session.attempt - 1, session_date: session.session_date, trial_exclusion: trial.code,
      session_exclusion: session.session_exclusion, session_ok: session.session_ok, session_notes: session.session_notes,
      recording_consent: session.recording_consent, study_id: S.id, criteria_hash: S.criteria_hash,
      frames_shown: trial.frames, stalls: trial.stalls, stall_max_ms: trial.maxStall.toFixed(1),
      outcome_shown_s: trial.shown === null ? "" : (trial.shown / 1000).toFixed(3),
      outcome_offset_ms: trial.shown === null ? "" : (trial.shown - row.outcome_s * 1000).toFixed(1)
    };
    var record = {};
    S.columns.concat(S.extra_columns).forEach(function (c) { record[c] = values.hasOwnProperty(c) ? values[c] : ""; });
    session.trials.push(record);
    if (session.hab) advanceHab(record, total / 1000);
    session.next += 1;
    session.attempt = 1;
    trial = null;
    persist();
    if (last || current() === undefined) finish(); else showAttention();
  }
  function restartTrial(t) {
    if (state !== "trial") return;
    logEvent("trial_restart", t - trial.t0, t);
    trial = null;
    session.attempt += 1;
    showAttention();
  }
  function endSession(t) {
    settle(t);
    logEvent("session_end", trial ? t - trial.t0 : null, t);
    // a trial cut short by the experimenter is kept, marked as an error
    if (state === "trial") endTrial(t - trial.t0, "ended", "session ended during the trial", true);
    else if (state === "attention") finish();
  }
  // ------------------------------------------------------------------ webcam recording (optional, local only)
  function startRecording() {
    if (session.practice || session.recording_consent !== "yes") return;
    if (!navigator.mediaDevices || !window.MediaRecorder) { showWarning("This browser cannot record the webcam."); return; }
    navigator.mediaDevices.getUserMedia({ video: true, audio: false }).then(function (stream) {
      chunks = [];
      recorder = new MediaRecorder(stream, { mimeType: "video/webm" });
      recorder.ondataavailable = function (e) { if (e.data && e.data.size) chunks.push(e.data); };
      recorder.start(500);
      var t = clock.now();
      session.recording = { file: fileStem(session) + S.recording_suffix, start_ms: t };
      logEvent("recording_start", null, t);
      persist();
    }).catch(function (err) { showWarning("The webcam could not be recorded: " + err); });
  }
  function stopRecording() {
    if (!recorder) return;
    var r = recorder, name = session.recording.file;
    recorder = null;
    r.onstop = function () {
      r.stream.getTracks().forEach(function (track) { track.stop(); });
      downloadBlob(name, new Blob(chunks, { type: "video/webm" }));
    };
    r.stop();
  }
  function finish() {
    state = "done";
    if (tick) { clearInterval(tick); tick = null; }
    session.finished = true;
    $("timing-report").textContent = timingReport(session);
    persist();
    screenSend({ cmd: "blank" });
    $("stage").hidden = true;
    $("done").hidden = false;
    $("done-title").textContent = session.practice ? "Practice finished (nothing was saved)" :
      "Session of " + session.participant_id + " saved (" + session.trials.length + " trials)";
    renderSummary(session);
    if (!session.practice) { downloadAll(session); stopRecording(); }
  }

  // ------------------------------------------------------------------ display
  // What the experimenter sees during a session: never the task, outcome, pair, episode or video.
  function secs(ms) { return (ms / 1000).toFixed(1) + " s"; }
  function updateStatus() {
    if (!session) return;
    var total = sequence(session.order, session.practice).length, h = session.hab;
    var row = current() || {};
    $("status").textContent = (session.practice ? "PRACTICE · " : "") + session.participant_id + " · trial " +
      (h ? session.next + 1 : Math.min(session.next + 1, total) + "/" + total) + (row.phase ? " · " + row.phase : "") +
      (h && row.phase ? " · block " + (h.block + 1) + "/" + blocksOf(session.order).length + ", " +
        (h.stage === "hab" ? "habituation trial " + (h.k + 1) + "/" + C.hab_max_trials +
          (h.crit ? ", criterion: below " + h.crit.toFixed(1) + " s over " + C.hab_window + " trials" : "") :
          h.stage === "test" ? "test after " + h.at + " habituation trials (" + (h.end === "criterion" ? "habituated" : "maximum") + ")" :
            "recovery trial") : "");
    $("look").textContent = state === "attention" ? "attention-getter: hold SPACE when the infant looks" :
      trial && trial.looking ? "LOOKING" : state === "trial" ? "away" : "";
    $("look").className = trial && trial.looking ? "looking" : "";
    var before = 0;
    session.trials.forEach(function (r) { before += parseFloat(r.looking_time_s) || 0; });
    var clockText = "", criterion = "";
    if (state === "trial" && trial) {
      var rel = Math.max(0, clock.now() - trial.t0);
      var now = done() + (trial.looking ? seen(trial.onSince, rel) : 0);
      clockText = "trial " + secs(rel) + " · looking " + secs(now) + " · " + trial.nLooks + " look" +
        (trial.nLooks > 1 ? "s" : "") + " · session looking " + secs(before * 1000 + now);
      // the rule's state: minimum looking (the look in progress counts once it ends), then the look-away
      if (now < C.min_on * 1000) criterion = "criterion: looking " + secs(now) + " of " + secs(C.min_on * 1000) + " needed";
      else if (trial.looking) criterion = "criterion: armed (a look-away of " + secs(C.lookaway * 1000) + " ends the trial)";
      else criterion = "criterion: away " + secs(Math.max(0, rel - Math.max(trial.offSince, trial.arm))) + " of " + secs(C.lookaway * 1000);
      if ((rel < trial.arm || (C.play_through && !manual && trial.videoEnd === null)) && now >= C.min_on * 1000) {
        criterion += " · look-aways count once the video has played";
      }
    } else {
      clockText = "session looking " + secs(before * 1000) + " · " + session.trials.length + " trial" +
        (session.trials.length === 1 ? "" : "s") + " done";
    }
    $("look-clock").textContent = clockText;
    $("criterion-state").textContent = criterion;
    var shown = state === "trial" ? session.next + 1 : session.trials.length ? session.trials[session.trials.length - 1].trial_num : "";
    $("trial-code-label").textContent = shown ? "trial " + shown : "no trial yet";
    $("trial-code").disabled = !shown;
  }
  function codeSelect(value, none) {
    var sel = document.createElement("select");
    [["", none]].concat(Object.keys(S.exclusion_codes).map(function (c) { return [c, S.exclusion_codes[c]]; }))
      .forEach(function (pair) {
        var opt = document.createElement("option"); opt.value = pair[0]; opt.textContent = pair[1]; sel.appendChild(opt);
      });
    sel.value = value || "";
    return sel;
  }
  // The end screen's table: no task, outcome or pair (the coder stays blind); each trial's code can be changed.
  function renderSummary(s) {
    var body = $("summary").tBodies[0];
    body.innerHTML = "";
    s.trials.forEach(function (r) {
      var tr = document.createElement("tr");
      [r.trial_num, r.phase, r.looking_time_s, r.end_reason, r.trial_error].forEach(function (v) {
        var td = document.createElement("td"); td.textContent = v; tr.appendChild(td);
      });
      var td = document.createElement("td"), sel = codeSelect(r.trial_exclusion, "keep");
      sel.className = "row-code";
      sel.addEventListener("change", function () { r.trial_exclusion = sel.value; persist(); sel.blur(); });
      td.appendChild(sel); tr.appendChild(td);
      body.appendChild(tr);
    });
  }
  function showWarning(text) {
    ["warning", "stage-warning"].forEach(function (id) { var w = $(id); w.textContent = text; w.hidden = false; });
  }
  function renderSaved() {
    renderBalance();
    suggestOrder();
    var list = $("saved"), items = savedSessions();
    list.innerHTML = "";
    $("saved-none").hidden = items.length > 0;
    items.forEach(function (s) {
      var li = document.createElement("li");
      li.textContent = s.participant_id + " (order " + s.order + ", " + progress(s) +
        (s.finished ? ", finished" : ", unfinished") + ") ";
      var b = document.createElement("button");
      b.type = "button"; b.textContent = "download";
      b.addEventListener("click", function () { downloadAll(s); });
      li.appendChild(b);
      list.appendChild(li);
    });
  }

  // ------------------------------------------------------------------ setup form
  // Age in days from the date of birth and the test date (YYYY-MM-DD, as date inputs give them), in UTC
  // so a change of daylight-saving time does not move it; "" without a date of birth, null if invalid.
  function ageDays(dob, test) {
    if (!dob) return "";
    var re = /^(\d{4})-(\d{2})-(\d{2})$/, a = re.exec(dob), b = re.exec(test);
    if (!a || !b) return null;
    var days = (Date.UTC(+b[1], +b[2] - 1, +b[3]) - Date.UTC(+a[1], +a[2] - 1, +a[3])) / 86400000;
    return days >= 0 ? String(days) : null;
  }
  function today() {
    var d = new Date();
    return d.getFullYear() + "-" + String(d.getMonth() + 1).padStart(2, "0") + "-" + String(d.getDate()).padStart(2, "0");
  }
  function readForm() {
    var testDate = $("test-date").value || today();
    return {
      pid: $("pid").value.trim(), order: parseInt($("order").value, 10), lab: $("lab").value.trim(),
      testDate: testDate, age: ageDays($("dob").value, testDate), consent: $("record").checked
    };
  }
  function showAge() {
    var f = readForm();
    $("age-shown").textContent = f.age === "" ? "" : f.age === null ? "the date of birth is after the test date" : "age " + f.age + " days";
  }
  // Counterbalancing: sessions per order kept in this browser (practice never stored), and the
  // suggested order for the next family, the one with the fewest sessions so far (ties: the lowest).
  function orderCounts() {
    var counts = {};
    Object.keys(S.orders).forEach(function (o) { counts[o] = { finished: 0, unfinished: 0 }; });
    savedSessions().forEach(function (s) {
      var c = counts[String(s.order)];
      if (c) c[s.finished ? "finished" : "unfinished"] += 1;
    });
    return counts;
  }
  function suggestOrder() {
    if ($("order").dataset.touched) return;
    var counts = orderCounts(), best = null;
    Object.keys(counts).forEach(function (o) {
      var n = counts[o].finished + counts[o].unfinished;
      if (best === null || n < best.n) best = { o: o, n: n };
    });
    if (best) $("order").value = best.o;
  }
  function renderBalance() {
    var counts = orderCounts(), body = $("balance").tBodies[0], total = 0, most = 0, least = Infinity;
    body.innerHTML = "";
    Object.keys(counts).forEach(function (o) {
      var c = counts[o], n = c.finished + c.unfinished, tr = document.createElement("tr");
      total += n; most = Math.max(most, n); least = Math.min(least, n);
      ["order " + o, c.finished, c.unfinished, n].forEach(function (v) {
        var td = document.createElement("td"); td.textContent = v; tr.appendChild(td);
      });
      body.appendChild(tr);
    });
    $("balance-note").textContent = total + " session" + (total === 1 ? "" : "s") + " in this browser; " +
      (most - least <= 1 ? "balanced (orders differ by at most one session)" : "unbalanced: orders differ by " + (most - least) + " sessions");
  }
  function ask(text, buttons) {
    // an in-page dialog (window.confirm would leave full screen): buttons are [label, handler]
    var box = $("dialog");
    $("dialog-text").textContent = text;
    var row = $("dialog-buttons");
    row.innerHTML = "";
    buttons.forEach(function (b) {
      var el = document.createElement("button");
      el.type = "button"; el.textContent = b[0]; el.id = "dialog-" + b[0].toLowerCase();
      el.addEventListener("click", function () { box.hidden = true; b[1](); });
      row.appendChild(el);
    });
    box.hidden = false;
  }
  function begin(s) {
    session = s;
    $("record").checked = false;  // consent is asked for each session, never carried over
    SESSION_FIELDS.forEach(function (name) { $(name).value = s[name] || ""; });
    $("trial-code").value = "";
    $("setup").hidden = true;
    $("done").hidden = true;
    $("stage").hidden = false;
    $("practice-banner").hidden = !s.practice;
    openScreen();
    var ticks = 0;
    if (!manual) tick = setInterval(function () { settle(clock.now()); if (++ticks % 10 === 0) updateStatus(); }, 10);
    $("record-panel").hidden = s.practice;
    if (s.next > 0) logEvent("session_resume", null, clock.now());
    startRecording();
    showAttention();
  }
  function start(practice) {
    var f = readForm();
    if (practice) { begin(newSession({ pid: "practice", order: 1, lab: f.lab, age: "", testDate: f.testDate }, true)); return; }
    if (!/^[A-Za-z0-9_.-]+$/.test(f.pid)) { showWarning("Participant id: letters, digits, '.', '_' or '-' only."); return; }
    if (!S.orders[String(f.order)]) { showWarning("Choose an order."); return; }
    if (f.age === null) { showWarning("Date of birth: it must be a date on or before the test date (" + f.testDate + ")."); return; }
    var old = load(f.pid);
    if (!old) { begin(newSession(f, false)); return; }
    var text = "Participant " + f.pid + " already has a session in this browser (order " + old.order + ", " +
      progress(old) + ", " + (old.finished ? "finished" : "unfinished") + ").";
    var buttons = [];
    if (!old.finished) buttons.push(["Resume", function () { begin(old); }]);
    buttons.push(["Overwrite", function () { begin(newSession(f, false)); }]);
    buttons.push(["Cancel", function () {}]);
    ask(text + (old.finished ? " Overwrite it?" : " Resume it at trial " + (old.next + 1) + ", or overwrite it?"), buttons);
  }

  // ------------------------------------------------------------------ keys (this window's or the stimulus window's)
  function typing(e) { var el = e.target; return el && el.closest && el.closest("input, textarea, select") !== null; }
  function onKey(type, rawKey, repeat, t) {
    if (state !== "attention" && state !== "trial") return false;
    var key = rawKey.length === 1 ? rawKey.toLowerCase() : rawKey;
    if (type === "keyup") {
      if (key === KEYS.look) { lookOff(t); return true; }
      return false;
    }
    var ours = key === KEYS.look || key === KEYS.restart || key === KEYS.end;
    if (repeat) return ours;
    if (key === KEYS.look) lookOn(t);
    else if (key === KEYS.restart) { settle(t); restartTrial(t); }
    else if (key === KEYS.end) endSession(t);
    return ours;
  }
  ["keydown", "keyup"].forEach(function (type) {
    document.addEventListener(type, function (e) {
      if (typing(e)) return;  // the notes and the record's fields take their own keys
      if (onKey(type, e.key, e.repeat, clock.eventTime(e))) e.preventDefault();
    });
  });
  // the stimulus window's messages: its keys and video events (times on the shared clock: timeOrigin + ms)
  // The two windows' clocks (timeOrigin + now) can differ by some milliseconds (each document's
  // timeOrigin comes from the wall clock when it loaded): the offset is estimated NTP-style from
  // ping/pong round trips, keeping the round trip with the least delay, and taken off every time the
  // stimulus window reports.
  var sync = { offset: 0, rtt: Infinity, sent: 0 };
  function ping() {
    if (screenWin && !screenWin.closed && sync.sent < 20) { sync.sent += 1; screenWin.postMessage({ cmd: "ping", t0: performance.timeOrigin + performance.now() }, "*"); }
  }
  function pong(m) {
    var t2 = performance.timeOrigin + performance.now(), rtt = t2 - m.t0;
    if (rtt < sync.rtt) { sync.rtt = rtt; sync.offset = m.t1 - (m.t0 + t2) / 2; }
    if (sync.sent < 20) setTimeout(ping, 25);
  }
  function fromScreen(at) { return manual ? manualNow : at - sync.offset - performance.timeOrigin; }
  window.addEventListener("message", function (e) {
    if (!screenWin || e.source !== screenWin) return;
    if ((e.data || {}).kind === "pong") { pong(e.data); return; }
    if ((e.data || {}).kind === "ready") { sync.sent = 0; ping(); }
    var m = e.data || {};
    if (m.kind === "ready" && screenNow) screenWin.postMessage(screenNow, "*");
    else if (m.kind === "key") onKey(m.type, m.key, m.repeat, fromScreen(m.at));
    else if (m.kind === "video" && trial) onVideo(m);
    else if (m.kind === "frame" && trial && m.token === trial.token) {
      trial.frames = m.count; trial.stalls = m.stalls; trial.maxStall = m.max_stall_ms;
    }
    else if (m.kind === "warning") showWarning(m.text);
  });

  // The stimulus window's reports of the frames it presented (requestVideoFrameCallback): its events go
  // into the look log; the presented outcome frame's time becomes m (looking counts from the frame shown,
  // not the nominal time) unless the clock is manual (tests), where page times are set by hand.
  function onVideo(m) {
    var at = fromScreen(m.at), rel = at - trial.t0;
    if (m.event === "video_stall") { logEvent("video_stall:" + (m.ms / 1000).toFixed(3), rel, at); return; }
    logEvent(m.event, rel, at);
    if (m.token !== trial.token || manual) return;
    if (m.event === "video_ended") trial.videoEnd = rel;
    else if (m.event === "video_outcome_shown") {
      trial.shown = rel;
      if (C.measure_from === "outcome") trial.m = rel;
    } else return;
    trial.arm = Math.max(trial.m, C.play_through ? (trial.videoEnd === null ? trial.row.video_s * 1000 : trial.videoEnd) : 0);
    settle(clock.now());
    updateStatus();
  }
  // Per session: the worst stall and the presented outcome's offset from the nominal one, into every
  // row and onto the end screen.
  function timingReport(s) {
    var worst = null, offsets = [];
    s.trials.forEach(function (r) {
      var st = parseFloat(r.stall_max_ms) || 0;
      if (worst === null || st > worst.ms) worst = { ms: st, trial: r.trial_num };
      if (r.outcome_offset_ms !== "") offsets.push({ ms: parseFloat(r.outcome_offset_ms), trial: r.trial_num });
    });
    var maxOff = offsets.reduce(function (a, o) { return a === null || Math.abs(o.ms) > Math.abs(a.ms) ? o : a; }, null);
    s.trials.forEach(function (r) {
      r.session_max_stall_ms = worst ? worst.ms.toFixed(1) : "";
      r.session_max_outcome_offset_ms = maxOff ? maxOff.ms.toFixed(1) : "";
    });
    var shown = s.trials.reduce(function (a, r) { return a + (parseInt(r.frames_shown, 10) || 0); }, 0);
    return "Timing: " + shown + " video frames presented; worst stall " + (worst && worst.ms > 0 ? worst.ms.toFixed(0) +
      " ms (trial " + worst.trial + ")" : "none") + "; outcome frame shown " + (maxOff ? "at most " + maxOff.ms.toFixed(0) +
      " ms from its nominal time (trial " + maxOff.trial + "; mean " + (offsets.reduce(function (a, o) { return a + o.ms; }, 0) /
      offsets.length).toFixed(0) + " ms over " + offsets.length + " trials)" : "not measured (manual clock or no outcome frame reported)") + ".";
  }

  function setup() {
    document.title = S.name + ": looking-time study";
    $("study-name").textContent = S.name;
    $("criteria").textContent = "looking measured from the " + (C.measure_from === "outcome" ? "outcome frame" : "trial start") +
      (C.play_through ? ", the event played through before a look-away counts" : "") + ", look-away " + C.lookaway +
      " s in a row after " + C.min_on + " s of looking, trial length " + C.min_trial + "-" + C.max_trial + " s" +
      (C.habituation ? "; habituation: looking on " + C.hab_window + " trials in a row below " + Math.round(C.hab_ratio * 100) +
        "% of the " + { first: "first " + C.hab_window, sliding: "largest window of " + C.hab_window, max: C.hab_window + " longest" }[C.hab_basis] +
        " trials, at most " + C.hab_max_trials + " trials" + (C.hab_recovery ? ", then the test trials and a recovery trial" : ", then the test trials") : "");
    var select = $("order");
    Object.keys(S.orders).forEach(function (o) {
      var opt = document.createElement("option"); opt.value = o; opt.textContent = "order " + o; select.appendChild(opt);
    });
    select.addEventListener("change", function () { select.dataset.touched = "1"; });
    $("lab").value = S.lab || "";
    $("record").checked = false;  // never restored by the browser: asked for each session
    $("test-date").value = today();
    ["dob", "test-date"].forEach(function (id) { $(id).addEventListener("input", showAge); $(id).addEventListener("change", showAge); });
    var sessionCode = codeSelect("", "none"), trialCode = codeSelect("", "keep");
    sessionCode.id = "session_exclusion"; $("session-code-cell").appendChild(sessionCode);
    trialCode.id = "trial-code"; $("trial-code-cell").appendChild(trialCode);
    trialCode.addEventListener("change", function () {
      if (state === "trial" && trial) trial.code = trialCode.value;
      else if (session && session.trials.length) { session.trials[session.trials.length - 1].trial_exclusion = trialCode.value; persist(); }
      trialCode.blur();
    });
    SESSION_FIELDS.forEach(function (name) {
      var el = $(name);
      el.addEventListener("input", function () { setSessionField(name, el.value); });
      el.addEventListener("change", function () { setSessionField(name, el.value); if (el.tagName === "SELECT") el.blur(); });
    });
    $("start").addEventListener("click", function () { start(false); });
    $("practice").addEventListener("click", function () { start(true); });
    $("again").addEventListener("click", function () {
      $("done").hidden = true; $("record-panel").hidden = true; $("setup").hidden = false; $("pid").value = ""; $("dob").value = "";
      delete $("order").dataset.touched;
      $("record").checked = false; $("age-shown").textContent = ""; $("test-date").value = today(); renderSaved();
    });
    $("download-trials").addEventListener("click", function () { download(fileStem(session) + "_trials.csv", trialsCsv(session)); });
    $("download-looks").addEventListener("click", function () { download(fileStem(session) + "_looks.csv", looksCsv(session)); });
    renderSaved();
  }

  window.bibExperiment = {
    clock: clock,
    state: function () { return state; },
    session: function () { return session; },
    recording: function () { return recorder ? recorder.state : ""; },
    screen: function () { return screenNow; },
    trialsCsv: function () { return session ? trialsCsv(session) : ""; },
    looksCsv: function () { return session ? looksCsv(session) : ""; }
  };
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", setup); else setup();
})();
