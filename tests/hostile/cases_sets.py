"""Hostile sets (manifest.csv and the files it names) given to every command that reads a set."""

from __future__ import annotations

from hostile import Case
from hostile.build import chain, manifest_cell, set_episode, symlink, text_of, write

MANIFEST = "set/manifest.csv"

# Commands reading a set; {set} is the set folder. validate reports a finding with exit 1 (its
# refusals, e.g. an unreadable manifest, exit 2: see `validate_code`).
READERS = {
    "validate": ["validate", "{set}"],
    "stats": ["stats", "{set}"],
    "score": ["score", "random", "{set}", "--out", "{out}"],
    "audit": ["audit", "{set}", "--out", "{out}"],
    "evaluate": ["evaluate", "{set}", "{in}/scores/results.csv", "--out", "{out}"],
    "report": ["report", "{set}", "--out", "{out}"],
}

# (name, build, culprit, validate's exit code, commands that are not given it: evaluate reads the
# manifest and the results, not the episode files)
FILES = ("evaluate",)
SETS = [
    ("manifest-empty", write(MANIFEST, b""), "manifest.csv: header", 1, ()),
    ("manifest-header-wrong", text_of(MANIFEST, lambda t: t.replace("episode_id", "episode", 1)), "header", 1, ()),
    ("manifest-row-short", text_of(MANIFEST, lambda t: t.rstrip("\n").rsplit(",", 3)[0] + "\n"), "row 3", 1, ()),
    ("manifest-sha-empty", manifest_cell("sha256", ""), "row 2", 1, ()),
    ("episode-file-deleted", lambda inp: (inp / "set/episodes/preference-000000-expected.json").unlink(),
     "preference-000000-expected.json", 1, FILES),
    ("episode-file-malformed", write("set/episodes/preference-000000-expected.json", "{"),
     "preference-000000-expected.json", 1, FILES),
    ("episode-sha-mismatch", write("set/episodes/preference-000000-expected.json",
                                   (b'{"schema": "bib.episode/1"}')), "preference-000000-expected.json", 1, FILES),
    ("episode-grid-zero", set_episode(lambda d: d.update(grid={"width": 0, "height": 10})), "grid", 1, FILES),
    ("episode-is-a-folder", chain(lambda inp: (inp / "set/episodes/preference-000000-expected.json").unlink(),
                                  lambda inp: (inp / "set/episodes/preference-000000-expected.json").mkdir()),
     "preference-000000-expected.json", 1, FILES),
    ("episode-dangling-link", symlink("set/episodes/preference-000000-expected.json", "{in}/set/episodes/nothing-here.json"),
     "preference-000000-expected.json", 1, FILES),
]


def _cases() -> list[Case]:
    out = []
    for name, build, culprit, validate_code, skip in SETS:
        for command, argv in READERS.items():
            if command in skip:
                continue
            code = validate_code if command == "validate" else 2
            out.append(Case(f"{command}-set-{name}", [a.replace("{set}", "{in}/set") for a in argv], build=build,
                            code=code, culprit=culprit))
    return out


CASES = _cases()
