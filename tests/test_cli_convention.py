"""Every `bib` command follows docs/cli.md (issue 17 item 6): the test walks the whole command tree,
renders each command's `--help` records and checks the convention; a deliberately broken command
shows that every rule fires."""

from __future__ import annotations

import re
import subprocess
import sys
from enum import Enum
from pathlib import Path

import pytest
import typer
from typer import _click

from bib import __version__
from bib.cli import command

# Inputs are positional: these option names would be an input (or an output that is not --out).
INPUT_OPTIONS = {"--episodes", "--background", "--results", "--infants", "--data", "--input", "--in", "--set",
                 "--plots", "--output", "--out-file", "--out-dir", "--dir", "--folder", "--file", "--csv"}
# Options that choose among a fixed set: they must be enums (their metavar lists the choices).
CHOICE_OPTIONS = {"--format", "--scale", "--agent", "--policy", "--codec", "--readout", "--suite", "--naming",
                  "--test", "--observer", "--condition"}
# Counts and sizes: the parser refuses values out of range (the help shows the range).
COUNT_OPTIONS = {"--workers", "--seeds", "--sims", "--n", "--steps", "--epochs", "--grids", "--rollouts", "--units",
                 "--limit", "--max-episodes", "--concurrency", "--retries", "--map-epochs", "--plan-epochs",
                 "--layers", "--cell-px", "--fps", "--mlp-restarts", "--horizon", "--width", "--height",
                 "--pairs-per-condition", "--pairs-per-page", "--practice-trials", "--agency-grids", "--plan-hidden"}
# Jobs that run over many units take --workers; seeded jobs take --seed.
WORKERS = {"generate", "validate", "stats", "export", "import", "score", "audit", "report", "profile", "power",
           "reflect", "reflect table", "meg episodes", "agency run"}
SEEDED = {"generate", "blind", "evaluate", "audit", "train", "profile", "power", "power simulate", "reflect", "reflect table",
          "meg cliffworld", "agency run", "agency probe", "agency train-policy"}
# Commands whose main input is a file or folder: it is a positional argument.
POSITIONAL = {"blind", "render", "validate", "export", "import", "stats", "analyze", "compare", "score", "evaluate", "audit",
              "train", "report", "experiment", "profile", "meg episodes", "agency report"}
# A help text that starts by listing alternatives ("a, b or c.") describes a choice that should be an enum.
# The metavar of an option that takes any value of a type (an enum's lists its choices instead).
GENERIC = re.compile(r"<(str|path|int|float|int range|float range|list\[\w+\])>")
LISTED_CHOICES = re.compile(r"^[a-z][\w-]*(, [a-z][\w-]*)* or [a-z][\w-]*\.?$")


def commands(root: _click.Command) -> list[tuple[str, _click.Command, _click.Context]]:
    """(path, command, context) of every command and group with parameters, depth first."""
    found = []

    def walk(cmd: _click.Command, path: list[str], parent: _click.Context | None) -> None:
        ctx = _click.Context(cmd, info_name=path[-1] if path else "bib", parent=parent)
        if path and any(p.name != "help" for p in cmd.params):
            found.append((" ".join(path), cmd, ctx))
        for name, sub in sorted(getattr(cmd, "commands", {}).items()):
            walk(sub, [*path, name], ctx)

    walk(root, [], None)
    return found


def violations(path: str, cmd: _click.Command, ctx: _click.Context, *, expect: bool = True) -> list[str]:
    """What in ``cmd``'s --help breaks docs/cli.md (``expect``: also check the WORKERS/SEEDED/POSITIONAL lists)."""
    bad: list[str] = []
    options = {}
    for p in cmd.params:
        record = p.get_help_record(ctx)
        if record is None or p.param_type_name == "argument":
            continue
        names, text = record
        flag = names.split()[0].split("/")[0].rstrip(",")
        flag = next((o for o in p.opts if o.startswith("--")), flag)
        options[flag] = (p, names, text)
    for flag, (p, names, text) in options.items():
        where = f"{path} {flag}"
        is_flag = "<" not in names
        if not text.strip():
            bad.append(f"{where}: no help text")
        if flag in INPUT_OPTIONS:
            bad.append(f"{where}: an input or output given as an option (inputs are positional, outputs go to --out)")
        if flag == "--out" and "folder" not in text.lower():
            bad.append(f"{where}: --out must be an output folder (its help says which files go inside)")
        if flag in CHOICE_OPTIONS and (is_flag or GENERIC.search(names)):
            bad.append(f"{where}: a choice that is not an enum (--help lists no choices)")
        if not is_flag and "<str>" in names and LISTED_CHOICES.match(text.strip()):
            bad.append(f"{where}: help lists choices but the option takes any string (make it an enum)")
        if flag in COUNT_OPTIONS and not is_flag and "x>=" not in text and "<=x" not in text:
            bad.append(f"{where}: a count without a range (min=) in --help")
        if flag == "--workers" and "x>=1" not in text:
            bad.append(f"{where}: --workers must be >= 1")
        if flag == "--seed" and "<int" not in names:
            bad.append(f"{where}: --seed must be an integer base seed")
        default = p.default
        if not is_flag and not p.required and default not in (None, "", []) and "[default:" not in text:
            bad.append(f"{where}: default {default!r} not shown in --help")
    if "--seeds" in options and "--seed" not in options:
        bad.append(f"{path}: --seeds (a count) without --seed (the first seed)")
    if expect:
        if path in WORKERS and "--workers" not in options:
            bad.append(f"{path}: a job over many units without --workers")
        if path in SEEDED and "--seed" not in options:
            bad.append(f"{path}: a seeded job without --seed")
        if path in POSITIONAL and not any(p.param_type_name == "argument" for p in cmd.params):
            bad.append(f"{path}: its input is not a positional argument")
    return bad


ALL = commands(command())


def test_the_walk_finds_every_command():
    paths = {p for p, _, _ in ALL}
    assert WORKERS | SEEDED | POSITIONAL <= paths
    assert {"generate", "score", "analyze", "compare", "meg cliffworld", "agency run", "power simulate"} <= paths


@pytest.mark.parametrize("path", [p for p, _, _ in ALL])
def test_command_follows_the_convention(path):
    (_, cmd, ctx), = [c for c in ALL if c[0] == path]
    assert violations(path, cmd, ctx) == []


class Scale(str, Enum):
    log = "log"
    raw = "raw"


def test_a_command_that_breaks_the_convention_is_caught():
    broken = typer.Typer()

    @broken.command()
    def job(
        episodes: Path = typer.Option(..., "--episodes", help="Episode set."),
        out: Path = typer.Option(Path("data/x.csv"), "--out", help="CSV file to write."),
        plots: Path = typer.Option(None, "--plots", help="Plots here."),
        scale: str = typer.Option("log", "--scale", help="log or raw."),
        agent: str = typer.Option("random", "--agent", help="random, constant or naive-learner.", show_default=False),
        workers: int = typer.Option(1, "--workers", help="Worker processes."),
        seeds: int = typer.Option(10, "--seeds", min=1, help="Seeds."),
        seed: str = typer.Option("0", "--seed", help="Seed."),
        n: int = typer.Option(5, "--n", show_default=False, help="Units."),
        quiet: bool = typer.Option(False, "--quiet", help=""),
    ) -> None:
        """A command that breaks every rule."""

    @broken.command()
    def good(
        data: Path = typer.Argument(..., help="Input."),
        scale: Scale = typer.Option(Scale.log, "--scale", help="Scale."),
        out: Path = typer.Option(..., "--out", help="Output folder: x.json."),
        workers: int = typer.Option(1, "--workers", min=1, help="Worker processes."),
        seed: int = typer.Option(0, "--seed", help="Base seed."),
    ) -> None:
        """A command that follows the rules."""

    @broken.command()
    def plain(data: Path = typer.Argument(..., help="Input.")) -> None:
        """Input only."""

    found = {p: (c, x) for p, c, x in commands(typer.main.get_command(broken))}
    bad = violations("job", *found["job"], expect=False)
    for needle in ("job --episodes: an input or output given as an option",
                   "job --plots: an input or output given as an option",
                   "job --out: --out must be an output folder",
                   "job --scale: a choice that is not an enum",
                   "job --agent: a choice that is not an enum",
                   "job --agent: help lists choices but the option takes any string",
                   "job --workers: a count without a range",
                   "job --workers: --workers must be >= 1",
                   "job --seed: --seed must be an integer base seed",
                   "job --n: default 5 not shown in --help",
                   "job --quiet: no help text"):
        assert any(b.startswith(needle) for b in bad), (needle, bad)
    assert violations("good", *found["good"], expect=False) == []
    # the expectation lists: a listed job without a positional input, --workers or --seed is caught
    assert "score: its input is not a positional argument" in violations("score", *found["job"])
    assert violations("reflect", *found["plain"]) == ["reflect: a job over many units without --workers",
                                                      "reflect: a seeded job without --seed"]


def test_seeds_without_seed_is_caught():
    t = typer.Typer()

    @t.command()
    def one(seeds: int = typer.Option(3, "--seeds", min=1, help="Seeds.")) -> None:
        """Count only."""

    @t.command()
    def two() -> None:
        """Nothing."""

    (path, cmd, ctx), = commands(typer.main.get_command(t))
    assert violations(path, cmd, ctx, expect=False) == ["one: --seeds (a count) without --seed (the first seed)"]


def test_version_and_top_level_help():
    proc = subprocess.run([sys.executable, "-m", "bib.cli", "--version"], capture_output=True, text=True, check=True)
    assert proc.stdout == f"bib {__version__}\n"
    text = subprocess.run([sys.executable, "-m", "bib.cli", "--help"], capture_output=True, text=True,
                          check=True).stdout
    assert "..." not in text.split("Commands:")[1]  # descriptions wrap, never cut
    for path, _, _ in ALL:
        if " " not in path:
            assert re.search(rf"^  {re.escape(path)}\s", text, re.M), path
