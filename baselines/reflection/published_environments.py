"""Make bib/resources/published/reflection_table1_environments.csv from the extended-environments library's results.

The paper's Table 1 (Alexander et al., Section 5) was computed by the library's V1 harness into
``extended_rl/experiments/result_table.csv`` (repository semitrivial/ExtendedEnvironments, commit e38e3dc,
2021-06-03: 12,000 rows, agent x environment x seed x length, each the total reward of one run). This script
keeps every number of that file, renamed to bib's agent labels and environment names, one row per (agent,
environment, length) with the ten seeds' totals:

    git -C EXTENDED_ENVIRONMENTS show e38e3dc:extended_rl/experiments/result_table.csv > result_table.csv
    .venv/bin/python baselines/reflection/published_environments.py result_table.csv
"""

from __future__ import annotations

import csv
import io
import sys
from collections import defaultdict
from pathlib import Path

from bib.io import atomic_write_text
from bib.reflection.environments import battery
from bib.reflection.published import ENVIRONMENTS_CSV, SOURCE

OUT = Path(__file__).resolve().parents[2] / "bib" / "resources" / ENVIRONMENTS_CSV
SEEDS = tuple(range(10))
#: The results file's agent names -> Table 1's row labels (bib's ``Measurement.label``), in the file's order.
V1_AGENTS = {
    "random_agent": "Random", "reality_check(random_agent)": "Random_RC",
    "constant_agent": "Constant", "reality_check(constant_agent)": "Constant_RC",
    "naive_learner": "NaiveLearner", "reality_check(naive_learner)": "NaiveLearner_RC",
    "agent_A2C": "A2C", "reality_check(agent_A2C)": "A2C_RC",
    "agent_DQN": "DQN", "reality_check(agent_DQN)": "DQN_RC",
    "agent_PPO": "PPO", "reality_check(agent_PPO)": "PPO_RC",
}  # fmt: skip
HEADER = f"""\
# Table 1 of Alexander et al., "Extending Environments To Measure Self-Reflection In Reinforcement Learning"
# (Section 5), per environment: the numbers behind the printed means, from the library's own results file.
# Source: repository {SOURCE[0]}, commit {SOURCE[1]}, path {SOURCE[2]}
# (12,000 rows: 12 agents x 50 environments x 10 seeds x 500 / 1000 steps; the file's own total rewards, unchanged).
# Renamed only: agents to Table 1's labels, environments to bib's names (minus_rewards(x) -> opposite(X)).
# seedN = the total reward of seed N's run (the first percept's reward counts); its score is total / steps.
# The mean over the environments, then over the seeds, is each Table 1 cell; PPO at 500 steps is -0.021700 here
# where the paper prints -0.001384 (this file's PPO_RC) and PPO_RC -0.000098 (in no row here).
# Made by: .venv/bin/python baselines/reflection/published_environments.py result_table.csv
# Read by bib.reflection.published; tests/test_reflection_published.py compares it with ours and with the paper.
"""


def _key(name: str) -> str:
    return name.replace("opposite(", "minusrewards(").replace("_", "").lower()


def convert(source: str) -> str:
    """The CSV text: the header comments, then one row per (agent, length, environment) in Table 1's order."""
    ours = {_key(spec.name): spec.name for spec in battery()}
    totals: dict[tuple[str, str, int], dict[int, float]] = defaultdict(dict)
    with open(source, newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            key = (V1_AGENTS[row["agent"]], ours[_key(row["env"])], int(row["nsteps"]))
            totals[key][int(row["seed"])] = float(row["reward"])
    out = io.StringIO()
    out.write(HEADER)
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["agent", "environment", "steps", *(f"seed{s}" for s in SEEDS)])
    for label in V1_AGENTS.values():
        for steps in (500, 1000):
            for spec in battery():
                cells = totals.pop((label, spec.name, steps))
                assert sorted(cells) == list(SEEDS), (label, spec.name, steps)
                assert all(v.is_integer() for v in cells.values()), (label, spec.name, steps)  # rewards are -1, 0, 1
                writer.writerow([label, spec.name, steps, *(f"{cells[s]:.0f}" for s in SEEDS)])
    assert not totals, sorted(totals)[:3]
    return out.getvalue()


if __name__ == "__main__":
    atomic_write_text(OUT, convert(sys.argv[1]))
