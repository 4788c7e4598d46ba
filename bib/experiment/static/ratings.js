// bib experiment --ratings: an adult surprise-rating study (AGENT's design). Each trial plays a pair's
// familiarization videos, then one test video, then asks for a 0-100 rating on a slider. The rater's
// plan (which outcome of each pair, in which order) is the study's plan for the rater's number, drawn
// in Python (bib.analysis.ratings.rating_plan) and written into study.js. The page shows the trial
// number, the videos and the slider, never the task, the pair or the outcome.
(function () {
  "use strict";
  var S = window.BIB_RATINGS;
  var $ = function (id) { return document.getElementById(id); };
  var video = $("video"), slider = $("slider"), next = $("next");
  var state = "setup", session = null, moved = false, shownAt = 0, csvText = "";
  var usedKey = "bib-ratings:" + S.id + ":" + S.criteria_hash + ":used";

  function used() { try { return JSON.parse(localStorage.getItem(usedKey) || "[]"); } catch (e) { return []; } }
  function suggest() {
    var u = used();
    for (var k = 1; k <= S.plans.length; k++) if (u.indexOf(k) < 0) return k;
    return 1;
  }
  $("rater").value = suggest();
  var params = new URLSearchParams(location.search);
  if (params.get("rater")) $("rater").value = params.get("rater");
  if (params.get("id")) $("pid").value = params.get("id");

  function warn(text) { var w = $("warning"); w.textContent = text; w.hidden = !text; }
  function today() {
    var d = new Date();
    return d.getFullYear() + "-" + String(d.getMonth() + 1).padStart(2, "0") + "-" + String(d.getDate()).padStart(2, "0");
  }

  // every finished trial is kept in this browser (per study, protocol and rater id), so a closed tab
  // or a reload loses at most the scene that was running: the same id resumes at the next scene
  function storeKey(pid) { return "bib-ratings:" + S.id + ":" + S.criteria_hash + ":session:" + pid; }
  function stored(pid) { try { return JSON.parse(localStorage.getItem(storeKey(pid)) || "null"); } catch (e) { return null; } }
  function keep() {
    try {
      localStorage.setItem(storeKey(session.pid), JSON.stringify({ rater: session.rater, rows: session.rows, date: session.date,
                                                                   done: state === "done" }));
    } catch (e) { warn("This browser could not keep the ratings (storage full or off); the file is still saved at the end."); }
  }

  function start() {
    var pid = $("pid").value.trim(), rater = parseInt($("rater").value, 10);
    if (!pid) { warn("Enter the rater id."); return; }
    if (!/^[A-Za-z0-9._-]+$/.test(pid)) { warn("The rater id may hold letters, digits, '.', '_' and '-' only."); return; }
    var old = stored(pid);
    if (old && old.done) { warn("Rater " + pid + " has already finished in this browser; give another id."); return; }
    if (old) rater = old.rater;
    if (!(rater >= 1 && rater <= S.plans.length)) { warn("The rater number must be from 1 to " + S.plans.length + "."); return; }
    warn("");
    session = { pid: pid, rater: rater, plan: S.plans[rater - 1], trial: old ? old.rows.length : 0, clip: 0,
                rows: old ? old.rows : [], date: old ? old.date : today() };
    $("setup").hidden = true; $("stage").hidden = false;
    if (session.trial >= session.plan.length) { finish(); return; }
    beginTrial();
  }

  function clips() {
    var step = session.plan[session.trial], pair = S.pairs[step[0]];
    return pair.familiarization.concat([pair.tests[step[1]].video]);
  }

  function beginTrial() {
    session.clip = 0;
    $("progress").textContent = "Scene " + (session.trial + 1) + " of " + session.plan.length;
    $("rate").hidden = true;
    playClip();
  }

  function playClip() {
    var list = clips(), last = session.clip === list.length - 1;
    state = "video";
    $("phase").textContent = last ? "Now watch this video." : "What the agent usually does: video " + (session.clip + 1) + " of " + (list.length - 1) + ".";
    video.hidden = false;
    video.src = list[session.clip];
    var p = video.play();
    if (p && p.catch) p.catch(function () { warn("The video could not play."); });
  }

  video.addEventListener("ended", function () {
    if (state !== "video") return;
    var list = clips();
    if (session.clip < list.length - 1) { session.clip += 1; playClip(); return; }
    state = "rate";
    moved = false; next.disabled = true; slider.value = String(Math.round((S.protocol.scale_min + S.protocol.scale_max) / 2));
    $("move-note").hidden = false;
    $("phase").textContent = "";
    $("rate").hidden = false;
    shownAt = performance.now();
  });

  slider.addEventListener("input", function () {
    if (state !== "rate") return;
    moved = true; next.disabled = false; $("move-note").hidden = true;
  });

  function finishTrial() {
    if (state !== "rate" || !moved) return;
    var step = session.plan[session.trial], pair = S.pairs[step[0]], test = pair.tests[step[1]];
    session.rows.push({
      participant_id: session.pid, study: S.name, trial_num: session.trial + 1, task: pair.task, pair_id: pair.pair_id,
      episode_id: test.episode_id, outcome: test.outcome, rating: parseInt(slider.value, 10),
      response_ms: Math.round(performance.now() - shownAt), rater_number: session.rater, session_date: session.date,
      synthetic: "false", study_id: S.id, criteria_hash: S.criteria_hash
    });
    session.trial += 1;
    keep();
    if (session.trial < session.plan.length) { beginTrial(); return; }
    finish();
  }
  next.addEventListener("click", finishTrial);

  function cell(v) {
    var s = String(v);
    return /[",\n\r]/.test(s) ? '"' + s.replace(/"/g, '""') + '"' : s;
  }
  function csv(rows) {
    var lines = [S.columns.join(",")];
    rows.forEach(function (r) { lines.push(S.columns.map(function (c) { return cell(r[c]); }).join(",")); });
    return lines.join("\n") + "\n";
  }
  function fileName() { return S.name + "_" + session.pid + S.suffix; }
  function download() {
    var a = document.createElement("a");
    a.href = URL.createObjectURL(new Blob([csvText], { type: "text/csv" }));
    a.download = fileName();
    document.body.appendChild(a); a.click(); a.remove();
  }
  function finish() {
    state = "done";
    video.removeAttribute("src"); video.load();
    csvText = csv(session.rows);
    var u = used(); if (u.indexOf(session.rater) < 0) u.push(session.rater);
    try { localStorage.setItem(usedKey, JSON.stringify(u)); } catch (e) { /* storage full or off: the file is still saved */ }
    keep();
    $("stage").hidden = true; $("done").hidden = false;
    $("file-name").textContent = fileName();
    download();
  }
  $("download").addEventListener("click", download);
  $("start").addEventListener("click", start);

  window.bibRatings = {
    state: function () { return state; },
    session: function () { return session; },
    csv: function () { return csvText; },
    // tests: end the playing video now (as if it had played through)
    skipVideo: function () { if (state === "video") video.dispatchEvent(new Event("ended")); }
  };
})();
