// bib experiment: the habituation rule, PyHab's checkStop (jfkominsky/PyHab, PyHabClass.py, with its
// "Moving" met window), the same rule as bib.stimuli.timing.habituation_end (docs/experiment.md,
// "Habituation"). Plain functions, no state: experiment.js keeps the session's.
//
//   blocks(rows)        the order's rows as pair blocks: {pair_id, fam: [rows], test: [rows]}
//   end(looks, C)       after the block's habituation trials' looking times (s), in order:
//                       {n, reason: "criterion" | "max_trials", crit} for the trial that ended
//                       habituation, or {n: null, reason: "", crit} while it has not ended
(function () {
  "use strict";
  function sum(xs) { return xs.reduce(function (a, b) { return a + b; }, 0); }
  function blocks(rows) {
    var out = [];
    rows.forEach(function (r) {
      var b = out[out.length - 1];
      if (!b || b.pair_id !== r.pair_id) { b = { pair_id: r.pair_id, fam: [], test: [] }; out.push(b); }
      (r.phase === "test" ? b.test : b.fam).push(r);
    });
    return out;
  }
  function end(looks, C) {
    var w = C.hab_window, ratio = C.hab_ratio, crit = 0, setWhen = -1;
    for (var n = 1; n <= looks.length; n++) {
      var seen = looks.slice(0, n), win;
      if (n === w) { crit = sum(seen) * ratio; setWhen = n; }
      else if (C.hab_basis === "sliding" && n > w) {  // PyHab "Peak": the largest window so far
        win = sum(seen.slice(n - w)) * ratio;
        if (win > crit) { crit = win; setWhen = n; }
      } else if (C.hab_basis === "max" && n > w) {  // PyHab "Max": the longest trials so far
        var top = seen.slice().sort(function (a, b) { return a - b; }).slice(-w);
        win = sum(top) * ratio;
        if (win > crit) {
          crit = win;
          setWhen = Math.max.apply(null, top.map(function (v) { return seen.lastIndexOf(v) + 1; }));
        }
      }
      if (n === C.hab_max_trials) return { n: n, reason: "max_trials", crit: crit };
      if (n >= 2 * w && setWhen > -1 && n >= setWhen + w && sum(seen.slice(n - w)) < crit) return { n: n, reason: "criterion", crit: crit };
    }
    return { n: null, reason: "", crit: crit };
  }
  window.bibHabituation = { blocks: blocks, end: end };
})();
