"""One source for every fact: the task registry is the only list of conditions and tasks (issue 18).

Every module outside ``bib/tasks/`` (and every test and benchmark) derives condition lists from
:mod:`bib.tasks.registry`; this test fails when one of them spells a list out again.
"""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

import pytest

from bib.evaluation import read_anchors
from bib.tasks import REGISTRY, bib_folders, conditions, families, table_order, task_ids

ROOT = Path(__file__).resolve().parents[1]
FAMILY_MODULES = ROOT / "bib" / "tasks"


def _strings(node: ast.AST) -> list[str]:
    """String constants that are direct members of a literal collection (or of its tuple members)."""
    if isinstance(node, ast.Dict):
        members: list[ast.AST | None] = list(node.keys)
    elif isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        members = list(node.elts)
    else:
        return []
    out = []
    for m in members:
        if isinstance(m, ast.Tuple) and m.elts:
            m = m.elts[0]
        if isinstance(m, ast.Constant) and isinstance(m.value, str):
            out.append(m.value)
    return out


def _families() -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for t in REGISTRY.values():
        out.setdefault(t.family, set()).add(t.id)
    return out


def is_listing(named: set[str]) -> bool:
    """Whether a collection naming these task ids spells out (part of) the registry's list: it holds a
    whole family of two or more, is a union of three or more whole families, or names five or more ids."""
    if len(named) < 2:
        return False
    fams = _families()
    whole = [f for f, ids in fams.items() if ids <= named]
    covered = set().union(*(fams[f] for f in whole)) if whole else set()
    return (len(named) >= 5 or any(len(fams[f]) > 1 for f in whole)
            or (len(whole) >= 3 and covered == named))


def listings(source: str) -> list[tuple[int, list[str]]]:
    """``(line, ids)`` of every literal collection that spells out task ids (see :func:`is_listing`)."""
    ids = set(REGISTRY)
    found = []
    for node in ast.walk(ast.parse(source)):
        named = set(_strings(node)) & ids
        if is_listing(named):
            found.append((node.lineno, sorted(named)))
    return found


def _python_files() -> list[Path]:
    files = [p for d in ("bib", "tests", "benchmarks") for p in (ROOT / d).rglob("*.py")]
    return sorted(p for p in files if p.parent != FAMILY_MODULES)


def test_no_module_outside_the_family_modules_lists_task_ids() -> None:
    bad = [f"{p.relative_to(ROOT)}:{line}: {', '.join(ids)}"
           for p in _python_files() for line, ids in listings(p.read_text(encoding="utf-8"))]
    assert not bad, "derive these from bib.tasks (conditions(), task_ids(), families()):\n" + "\n".join(bad)


@pytest.mark.parametrize("source, n", [
    ('X = ["preference", "multi-agent", "inaccessible-goal"]', 1),
    ('X = {"single-object": 1, "no-navigation": 2, "multi-agent-background": 3, "agent-blocked-instrumental": 4}', 1),
    ('X = [("preference", 1), ("multi-agent", 1), ("inaccessible-goal", 3)]', 1),
    ('X = ("efficiency-path", "efficiency-time", "efficiency-irrational")', 1),
    ('X = ["preference", "efficiency-path"]', 0),  # examples are test data, not the list
    ('X = ["preference", "efficiency-path", "single-object"]', 0),
    ('X = [("navigation", 23), ("key-door", 2), ("two-path-key", 1)]', 0),
    ('f("preference"); g("multi-agent"); h("inaccessible-goal")', 0),
])
def test_the_listing_detector_sees_lists_and_only_lists(source: str, n: int) -> None:
    assert len(listings(source)) == n


def test_table_order_is_the_published_tables_order() -> None:
    """The registry's order (with family averages) is the order of the papers' Table 1 (data/published)."""
    published = list(dict.fromkeys(row["condition"] for row in read_anchors()))
    bib = bib_folders("evaluation")  # the conditions BIB has (AGENT's families, issue 43, have no BIB folder)
    assert [r for r in table_order() if r in bib or r.endswith("-average")] == published
    assert [c for c in conditions() if c in bib] == [c for c in published if not c.endswith("-average")]


def test_families_are_the_averaged_ones() -> None:
    fams = families()
    assert {f"{f}-average" for f in fams} == {r for r in table_order() if r.endswith("-average")}
    for fam, conds in fams.items():
        assert conds == task_ids("evaluation", family=fam) and len(conds) > 1


def test_every_evaluation_condition_and_background_task_has_a_bib_folder_and_a_description() -> None:
    beyond_bib = {t for fam in ("unobserved-constraints", "cost-reward") for t in task_ids(family=fam)}  # issue 43: AGENT's scenarios have no BIB folder
    for kind in ("evaluation", "background"):
        folders = bib_folders(kind)  # BIB's 9 conditions and 4 background tasks; AGENT's families have none
        assert set(folders) == set(task_ids(kind)) - beyond_bib
        assert len(set(folders.values())) == len(folders)  # one folder per id within a kind
    for t in REGISTRY.values():
        assert t.expected, t.id
        assert bool(t.unexpected) == (t.kind == "evaluation"), t.id


def test_stimulus_specs_name_registered_tasks_only() -> None:
    for spec in (ROOT / "stimuli").glob("*.toml"):
        for entry in tomllib.loads(spec.read_text(encoding="utf-8")).get("tasks", []):
            assert entry["id"] in REGISTRY, (spec.name, entry["id"])


def test_every_command_reads_a_set_with_the_one_reader(tmp_path: Path) -> None:
    """stats, meg episodes, export and bib.data see the same episodes: what a set's manifest lists
    (not a stray file in its folder) plus episode files outside any set (the old per-command
    readers of stats, meg and export also read the strays)."""
    import shutil

    from bib.data import EpisodeDataset
    from bib.meg.episodes import meg_of_directory
    from bib.stimuli.bibjson import export_bib_json
    from bib.stimuli.build import build
    from bib.stimuli.sets import find_episodes
    from bib.stimuli.stats import set_stats

    root = tmp_path / "sets"
    build([("preference", 1)], 3, root / "a")
    other = build([("efficiency-path", 2)], 4, tmp_path / "b")
    (root / "loose").mkdir()
    for f in sorted((other.out / "episodes").glob("*.json")):  # pair 0: loose files; pair 1: strays in set a
        shutil.copy(f, root / ("loose" if "-000000" in f.name else "a/episodes"))
    refs = find_episodes(root).refs
    want = {r.id for r in refs}
    assert len(want) == 4 and {r.task for r in refs} == {"preference", "efficiency-path"}
    assert sum(s.episodes for s in set_stats(root)) == 4
    assert {Path(row["file"]).stem for row in meg_of_directory(root).rows} == want
    assert {row["episode_id"] for row in export_bib_json(root, tmp_path / "bib-json")} == want
    assert len(EpisodeDataset(root)) == 4
