"""Set statistics: the closest-object rule on hand-made layouts, aggregates against direct counts, CLI."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from bib.cli import main
from bib.episode import load_episode
from bib.stimuli.build import build
from bib.stimuli.stats import closest_object_credit, goes_far, set_stats
from bib.tasks import REGISTRY
from bib.tasks.common import empty_layout, make_trial
from bib.world.grid import Agent, GridObject
from bib.world.planning import shortest_cost, shortest_path

AGENT = Agent("agent-0", "kite", (1, 2, 3), (1, 1))
NEAR = GridObject("A", "heart", (200, 0, 0), (3, 1))  # cost 2 from home
FAR = GridObject("B", "moon", (0, 200, 0), (6, 6))  # cost 5 * sqrt(2) ~ 7.07


@pytest.fixture(autouse=True)
def _quiet(monkeypatch) -> None:
    monkeypatch.setenv("BIB_NO_PROGRESS", "1")


def _trial(goal: str, walls=frozenset()):
    lay = empty_layout(walls=walls, objects=(NEAR, FAR), agents=(AGENT,))
    target = lay.goal_cell(goal)
    return make_trial(lay, shortest_path(lay, AGENT.home, target), goal, "test")


def test_goes_far_uses_path_cost_from_home() -> None:
    assert goes_far(_trial("B")) is True
    assert goes_far(_trial("A")) is False
    # walls around A make its path longer than B's: going to B is now the near choice
    detour = frozenset({(2, 0), (2, 1), (2, 2), (2, 3), (2, 4), (2, 5), (2, 6), (2, 7), (3, 2), (4, 2), (4, 1)})
    lay = empty_layout(walls=detour, objects=(NEAR, FAR), agents=(AGENT,))
    assert not math.isfinite(shortest_cost(lay, (1, 1), (3, 1)))
    assert goes_far(_trial("B", detour)) is False  # A is unreachable, B is the nearest reachable target


class _Ep:
    def __init__(self, trial) -> None:
        self.test = trial


def test_closest_object_credit_scores_pairs() -> None:
    near, far = _Ep(_trial("A")), _Ep(_trial("B"))
    assert closest_object_credit(near, far) == 1.0  # only the unexpected one goes far
    assert closest_object_credit(far, near) == 0.0
    assert closest_object_credit(near, near) == 0.5 and closest_object_credit(far, far) == 0.5


def test_set_stats_match_direct_counts(tmp_path: Path) -> None:
    evals = sorted(t for t in REGISTRY if REGISTRY[t].kind == "evaluation")[:2]
    units = [("single-object", 3)] + [(t, 3) for t in evals]
    build(units, 4, tmp_path / "s")
    stats = {s.condition: s for s in set_stats(tmp_path / "s", workers=1)}
    assert sorted(stats) == sorted(t for t, _ in units)
    for task, n in units:
        eps = [load_episode(p) for p in sorted((tmp_path / "s" / "episodes").glob(f"{task}-0*.json"))]
        st = stats[task]
        assert st.episodes == len(eps) and st.pairs == (n if REGISTRY[task].kind == "evaluation" else 0)
        n_objects = sum(len(t.layout.objects) for ep in eps for t in ep.trials)
        assert sum(map(sum, st.object_grid)) == n_objects
        cells = {o.cell for ep in eps for t in ep.trials for o in t.layout.objects}
        assert st.object_cells == len(cells)
        assert 0 < st.object_entropy_bits <= math.log2(len(cells)) + 1e-9
        fam = [t.n_steps for ep in eps for t in ep.familiarization]
        assert st.fam_steps["mean"] == pytest.approx(sum(fam) / len(fam))
        assert sum(st.test_steps_histogram.values()) == len(eps)
        if REGISTRY[task].kind == "evaluation":
            pairs = {}
            for ep in eps:
                pairs.setdefault(ep.pair_id, {})[ep.outcome] = ep
            want = sum(closest_object_credit(p["expected"], p["unexpected"]) for p in pairs.values()) / len(pairs)
            assert st.closest_object_correct == pytest.approx(want)
        else:
            assert st.closest_object_correct is None


def test_stats_cli_table_and_json(tmp_path: Path, capsys) -> None:
    build([("single-object", 2)], 0, tmp_path / "s")
    with pytest.raises(SystemExit) as info:
        main(["stats", str(tmp_path / "s")])
    assert info.value.code == 0
    lines = [[c.strip() for c in line.strip("|").split("|")] for line in capsys.readouterr().out.strip().splitlines()]
    assert lines[0][:4] == ["condition", "kind", "episodes", "pairs"]  # the Markdown table of the SetStats result
    assert lines[2][:4] == ["single-object", "background", "2", "0"]
    from bib.stimuli.stats import COLUMN_MEANINGS

    explained = [line.split("**")[1] for line in (" ".join(x) for x in lines) if line.startswith("- **")]
    assert explained == lines[0] == [c for c, _ in COLUMN_MEANINGS]  # every column explained, in order
    with pytest.raises(SystemExit):
        main(["stats", str(tmp_path / "s"), "--json"])
    data = json.loads(capsys.readouterr().out)["conditions"]
    assert data[0]["condition"] == "single-object" and data[0]["episodes"] == 2
    assert data[0]["test_steps_unexpected"]["mean"] is None
    assert json.loads(json.dumps(data)) and "limit" not in data[0]
    with pytest.raises(SystemExit) as info:
        main(["stats", str(tmp_path / "missing")])
    assert info.value.code == 2
    assert "no such file or folder" in capsys.readouterr().err


def test_a_limit_set_says_so(tmp_path: Path, capsys) -> None:
    """A set built with --limit says so in bib stats and on its report page (its counts are not the spec's)."""
    from bib.stimuli.build import build_spec, built_limit
    from bib.stimuli.spec import load_spec, override

    spec = override(load_spec(Path(__file__).resolve().parents[1] / "stimuli" / "infant-pilot.toml"), "t",
                    video=False, per_trial=False, cell_px=8, canvas=None)
    build_spec(spec, tmp_path / "lim", limit=1, record=True)
    assert built_limit(tmp_path / "lim") == 1 and built_limit(tmp_path / "nowhere") is None
    with pytest.raises(SystemExit):
        main(["stats", str(tmp_path / "lim")])
    out = capsys.readouterr().out
    assert out.startswith("Built with --limit 1: at most 1 pairs (or episodes) per task, not the spec's counts.")
    with pytest.raises(SystemExit):
        main(["stats", str(tmp_path / "lim"), "--json"])
    assert json.loads(capsys.readouterr().out)["limit"] == 1
    with pytest.raises(SystemExit) as done:
        main(["report", str(tmp_path / "lim"), "--out", str(tmp_path / "site")])
    assert done.value.code in (None, 0)
    page = (tmp_path / "site" / "set-infant-pilot.html").read_text(encoding="utf-8")
    assert "Stimulus set infant-pilot (--limit 1)" in page and "Built with <code>--limit 1</code>" in page
