"""Hostile CSV/JSON/TOML tables: results for `bib evaluate`, tables for `bib leaderboard`, looking
times for `bib analyze`, specs for `bib generate`."""

from __future__ import annotations

from hostile import Case
from hostile.build import write

RESULTS_HEADER = "episode_id,surprise\n"
E, U = "preference-000000-expected", "preference-000000-unexpected"

# results CSVs given to `bib evaluate {in}/set {in}/r.csv`: (name, text or bytes, culprit)
RESULTS_FILES = [
    ("empty", b"", "r.csv"),
    ("header-only", RESULTS_HEADER, "r.csv"),
    ("wrong-header", "id,value\n" f"{E},1\n{U},2\n", "r.csv"),
    ("surprise-text", RESULTS_HEADER + f"{E},high\n{U},2\n", "row 2"),
    ("surprise-nan", RESULTS_HEADER + f"{E},nan\n{U},2\n", E),
    ("surprise-inf", RESULTS_HEADER + f"{E},inf\n{U},2\n", E),
    ("surprise-empty", RESULTS_HEADER + f"{E},\n{U},2\n", "row 2"),
    ("episode-missing", RESULTS_HEADER + f"{E},1\n", U),
    ("episode-unknown", RESULTS_HEADER + f"{E},1\n{U},2\nnobody-000000-expected,3\n", "nobody-000000-expected"),
    ("episode-twice", RESULTS_HEADER + f"{E},1\n{E},1\n{U},2\n", E),
    ("extra-field", RESULTS_HEADER + f"{E},1,9\n{U},2\n", "r.csv"),
    ("a-folder", None, "r.csv"),
]


def _results_build(data: str | bytes | None):
    if data is None:
        return lambda inp: (inp / "r.csv").mkdir()
    return write("r.csv", data)


def _cases() -> list[Case]:
    out = []
    for name, data, culprit in RESULTS_FILES:
        out.append(Case(f"evaluate-results-{name}", ["evaluate", "{in}/set", "{in}/r.csv"],
                        build=_results_build(data), culprit=culprit))
        out.append(Case(f"evaluate-out-results-{name}", ["evaluate", "{in}/set", "{in}/r.csv", "--out", "{out}"],
                        build=_results_build(data), culprit=culprit))
    return out


CASES = _cases()
