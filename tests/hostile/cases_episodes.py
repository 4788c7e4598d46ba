"""Hostile episode files, each given to `bib validate` (a finding: exit 1) and `bib render` (exit 2)."""

from __future__ import annotations

from hostile import Case
from hostile.build import EPISODE, episode_doc, episode_with, text_of, trial_with, write

NAN = float("nan")

# (name, build of {in}/ep.json, culprit the message names)
EPISODES = [
    ("empty-file", write("ep.json", b""), "ep.json"),
    ("not-json", write("ep.json", "hello\n"), "malformed JSON"),
    ("truncated", text_of(EPISODE, lambda t: t[: len(t) // 2], "ep.json"), "malformed JSON"),
    ("json-list", write("ep.json", "[1, 2, 3]\n"), "ep.json"),
    ("json-null", write("ep.json", "null\n"), "ep.json"),
    ("json-string", write("ep.json", '"episode"\n'), "ep.json"),
    ("binary-garbage", write("ep.json", bytes(range(256)) * 4), "ep.json"),
    ("schema-wrong", episode_with(schema="bib.episode/9"), "schema"),
    ("schema-missing", episode_doc(lambda d: d.pop("schema")), "schema"),
    ("id-missing", episode_doc(lambda d: d.pop("id")), "'id'"),
    ("id-number", episode_with(id=7), "'id'"),
    ("id-null", episode_with(id=None), "'id'"),
    ("task-number", episode_with(task=3), "'task'"),
    ("outcome-unknown", episode_with(outcome="surprising"), "outcome"),
    ("seed-string", episode_with(seed="zero"), "seed"),
    ("seed-float", episode_with(seed=1.5), "seed"),
    ("seed-bool", episode_with(seed=True), "seed"),
    ("grid-missing", episode_doc(lambda d: d.pop("grid")), "grid"),
    ("grid-zero", episode_with(grid={"width": 0, "height": 10}), "grid"),
    ("grid-negative", episode_with(grid={"width": -10, "height": 10}), "grid"),
    ("grid-float", episode_with(grid={"width": 10.5, "height": 10}), "grid"),
    ("grid-string", episode_with(grid={"width": "10", "height": 10}), "grid"),
    ("grid-moves-5", episode_with(grid={"width": 10, "height": 10, "moves": 5}), "moves"),
    ("grid-list", episode_with(grid=[10, 10]), "grid"),
    ("trials-empty", episode_with(trials=[]), "trials"),
    ("trials-object", episode_with(trials={"0": 1}), "trials"),
    ("trials-null", episode_with(trials=None), "trials"),
    ("trial-not-object", episode_with(trials=[1, 2, 3]), "trials[0]"),
    ("trial-path-outside-grid", trial_with(path=[[7, 2], [60, 3]]), "trials[0]"),
    ("trial-path-empty", trial_with(path=[]), "path"),
    ("trial-path-strings", trial_with(path=[["a", "b"]]), "path"),
    ("trial-walls-not-cells", trial_with(walls=[[1, 2, 3]]), "walls"),
    ("trial-wall-negative", trial_with(walls=[[-1, 0]]), "walls"),
    ("trial-color-300", episode_doc(lambda d: d["trials"][0]["objects"][0].update(color=[300, 0, 0])), "color"),
    ("trial-color-nan", episode_doc(lambda d: d["trials"][0]["objects"][0].update(color=[NAN, 0, 0])), "color"),
    ("trial-cell-nan", episode_doc(lambda d: d["trials"][0]["objects"][0].update(cell=[NAN, 1])), "cell"),
    ("trial-cell-infinity", episode_doc(lambda d: d["trials"][0]["objects"][0].update(cell=[float("inf"), 1])), "cell"),
    ("trial-cell-huge", episode_doc(lambda d: d["trials"][0]["objects"][0].update(cell=[2 ** 70, 1])), "cell"),
    ("trial-objects-null", trial_with(objects=None), "objects"),
    ("trial-agent-missing", episode_doc(lambda d: d["trials"][0].pop("agent")), "agent"),
    ("trial-phase-unknown", trial_with(phase="intermission"), "phase"),
    ("difficulty-nan", episode_with(difficulty=NAN), "difficulty"),
    ("beta-negative", episode_with(beta=-1.0), "beta"),
    ("beta-infinite", episode_with(beta=float("inf")), "beta"),
]


def _cases() -> list[Case]:
    out = []
    for name, build, culprit in EPISODES:
        out.append(Case(f"validate-episode-{name}", ["validate", "{in}/ep.json"], build=build, code=1,
                        culprit=culprit))
        out.append(Case(f"render-episode-{name}", ["render", "{in}/ep.json", "--out", "{out}"], build=build,
                        culprit=culprit))
    return out


CASES = _cases()
