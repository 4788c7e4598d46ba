"""Containment and bounded reading (issue 28 items 1 and 2): ids that are not safe file names, paths a
set names that leave it, symbolic links out of a set, seeds, grids and nesting out of range."""

from __future__ import annotations

import shutil

from hostile import Case
from hostile.build import EPISODE, chain, episode_doc, episode_with, manifest, manifest_cell, symlink, write
from hostile.cases_sets import READERS

UNSAFE_IDS = {
    "climbs-four": "../../../../elsewhere/x",
    "climbs-one": "../x",
    "absolute": "/tmp/x",
    "subfolder": "a/b",
    "dot-dot": "..",
    "dot": ".",
    "hidden": ".hidden",
    "dash-option": "-rf",
    "nul": "x\u0000y",
    "newline": "x\ny",
    "empty": "",
    "too-long": "a" * 300,
    "backslash": "..\\..\\x",
    "space": "my episode",
    "shell": "$(touch pwned)",
    "tilde": "~root",
}


def _deep(n: int) -> str:
    return '{"a": ' * n + "1" + "}" * n


EPISODES = [
    *[(f"id-{name}", episode_with(id=value), "field 'id'") for name, value in UNSAFE_IDS.items()],
    ("pair-id-climbs", episode_with(pair_id="../../pairs/p"), "field 'pair_id'"),
    ("twin-id-climbs", episode_with(twin_id="../../twins/t"), "field 'twin_id'"),
    ("seed-2-to-80", episode_with(seed=2 ** 80), "field 'seed'"),
    ("seed-2-to-64", episode_with(seed=2 ** 64), "field 'seed'"),
    ("seed-negative", episode_with(seed=-1), "field 'seed'"),
    ("seed-1000-digits", episode_with(seed=10 ** 999), "field 'seed'"),
    ("grid-100000", episode_with(grid={"width": 100000, "height": 100000}), "field 'grid'"),
    ("grid-101-wide", episode_with(grid={"width": 101, "height": 10}), "field 'grid'"),
    ("deep-array", write("ep.json", "[" * 100000 + "]" * 100000), "nested too deeply"),
    ("deep-object", write("ep.json", _deep(50000)), "nested too deeply"),
    ("deep-in-unknown-field", write("ep.json", '{"schema": "bib.episode/1", "x": ' + "[" * 100000 + "]" * 100000 + "}"),
     "nested too deeply"),
    ("not-utf8", write("ep.json", b'{"schema": "bib.episode/1", "id": "\xff\xfe"}'), "not UTF-8"),
    ("latin1", write("ep.json", '{"schema": "bib.episode/1", "task": "caf\u00e9"}'.encode("latin-1")), "not UTF-8"),
]
SLOW_EPISODES = [
    ("unknown-field-200mb", episode_doc(lambda d: d.update(junk="x" * (200 << 20))), "MiB"),
    ("file-17mb", episode_doc(lambda d: d.update(junk="x" * (17 << 20))), "MiB"),
]


def _outside_copy(inp) -> None:
    shutil.copy(inp / EPISODE, inp / "outside.json")


SETS = [
    ("path-etc-passwd", manifest_cell("episode_path", "/etc/passwd"), "episode_path"),
    ("path-absolute-copy", chain(_outside_copy, manifest_cell("episode_path", "{in}/outside.json")), "episode_path"),
    ("path-climbs", chain(_outside_copy, manifest_cell("episode_path", "../outside.json")), "episode_path"),
    ("path-climbs-through-episodes", chain(_outside_copy, manifest_cell("episode_path", "episodes/../../outside.json")),
     "episode_path"),
    ("path-home", manifest_cell("episode_path", "~/x.json"), "episode_path"),
    ("path-backslash", manifest_cell("episode_path", "..\\outside.json"), "episode_path"),
    ("path-empty", manifest_cell("episode_path", ""), "episode_path"),
    ("video-etc-passwd", manifest_cell("video_path", "/etc/passwd"), "video_path"),
    ("video-climbs", manifest_cell("video_path", "../../x.mp4"), "video_path"),
    ("episode-symlink-out", chain(_outside_copy, symlink(EPISODE, "{in}/outside.json")), "outside.json", 2),
    ("episode-symlink-etc", symlink(EPISODE, "/etc/hostname"), "/etc/hostname", 2),
    ("episodes-folder-symlink-out", chain(lambda inp: shutil.move(inp / "set/episodes", inp / "elsewhere"),
                                          symlink("set/episodes", "{in}/elsewhere")), "elsewhere"),
    ("episode-id-climbs", manifest_cell("episode_id", "../../x"), "episode_id"),
    ("episode-id-absolute", manifest_cell("episode_id", "/tmp/x"), "episode_id"),
    ("row-duplicated", manifest(lambda rows: rows + [rows[1]]), "appears twice"),
    ("path-duplicated", manifest(lambda rows: rows + [["other-id", *rows[1][1:]]]), "appears twice"),
    ("header-duplicated", manifest(lambda rows: [[*r, r[0]] for r in rows]), "appears twice in the header"),
    ("not-utf8", write("set/manifest.csv", b"episode_id,\xff\xfe\n"), "not UTF-8"),
]


def _cases() -> list[Case]:
    out = []
    for batch, slow in ((EPISODES, False), (SLOW_EPISODES, True)):
        for name, build, culprit in batch:
            out.append(Case(f"validate-episode-{name}", ["validate", "{in}/ep.json"], build=build, code=1,
                            culprit=culprit, slow=slow))
            out.append(Case(f"render-episode-{name}", ["render", "{in}/ep.json", "--out", "{out}"], build=build,
                            culprit=culprit, slow=slow))
    for name, build, culprit, *validate_code in SETS:  # validate: a finding (1) unless it refuses the set (2)
        for command, argv in READERS.items():
            code = (validate_code or [1])[0] if command == "validate" else 2
            out.append(Case(f"{command}-set-{name}", [a.replace("{set}", "{in}/set") for a in argv], build=build,
                            code=code, culprit=culprit))
    return out


CASES = _cases()


def _orders(video_path: str):
    """``{in}/set/orders.csv`` with one row whose per-trial video is ``video_path``."""
    from bib.stimuli.orders import ORDER_COLUMNS

    row = {"order": "1", "position": "1", "task": "preference", "pair_id": "preference-000000", "phase": "test",
           "trial": "8", "outcome": "expected", "test_position": "1", "episode_id": "preference-000000-expected",
           "video_path": video_path, "fps": "25", "video_frames": "100", "outcome_frame": "50"}
    return write("set/orders.csv", ",".join(ORDER_COLUMNS) + "\n" + ",".join(row[c] for c in ORDER_COLUMNS) + "\n")


ORDERS = [
    ("etc-passwd", _orders("/etc/passwd")),
    ("climbs", _orders("../../../x.mp4")),
    ("home", _orders("~/x.mp4")),
    ("link-out", chain(_orders("videos/trials/x.mp4"), symlink("set/videos/trials/x.mp4", "/etc/hostname"))),
]
CASES += [Case(f"experiment-orders-video-{name}", ["experiment", "{in}/set", "--out", "{out}"], build=build,
               culprit="orders.csv: row 2: video_path") for name, build in ORDERS]

# a set's render stamp (render.json) that `bib render` of one of its episodes reads
STAMPS = [
    ("wrong-type", '{"preference": {"cell_px": "x"}}', "render.json: task preference: not render settings"),
    ("cell-px-huge", '{"preference": {"cell_px": 1000000}}', "cell_px"),
    ("fps-zero", '{"preference": {"fps": 0}}', "fps"),
]
CASES += [Case(f"render-set-stamp-{name}", ["render", "{in}/set/episodes/preference-000000-expected.json", "--out", "{out}"],
               build=write("set/render.json", text), culprit=culprit) for name, text, culprit in STAMPS]
