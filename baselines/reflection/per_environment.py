"""Table 1 per environment: ours beside the extended-environments library's results file, every cell.

    .venv/bin/python baselines/reflection/per_environment.py > baselines/reflection/table1-environments.md

Ours: the task logs beside this file, every (agent, length, seed) task of ``bib reflect table`` with its 50 + 50
per-environment scores: ``table1.jsonl.gz`` (Random, Constant, NaiveLearner and their reality checks) and
``table1-sb3.jsonl.gz`` (A2C, DQN, PPO and theirs). Published: ``data/published/reflection_table1_environments.csv``
(the library's ``result_table.csv`` at e38e3dc). tests/test_reflection_published.py checks that this file is
what the script prints.
"""

from __future__ import annotations

from pathlib import Path

from bib.reflection.published import SOURCE, compare_environments, format_comparison, read_task_log

HERE = Path(__file__).resolve().parent
LOGS = ("table1.jsonl.gz", "table1-sb3.jsonl.gz")
RUNS = {
    "table1.jsonl.gz": ".venv/bin/python benchmarks/reflection_tasks.py run LOG --agents random,constant,naive-learner "
                       "--steps 500 --steps 1000 --seeds 10 --workers 2",
    "table1-sb3.jsonl.gz": ".venv/bin/python benchmarks/reflection_tasks.py run LOG --agents a2c,dqn,ppo --seeds 10 "
                           "--workers 2",
}


def report() -> str:
    """The markdown page."""
    ours = {}
    for name in LOGS:
        ours.update(read_task_log(HERE / name))
    made = "; ".join(f"`{name}`: `{RUNS[name]}`" for name in LOGS)
    return (
        "# Table 1 per environment: ours beside the library's results file\n\n"
        "Made by: `.venv/bin/python baselines/reflection/per_environment.py > "
        "baselines/reflection/table1-environments.md`\n\n"
        f"Ours: the task logs beside this file ({made}; 10 seeds, 0..9, at 500 and 1,000 steps). Published: "
        f"`data/published/reflection_table1_environments.csv`, the total rewards of `{SOURCE[2]}` in "
        f"{SOURCE[0]} at commit {SOURCE[1][:7]} (the file behind the paper's Table 1). A cell is one agent, length "
        "and environment: the mean over the 10 seeds of total reward / steps, with SE = sd/sqrt(10); z = "
        "(ours - published) / our SE (the test the Table 1 means pass), z (combined SE) divides by "
        "sqrt(ours^2 + theirs^2). 'equal': the same mean to the bit.\n\n"
        f"{format_comparison(compare_environments(ours))}\n"
    )


if __name__ == "__main__":
    print(report(), end="")
