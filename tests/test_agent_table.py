"""Issue 43: AGENT's published numbers (Shu et al. 2021, Table 1), their one file, and the board beside ours."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bib.agent_table import AGENT_PUBLISHED, agent_board, read_agent_published
from bib.errors import BibInputError
from bib.evaluation import build_leaderboard

SHARED = Path(__file__).resolve().parents[2] / "shared" / "reference" / "bib.md"


def _cells() -> dict[tuple[str, str, str], float]:
    return {(r["model"], r["block"], r["scenario"]): float(r["accuracy"]) for r in read_agent_published()}


def test_every_row_names_table_1_and_its_page():
    rows = read_agent_published()
    assert len(rows) == 35  # Human (all block) + BIPaCK and ToMnet-G in 3 blocks, 4 scenarios + all
    assert all(r["table"] == "Table 1" and "p. 8" in r["source"] and "2102.12321" in r["source"] for r in rows)


def test_the_issues_numbers_are_the_leave_one_scenario_out_block():
    """Issue 43 quotes BIPaCK .98/.95/.87/.92 and ToMnet-G .71/.65/.73: Table 1's G2 rows (ToMnet-G's cost-reward .75)."""
    c = _cells()
    order = ("goal-preferences", "action-efficiency", "unobserved-constraints", "cost-reward")
    assert [c[("BIPaCK", "g2", s)] for s in order] == [0.98, 0.95, 0.87, 0.92]
    assert [c[("ToMnet-G", "g2", s)] for s in order] == [0.71, 0.65, 0.73, 0.75]
    assert (c[("BIPaCK", "all", "all")], c[("ToMnet-G", "all", "all")], c[("Human", "all", "all")]) == (0.96, 0.90, 0.91)


@pytest.mark.skipif(not SHARED.is_file(), reason="the team's reference notes (../shared) are not here")
def test_the_all_block_agrees_with_the_reference_notes_independent_transcription():
    """reference/bib.md section 3e transcribed the 'All' block and the overall G1/G2 cells separately."""
    text = SHARED.read_text(encoding="utf-8")
    rows = dict(re.findall(r"^\| ([^|]+?) \| (0\.\d\d \| 0\.\d\d) \|$", text, re.M))
    c = _cells()
    named = {'Goal ("All")': "goal-preferences", 'Efficiency ("All")': "action-efficiency",
             'Unobserved ("All")': "unobserved-constraints", 'Cost-Reward ("All")': "cost-reward", "All": "all"}
    for label, scenario in named.items():
        bipack, tomnet = (float(v) for v in rows[label].split(" | "))
        assert (c[("BIPaCK", "all", scenario)], c[("ToMnet-G", "all", scenario)]) == (bipack, tomnet), label
    for label, block in (("G1 leave-type-out", "g1"), ("G2 leave-scenario-out", "g2")):
        bipack, tomnet = (float(v) for v in rows[label].split(" | "))
        assert (c[("BIPaCK", block, "all")], c[("ToMnet-G", block, "all")]) == (bipack, tomnet), label


def test_the_board_puts_ours_beside_agent_on_the_scenario_bib_has():
    ours = [{"observer": "inverse-planner", "condition": "cost-reward", "accuracy": "0.875", "stimuli": "x seed 1"},
            {"observer": "inverse-planner", "condition": "preference", "accuracy": "1.0", "stimuli": "x seed 1"},
            {"observer": "random", "condition": "preference", "accuracy": "0.5", "stimuli": "x seed 1"}]
    header, rows, note = agent_board(read_agent_published(), ours)
    assert header == ["AGENT scenario", "Human", "ToMnet-G (All)", "BIPaCK (All)", "ToMnet-G (G1)", "BIPaCK (G1)",
                      "ToMnet-G (G2)", "BIPaCK (G2)", "inverse-planner (ours)"]
    board = {r[0]: r[1:] for r in rows}
    assert board["cost-reward"] == ["87", "89", "95", "48", "94", "75", "92", "87.5"]
    assert board["goal-preferences"][-1] == "-"  # BIB's preference condition is not AGENT's scenario
    assert "cost-reward" in note and "x seed 1" in note and "p. 8" in note


def test_bib_leaderboard_prints_the_agent_board(tmp_path: Path):
    """Without a row on AGENT's scenarios in its table (BIB's default table), the board reads the committed rows of
    both AGENT families (baselines/agent/results.csv, packaged): the inverse planner decides both (99.5% or more)."""
    from bib.agent_table import AGENT_TABLE
    from bib.evaluation import read_table

    assert AGENT_TABLE.resolve() == (Path(__file__).resolve().parents[1] / "baselines" / "agent" / "results.csv").resolve()
    for table in (tmp_path / "none.csv", None):
        result = build_leaderboard(table)
        text = result.to_markdown()
        assert "AGENT (Shu et al. 2021, Table 1) beside ours" in text
        board = {r[0]: dict(zip(result.agent["header"][1:], r[1:])) for r in result.agent["rows"]}
        assert board["cost-reward"]["BIPaCK (G2)"] == "92" and board["unobserved-constraints"]["ToMnet-G (G2)"] == "73"
        committed = {(r["observer"], r["condition"]): f"{100 * float(r['accuracy']):.1f}" for r in read_table(AGENT_TABLE)}
        for scenario in ("cost-reward", "unobserved-constraints"):
            assert board[scenario]["inverse-planner (ours)"] == committed[("inverse-planner", scenario)]
            assert float(committed[("inverse-planner", scenario)]) >= 99.5  # 100.0 and 99.5 (398 of 400 hug-design pairs)
            assert board[scenario]["random (ours)"] == committed[("random", scenario)]
        assert board["goal-preferences"]["inverse-planner (ours)"] == "-"
        assert "agent-cost-reward-ctrl seed 20211207" in result.agent["note"]
    mine = tmp_path / "mine.csv"  # a table with its own rows on a scenario: the board shows those only
    mine.write_text("observer,condition,accuracy\nmine,cost-reward,0.5\n")
    header = build_leaderboard(mine).agent["header"]
    assert header[-1] == "mine (ours)" and "inverse-planner (ours)" not in header


@pytest.mark.parametrize("row, message", [
    ("BIPaCK,cost-reward,g3,0.92,Table 1,x", "row 2: block 'g3' is not one of all, g1, g2"),
    ("BIPaCK,cost-reward,g2,92,Table 1,x", "row 2: accuracy '92' is not from 0 to 1"),
    ("BIPaCK,cost-reward,g2,high,Table 1,x", "row 2: accuracy 'high' is not a number"),
])
def test_a_bad_published_file_is_refused_in_one_line(tmp_path: Path, row: str, message: str):
    bad = tmp_path / "agent.csv"
    bad.write_text("model,scenario,block,accuracy,table,source\n" + row + "\n")
    with pytest.raises(BibInputError, match=re.escape(f"{bad}: {message}")):
        read_agent_published(bad)
    assert AGENT_PUBLISHED.is_file()
