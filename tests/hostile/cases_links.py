"""Planted links (issue 39): a lock file beside --out that is a symbolic link, a hard link or a FIFO;
an --out that is itself a link; links inside a folder a command writes or cleans in place (a
`bib generate` rerun, `bib agency report`). Each is refused in one line; the file or folder behind
the link is never written, truncated or cleaned (the harness snapshots the whole temporary tree)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from hostile import Case
from hostile.cases_writers import WRITERS


def _victim(out: Path) -> Path:
    victim = out.parent / "victim.txt"
    victim.write_text("a file the lock must not overwrite\n")
    return victim


def _lock_symlink(out: Path) -> None:
    os.symlink(_victim(out), out.parent / f".{out.name}.lock")


def _lock_hardlink(out: Path) -> None:
    os.link(_victim(out), out.parent / f".{out.name}.lock")


def _lock_fifo(out: Path) -> None:
    os.mkfifo(out.parent / f".{out.name}.lock")


def _out_is_a_link(out: Path) -> None:
    (out.parent / "target").mkdir()
    (out.parent / "target" / "keep.txt").write_text("x\n")
    os.symlink(out.parent / "target", out)


GENERATE = ["generate", "--task", "single-object", "--n", "1"]


def _generated_with_link(sub: str):
    """``{out}`` is a finished `bib generate` set whose ``sub`` folder is a link to a folder outside it,
    holding a hidden ``.*.tmp*`` file that a rerun's clean-up would delete (and episodes it would overwrite)."""
    def setup(out: Path) -> None:
        subprocess.run([sys.executable, "-c", "import sys; from bib.cli import main; main(sys.argv[1:])",
                        *GENERATE, "--out", str(out)], check=True, capture_output=True,
                       env={**os.environ, "BIB_NO_PROGRESS": "1"})
        elsewhere = out.parent / "elsewhere"
        elsewhere.mkdir()
        (elsewhere / ".left.tmp-1").write_text("not bib's\n")
        target = out / sub
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.is_dir():
            for f in target.iterdir():
                f.rename(elsewhere / f.name)
            target.rmdir()
        os.symlink(elsewhere, target)
    return setup


def _run_with_tables_link(inp: Path) -> None:
    (inp / "run").mkdir()
    (inp / "elsewhere").mkdir()
    (inp / "elsewhere" / "keep.csv").write_text("a,b\n1,2\n")
    os.symlink(inp / "elsewhere", inp / "run" / "tables")


def _cases() -> list[Case]:
    out = []
    for name, argv in WRITERS.items():
        out += [
            Case(f"{name}-lock-is-a-symlink", [*argv, "--out", "{out}"], setup=_lock_symlink,
                 culprit="is a symbolic link; bib does not follow it"),
            Case(f"{name}-lock-is-a-hardlink", [*argv, "--out", "{out}"], setup=_lock_hardlink,
                 culprit="has another hard link; bib does not write through it"),
            Case(f"{name}-lock-is-a-fifo", [*argv, "--out", "{out}"], setup=_lock_fifo,
                 culprit="is not a regular file"),
            Case(f"{name}-out-is-a-link", [*argv, "--out", "{out}"], setup=_out_is_a_link,
                 culprit="{out}: --out is a symbolic link (to "),
        ]
    for sub in ("episodes", "videos/trials"):
        out.append(Case(f"generate-rerun-{sub.replace('/', '-')}-is-a-link", [*GENERATE, "--out", "{out}"],
                        setup=_generated_with_link(sub), culprit=f"{{out}}/{sub}: is a symbolic link inside --out"))
        out.append(Case(f"generate-force-{sub.replace('/', '-')}-is-a-link", [*GENERATE, "--out", "{out}", "--force"],
                        setup=_generated_with_link(sub), culprit=f"{{out}}/{sub}: is a symbolic link inside --out"))
    out.append(Case("agency-report-tables-is-a-link", ["agency", "report", "{in}/run"], build=_run_with_tables_link,
                    culprit="{in}/run/tables: is a symbolic link inside the run folder"))
    return out


CASES = _cases()


# --- reads: a folder's files resolve inside it; special files are refused without waiting -----------

def _sessions_with_link(inp: Path) -> None:
    from hostile.cases_formulas import LOOKING_TIMES

    (inp / "sessions").mkdir()
    (inp / "sessions" / "a.csv").write_text(LOOKING_TIMES)
    (inp / "outside.csv").write_text(LOOKING_TIMES)
    os.symlink(inp / "outside.csv", inp / "sessions" / "b.csv")


def _analysis_with_plot_link(plots: bool):
    def build(inp: Path) -> None:
        from hostile.cases_formulas import LOOKING_TIMES

        (inp / "lt.csv").write_text(LOOKING_TIMES)
        subprocess.run([sys.executable, "-c", "import sys; from bib.cli import main; main(sys.argv[1:])",
                        "analyze", str(inp / "lt.csv"), "--out", str(inp / "an")], check=True, capture_output=True,
                       env={**os.environ, "BIB_NO_PROGRESS": "1"})
        (inp / "secret.svg").write_text("<svg xmlns='http://www.w3.org/2000/svg'><text>secret</text></svg>\n")
        if plots:
            (inp / "elsewhere").mkdir()
            os.symlink(inp / "secret.svg", inp / "elsewhere" / "x.svg")
            os.symlink(inp / "elsewhere", inp / "an" / "plots")
        else:
            os.symlink(inp / "secret.svg", inp / "an" / "forest.svg")
    return build


def _special(name: str, kind: str):
    def build(inp: Path) -> None:
        if kind == "fifo":
            os.mkfifo(inp / name)
        else:
            os.symlink("/dev/zero", inp / name)
    return build


READS = [
    Case("analyze-session-links-out", ["analyze", "{in}/sessions"], build=_sessions_with_link,
         culprit="{in}/sessions/b.csv resolves to"),
    Case("report-analysis-svg-links-out", ["report", "{in}/an", "--out", "{out}"],
         build=_analysis_with_plot_link(False), culprit="{in}/an/forest.svg resolves to"),
    Case("report-analysis-plots-folder-links-out", ["report", "{in}/an", "--out", "{out}"],
         build=_analysis_with_plot_link(True), culprit="{in}/an/plots/x.svg resolves to"),
    *[Case(f"report-{name.replace('.', '-')}-{kind}", ["report", f"{{in}}/{name}", "--out", "{out}"],
           build=_special(name, kind), culprit="bib reads regular files only")
      for name in ("x.json", "x.csv") for kind in ("fifo", "dev-zero")],
]

CASES += READS

LONG = "d" * 246  # with ".tmp-PID" its temporary sibling passes the 255-byte name limit: was a traceback
CASES += [Case(f"{name}-out-name-246-bytes", [*argv, "--out", "{in}/" + LONG], culprit="the folder name is 246 bytes long")
          for name, argv in WRITERS.items()]
