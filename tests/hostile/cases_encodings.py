"""Encodings, duplicates and BIB imports (issue 28 items 2 and 5): text files that are not UTF-8,
CSV headers naming a column twice, published anchors with the wrong columns, BIB JSON files that
are bombs, too deep, or hold NaN frame sizes, and a task folder with one unpaired file."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

from hostile import Case
from hostile.build import chain, text_of, write

ROOT = Path(__file__).resolve().parents[2]
LOOKS = "looks.csv"
BAD_BYTES = b"\xff\xfe\xfa caf\xe9\n"


def looking_times(inp: Path) -> None:
    """``{in}/looks.csv``: the committed example looking-time table."""
    shutil.copy(ROOT / "data" / "looking_times" / "example.csv", inp / LOOKS)


def bib_export(inp: Path) -> None:
    """``{in}/bib/preference/000000e.json`` and ``000000u.json``: the set's pair as BIB JSON."""
    from bib.stimuli.bibjson import export_bib_json

    export_bib_json(inp / "set", inp / "bib")


def bib_frames(change) -> callable:
    """The exported expected file after ``change(trials)`` (a list of trials, each a list of frame dicts)."""
    def build(inp: Path) -> None:
        bib_export(inp)
        p = inp / "bib" / "preference" / "000000e.json"
        trials = json.loads(p.read_text(encoding="utf-8"))
        change(trials)
        p.write_text(json.dumps(trials), encoding="utf-8")
    return build


def gzip_bomb(mib: int, name: str = "bib/preference/000000e.json"):
    """``{in}/name``: ``mib`` MiB of spaces as gzip members of 1 MiB (about 1 kB each on disk)."""
    def build(inp: Path) -> None:
        bib_export(inp)
        member = gzip.compress(b" " * (1 << 20), compresslevel=9)
        p = inp / name
        with open(p, "wb") as fh:
            for _ in range(mib):
                fh.write(member)
    return build


def _not_utf8_lines(text: str) -> bytes:
    lines = text.encode("utf-8").split(b"\n")
    return b"\n".join(lines[:2] + [lines[2] + b"\xff\xfe" if len(lines) > 2 else b"\xff"] + lines[3:])


CASES = [
    # --- text files that are not UTF-8: named, with the line of the first bad byte
    Case("evaluate-results-not-utf8", ["evaluate", "{in}/set", "{in}/r.csv"],
         build=write("r.csv", b"episode_id,surprise\n\xff\xfe,1\n"), culprit="r.csv: not UTF-8 text (byte 0xff at line 2"),
    Case("evaluate-results-binary", ["evaluate", "{in}/set", "{in}/r.csv"],
         build=write("r.csv", bytes(range(1, 256)) * 8), culprit="r.csv: header"),  # its first line is ASCII
    Case("evaluate-results-utf16", ["evaluate", "{in}/set", "{in}/r.csv"],
         build=write("r.csv", "episode_id,surprise\n".encode("utf-16")), culprit="r.csv: not UTF-8"),
    Case("evaluate-results-header-twice", ["evaluate", "{in}/set", "{in}/r.csv"],
         build=write("r.csv", "episode_id,surprise,surprise\n"), culprit="r.csv: header"),
    Case("score-manifest-not-utf8", ["score", "random", "{in}/set", "--out", "{out}"],
         build=text_of("set/manifest.csv", _not_utf8_lines), culprit="manifest.csv: not UTF-8 text (byte 0xff at line 3"),
    Case("stats-manifest-latin1", ["stats", "{in}/set"],
         build=text_of("set/manifest.csv", lambda t: t.replace("preference,preference", "pr\u00e9f,pr\u00e9f", 1).encode("latin-1")),
         culprit="manifest.csv: not UTF-8"),
    Case("leaderboard-table-not-utf8", ["leaderboard", "{in}/ours.csv"],
         build=text_of("ours.csv", _not_utf8_lines), culprit="ours.csv: not UTF-8 text"),
    Case("leaderboard-table-header-twice", ["leaderboard", "{in}/ours.csv"],
         build=text_of("ours.csv", lambda t: t.replace("observer,", "observer,observer,", 1)),
         culprit="ours.csv: column 'observer' appears twice"),
    Case("leaderboard-anchors-not-utf8", ["leaderboard", "{in}/ours.csv", "--anchors", "{in}/a.csv"],
         build=write("a.csv", b"model,condition,accuracy\nBC\xff,preference,50\n"), culprit="a.csv: not UTF-8"),
    Case("leaderboard-anchors-wrong-columns", ["leaderboard", "{in}/ours.csv", "--anchors", "{in}/a.csv"],
         build=write("a.csv", "name,cond,acc\nBC,preference,50\n"), culprit="a.csv: missing column(s) model, condition, accuracy"),
    Case("leaderboard-anchors-only-model", ["leaderboard", "{in}/ours.csv", "--anchors", "{in}/a.csv"],
         build=write("a.csv", "model\nBC\n"), culprit="a.csv: missing column(s) condition, accuracy"),
    Case("leaderboard-anchors-header-twice", ["leaderboard", "{in}/ours.csv", "--anchors", "{in}/a.csv"],
         build=write("a.csv", "model,condition,accuracy,accuracy\nBC,preference,50,60\n"),
         culprit="a.csv: column 'accuracy' appears twice"),
    Case("leaderboard-anchors-empty", ["leaderboard", "{in}/ours.csv", "--anchors", "{in}/a.csv"],
         build=write("a.csv", b""), culprit="a.csv: missing column(s)"),
    Case("generate-spec-not-utf8", ["generate", "{in}/s.toml", "--out", "{out}"],
         build=write("s.toml", b'name = "caf\xe9"\nseed = 1\n'), culprit="s.toml: not UTF-8 text (byte 0xe9 at line 1"),
    Case("generate-spec-utf16", ["generate", "{in}/s.toml", "--out", "{out}"],
         build=write("s.toml", 'name = "x"\n'.encode("utf-16")), culprit="s.toml: not UTF-8"),
    Case("generate-spec-malformed", ["generate", "{in}/s.toml", "--out", "{out}"],
         build=write("s.toml", "name = \n"), culprit="s.toml: malformed TOML"),
    Case("generate-spec-a-folder", ["generate", "{in}/s.toml", "--out", "{out}"],
         build=lambda inp: (inp / "s.toml").mkdir(), culprit="s.toml"),
    Case("train-config-not-utf8", ["train", "bc-mlp", "{in}/set", "--config", "{in}/c.toml", "--out", "{out}"],
         build=write("c.toml", b"[train]\nepochs = 1 # \xff\n"), culprit="c.toml: not UTF-8"),
    Case("analyze-spec-not-utf8", ["analyze", "{in}/looks.csv", "--spec", "{in}/s.toml"],
         build=chain(looking_times, write("s.toml", b"# \xff\n")), culprit="s.toml: not UTF-8"),
    Case("analyze-looks-not-utf8", ["analyze", "{in}/looks.csv"],
         build=chain(looking_times, text_of(LOOKS, _not_utf8_lines)), culprit="looks.csv: not UTF-8 text (byte 0xff at line 3"),
    Case("analyze-looks-latin1", ["analyze", "{in}/looks.csv"],
         build=chain(looking_times, text_of(LOOKS, lambda t: t.replace("synthetic", "synth\u00e9tique").encode("latin-1"))),
         culprit="looks.csv: not UTF-8"),
    Case("analyze-looks-utf16", ["analyze", "{in}/looks.csv"],
         build=chain(looking_times, text_of(LOOKS, lambda t: t.encode("utf-16"))), culprit="looks.csv: not UTF-8"),
    Case("analyze-looking-time-twice", ["analyze", "{in}/looks.csv"],
         build=chain(looking_times, text_of(LOOKS, lambda t: "\n".join(
             line + "," + line.split(",")[7] if line else line for line in t.split("\n")))),
         culprit="looks.csv: column 'looking_time_s' appears twice"),
    Case("analyze-participant-twice", ["analyze", "{in}/looks.csv", "--out", "{out}"],
         build=chain(looking_times, text_of(LOOKS, lambda t: "\n".join(
             line.split(",")[0] + "," + line if line else line for line in t.split("\n")))),
         culprit="looks.csv: column 'participant_id' appears twice"),
    Case("compare-looks-not-utf8", ["compare", "{in}/looks.csv", "{in}/set", "{in}/scores"],
         build=chain(looking_times, text_of(LOOKS, _not_utf8_lines)), culprit="looks.csv: not UTF-8"),
    # --- BIB JSON imports
    Case("import-one-unpaired-file", ["import", "{in}/bib/preference", "--out", "{out}"],
         build=chain(bib_export, lambda inp: (inp / "bib/preference/000000u.json").unlink()),
         culprit="000000e.json: one unpaired file in preference/"),
    Case("import-gzip-bomb-100mib", ["import", "{in}/bib/preference", "--out", "{out}"],
         build=gzip_bomb(100), culprit="000000e.json: inflates to more than 64 MiB"),
    Case("import-gzip-bomb-1gib", ["import", "{in}/bib/preference", "--out", "{out}"],
         build=gzip_bomb(1024), culprit="000000e.json: inflates to more than 64 MiB", slow=True),
    Case("import-gzip-cut-short", ["import", "{in}/bib/preference", "--out", "{out}"],
         build=chain(bib_export, lambda inp: (inp / "bib/preference/000000e.json").write_bytes(
             gzip.compress((inp / "bib/preference/000000e.json").read_bytes())[:200])),
         culprit="000000e.json: not a readable gzip file"),
    Case("import-gzip-garbage", ["import", "{in}/bib/preference", "--out", "{out}"],
         build=chain(bib_export, write("bib/preference/000000e.json", b"\x1f\x8b" + bytes(range(256)))),
         culprit="000000e.json: not a readable gzip file"),
    Case("import-deep-json", ["import", "{in}/bib/preference", "--out", "{out}"],
         build=chain(bib_export, write("bib/preference/000000e.json", "[" * 100000 + "]" * 100000)),
         culprit="000000e.json: not BIB JSON (nested too deeply)"),
    Case("import-not-utf8", ["import", "{in}/bib/preference", "--out", "{out}"],
         build=chain(bib_export, write("bib/preference/000000e.json", b"[[{\"size\": \xff}]]")),
         culprit="000000e.json: not BIB JSON (not UTF-8"),
    Case("import-frame-size-nan", ["import", "{in}/bib/preference", "--out", "{out}"],
         build=bib_frames(lambda trials: trials[0][0].update(size=[float("nan"), 200])), culprit="field 'size'"),
    Case("import-frame-size-infinite", ["import", "{in}/bib/preference", "--out", "{out}"],
         build=bib_frames(lambda trials: trials[0][0].update(size=[float("inf"), 200])), culprit="field 'size'"),
    Case("import-frame-size-huge", ["import", "{in}/bib/preference", "--out", "{out}"],
         build=bib_frames(lambda trials: trials[0][0].update(size=[2000000, 2000000])), culprit="field 'size'"),
    Case("import-frame-size-negative", ["import", "{in}/bib/preference", "--out", "{out}"],
         build=bib_frames(lambda trials: trials[0][0].update(size=[-200, 200])), culprit="field 'size'"),
    Case("import-frame-size-strings", ["import", "{in}/bib/preference", "--out", "{out}"],
         build=bib_frames(lambda trials: trials[0][0].update(size=["200", "200"])), culprit="field 'size'"),
]
