"""Every `bib ...` command written in the repository's documentation is one the CLI accepts.

Where commands are read:

* fenced ``bash``/``sh``/``shell``/``console``/``zsh`` and unlabelled code blocks of every
  markdown file of the repository (README.md, docs/, baselines/, data/, ...): each line whose first
  word is ``bib`` (or ``path/to/bib``), also after a ``$ `` prompt (in ``console`` blocks only the
  prompt lines are commands); trailing-backslash continuations are joined, ``#`` comments dropped,
  ``&&``/``||``/``;``/``|`` chains split, ``$(bib ...)`` substitutions checked as commands of their
  own, and ``for VAR in A B C; do ... done`` loops expanded: ``$VAR``/``${VAR}`` take each value;
* inline code spans that start with ``bib `` in markdown prose and in the Python sources of
  ``bib/``, ``benchmarks/`` and ``docs/`` (error hints and docstrings);
* ``# Run:``/``# Build:``/``# Train:`` comment lines of the TOML specs.

Each command is parsed by the real click tree of :func:`bib.cli.command` (sub-commands resolved with
``resolve_command``, each level through ``make_context`` under its parent context), so unknown
sub-commands and options, missing or extra arguments, and values the parameter types refuse
(ints, ranges, choices) are reported with the file and line. No command callback runs. The click
objects are those of the typer that builds ``bib.cli`` (its vendored ``typer._click``); a group's
pending sub-command is read from ``Context._protected_args`` (click >= 8.2 and typer's copy) or
``protected_args`` (older click). Also reported: a line of options following a command without the
trailing backslash that would join them, and an ``--out`` value named like a file (docs/cli.md:
``--out`` is always a folder).

Rules for what documentation writes that is not a literal value:

* ``[...]`` marks optional parts of a synopsis: the brackets are dropped and the parts checked.
* ``a|b|c`` inside one word lists alternatives: each alternative is checked (one command per
  alternative; a ``|`` between spaces is a pipe).
* Placeholders: a word holding an ALL-CAPS name (``SPEC``, ``DIR``, ``SET/``, ``K=V``,
  ``tcp://HOST:PORT``, ``analysis/FILE.toml``), ``<file>``, a Python format field ``{name}``, a shell
  variable no loop binds (``$m``, ``${task}``, ``$(...)``), ``...`` alone, and ``X...``
  (one or more X). A placeholder is parsed as written; only where the parameter it lands on
  refuses that text (an int, a range, a choice) is it replaced by the first representative value
  the parameter accepts (one of its choices, 0.5, 1, 2, 0). Real values are never replaced.
* Fragments: inline spans, and commands holding a lone ``...``, may leave required parts out
  (`bib evaluate --out`): missing arguments/options are not reported there and a trailing option
  without its value gets a placeholder; everything they do write is checked as above. Fenced
  commands must be complete.
* Paths: nothing is created or read. Where the parser checks that a path exists and the
  documented one does not (the documented inputs are the user's files or outputs of an earlier
  command), the parse goes on with a path that does (``pyproject.toml`` or the repository folder,
  whichever the parameter takes), so the rest of the command is still checked. The CLI's own
  checks of inputs run in the command callbacks, which never run here.
* Groups: a group with no sub-command is a "Missing command." error unless it runs alone
  (``invoke_without_command``, e.g. ``bib power``) or the span is a fragment (`bib agency`).
* ``--help``/``--version`` end the parse there (accepted, nothing printed).
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shlex
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path

import pytest
import typer
from typer import _click

from bib.cli import command

ROOT = Path(__file__).resolve().parents[1]
SKIP_DIRS = {".git", ".venv", "venv", "node_modules", "site", "out", "build", "dist", "__pycache__"}
SHELL_LANGS = {"", "bash", "sh", "shell", "console", "zsh", "shell-session"}
FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([\w+-]*)")
INLINE = re.compile(r"(?<!`)(`+)(?!`)((?:\$ )?bib [^`]*?)(?<!`)\1(?!`)", re.S)
TOML_COMMENT = re.compile(r"^#\s*(?:Run|Build|Train):\s+(bib .*)$")
CAPS = re.compile(r"(?<![A-Za-z])[A-Z][A-Z0-9_]*(?![a-z])")
SEPARATORS = {"&&", "||", ";", "|", "&"}
SUBSTITUTION = re.compile(r"\$\(([^()]*)\)")
EXITS = tuple({typer.Exit, getattr(_click.exceptions, "Exit", typer.Exit)})
SENTINEL = "\ue000{}\ue000"
DANGLING = "<options continuing no command>"
FILE_NAME = re.compile(r"\.(csv|tsv|json|jsonl|md|html|png|svg|pdf|mp4|webm|txt|pt|parquet|toml|gz|zip)$")
REPRESENTATIVES = ("0.5", "1", "2", "0")
PRESENT = (str(ROOT / "pyproject.toml"), str(ROOT))  # paths that exist, a file and a folder


@dataclass
class DocCommand:
    """One documented command: where it is written, its words after ``bib``, which are placeholders."""

    where: str
    text: str
    words: list[str]
    placeholders: set[int] = field(default_factory=set)
    fragment: bool = False
    error: str | None = None

    def __str__(self) -> str:
        expanded = " ".join(["bib", *self.words])
        return f"{self.where}: {self.text}" + ("" if expanded == self.text else f"  (checked as: {expanded})")


# ---------------------------------------------------------------------------------------------
# Reading commands out of shell text


def _is_bib(word: str) -> bool:
    return word == "bib" or word.endswith("/bib")


def logical_lines(block: str, *, console: bool = False) -> list[tuple[int, str]]:
    """``(line offset, text)`` of each shell line: continuations joined, prompts stripped; in a
    console block only prompt lines (the rest is output)."""
    out: list[tuple[int, str]] = []
    pending: tuple[int, str] | None = None
    for i, raw in enumerate(block.splitlines()):
        line = raw.rstrip()
        if pending is None:
            stripped = line.lstrip()
            if stripped.startswith("$ "):
                line = stripped[2:]
            elif console:
                continue
            pending = (i, "")
        if line.endswith("\\"):
            pending = (pending[0], pending[1] + line[:-1] + " ")
            continue
        out.append((pending[0], pending[1] + line))
        pending = None
    if pending is not None:
        out.append(pending)
    return out


def _uncomment(line: str) -> str:
    """The line without its comment: from an unquoted ``#`` that starts a word (as the shell reads it)."""
    quote = ""
    for i, ch in enumerate(line):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i]
    return line


def _words(line: str) -> list[str]:
    """Shell words of a line (quotes removed, ``#`` comments dropped), separators as words of their own."""
    lexer = shlex.shlex(_uncomment(line), posix=True)
    lexer.whitespace_split = True
    lexer.commenters = ""
    try:
        words = list(lexer)
    except ValueError:  # an unbalanced quote: keep the line's plain words
        words = line.split("#", 1)[0].split()
    out: list[str] = []
    for w in words:
        if w not in SEPARATORS and w.endswith(";"):
            out += [w[:-1], ";"] if w[:-1] else [";"]
        else:
            out.append(w)
    return out


def _bind(word: str, env: dict[str, str]) -> str:
    for name, value in env.items():
        word = re.sub(rf"\$(?:\{{{re.escape(name)}\}}|{re.escape(name)}(?![A-Za-z0-9_]))", lambda _, v=value: v, word)
    return word


def _split_commands(words: list[str]) -> list[list[str]]:
    """The simple commands of a line's words: split at ``&&``, ``||``, ``;``, ``|`` and ``&``."""
    commands: list[list[str]] = [[]]
    for w in words:
        if w in SEPARATORS:
            commands.append([])
        else:
            commands[-1].append(w)
    return [c for c in commands if c]


def _substitutions(line: str) -> tuple[str, list[str]]:
    """The line with each ``$(...)`` replaced by the placeholder word ``$(...)``, and the texts inside."""
    inner = SUBSTITUTION.findall(line)
    return SUBSTITUTION.sub(" $(...) ", line), inner


def shell_commands(block: str, *, console: bool = False) -> list[tuple[int, list[str]]]:
    """``(line offset, words)`` of every ``bib`` command in shell text, ``for`` loops expanded."""
    found: list[tuple[int, list[str]]] = []
    loops: list[tuple[str, list[str]]] = []  # (variable, values), innermost last

    def envs() -> list[dict[str, str]]:
        combos: list[dict[str, str]] = [{}]
        for var, values in loops:
            combos = [{**c, var: v} for c in combos for v in values]
        return combos

    previous_bib = False
    for offset, line in logical_lines(block, console=console):
        line, inner = _substitutions(line)
        words = _words(line)
        if previous_bib and words and words[0].lstrip("[").startswith("-"):
            found.append((offset, [DANGLING, *words]))
        previous_bib = False
        for cmd in [*_split_commands(words), *(c for text in inner for c in _split_commands(_words(text)))]:
            if cmd[0] == "for" and len(cmd) >= 3 and cmd[2] == "in":
                loops.append((cmd[1], cmd[3:]))
                continue
            if cmd[0] == "done":
                if loops:
                    loops.pop()
                cmd = cmd[1:]
            if cmd and cmd[0] in {"do", "then", "else"}:
                cmd = cmd[1:]
            if cmd and _is_bib(cmd[0]):
                previous_bib = True
                for env in envs():
                    found.append((offset, [_bind(w, env) for w in cmd]))
    return found


# ---------------------------------------------------------------------------------------------
# Words -> documented commands (brackets, alternatives, placeholders)


def _placeholder(word: str) -> bool:
    value = word.split("=", 1)[1] if word.startswith("-") and "=" in word else word
    if word.startswith("-") and "=" not in word:
        return False
    return (value == "..." or value.endswith("...") or "$" in value or bool(re.search(r"\{\w[^{}]*\}|<[^<>]+>", value))
            or bool(CAPS.search(value)))


def documented(where: str, words: list[str], *, fragment: bool = False) -> list[DocCommand]:
    """The commands ``bib words...`` stands for: one per alternative of ``a|b`` words."""
    text = " ".join(words)
    words = [w.strip("[]") for w in words[1:]]
    words = [w for w in words if w]
    alternatives = [w.split("|") if "|" in w and not w.startswith("-") else [w] for w in words]
    variants = max((len(a) for a in alternatives), default=1)
    out = []
    for k in range(variants):
        chosen = [a[k] if k < len(a) else a[0] for a in alternatives]
        cmd = DocCommand(where, text, chosen, fragment=fragment or "..." in chosen)
        cmd.placeholders = {i for i, w in enumerate(chosen) if _placeholder(w)}
        out.append(cmd)
    return out


# ---------------------------------------------------------------------------------------------
# Where documentation lives


def _files(suffix: str, roots: list[Path]) -> list[Path]:
    found = []
    for top in roots:
        if top.is_file():
            found.append(top)
            continue
        for folder, dirs, files in os.walk(top):
            dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith(".") and not d.endswith(".egg-info"))
            found += [Path(folder) / f for f in sorted(files) if f.endswith(suffix)]
    return sorted(set(found))


def markdown_commands(path: Path, text: str) -> list[DocCommand]:
    """The commands of one markdown file: fenced shell blocks (complete) and inline spans (fragments)."""
    rel = path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else path.name
    lines = text.splitlines()
    out: list[DocCommand] = []
    prose: list[str] = []
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            prose.append(lines[i])
            i += 1
            continue
        indent, fence, lang = m.groups()
        start = i + 1
        i += 1
        while i < len(lines) and not re.match(rf"^\s*{fence[0]}{{{len(fence)},}}\s*$", lines[i]):
            i += 1
        body = "\n".join(row[len(indent):] if row.startswith(indent) else row.lstrip() for row in lines[start:i])
        prose += [""] * (i - start + 2)
        i += 1
        if lang.lower() not in SHELL_LANGS:
            continue
        for offset, words in shell_commands(body, console=lang.lower() == "console"):
            where = f"{rel}:{start + offset + 1}"
            if words[0] == DANGLING:
                out.append(DocCommand(where, " ".join(words[1:]), words[1:], error="a line of options that continues "
                                      "no command (the line before lacks its trailing backslash)"))
            else:
                out += documented(where, words)
    return out + inline_commands(rel, "\n".join(prose), across_lines=True)


def inline_commands(rel: str, text: str, across_lines: bool) -> list[DocCommand]:
    """Inline spans ```bib ...``` of ``text`` (markdown prose, a Python source): fragments. A span broken
    over lines is read as one line when ``across_lines`` (markdown wraps prose), else skipped."""
    out = []
    for m in INLINE.finditer(text):
        span = m.group(2)
        if "\n" in span:
            if not across_lines:
                continue
            span = re.sub(r"\s*\n\s*", " ", span)
        line = text[: m.start()].count("\n") + 1
        for cmd in _split_commands(_words(span.removeprefix("$ "))):
            if _is_bib(cmd[0]):
                out += documented(f"{rel}:{line}", cmd, fragment=True)
    return out


def python_commands(path: Path, text: str) -> list[DocCommand]:
    """Inline spans ```bib ...``` in a Python source (docstrings, error hints): fragments."""
    return inline_commands(path.relative_to(ROOT).as_posix(), text, across_lines=False)


def toml_commands(path: Path, text: str) -> list[DocCommand]:
    """``# Run: bib ...`` lines of a spec: complete commands."""
    rel = path.relative_to(ROOT).as_posix()
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        m = TOML_COMMENT.match(line)
        if m:
            for words in _split_commands(_words(m.group(1))):
                if _is_bib(words[0]):
                    out += documented(f"{rel}:{n}", words)
    return out


def all_documented() -> list[DocCommand]:
    """Every documented command of the repository, in file and line order."""
    out: list[DocCommand] = []
    for path in _files(".md", [ROOT]):
        if path.is_relative_to(ROOT / "tests"):  # fixtures, not documentation
            continue
        out += markdown_commands(path, path.read_text(encoding="utf-8"))
    for path in _files(".py", [ROOT / "bib", ROOT / "benchmarks", ROOT / "docs"]):
        out += python_commands(path, path.read_text(encoding="utf-8"))
    for path in _files(".toml", [ROOT / "stimuli", ROOT / "analysis", ROOT / "baselines", ROOT / "bib" / "resources"]):
        out += toml_commands(path, path.read_text(encoding="utf-8"))
    return out


# ---------------------------------------------------------------------------------------------
# Parsing with the real click tree, without running anything


def _choices(param: _click.Parameter) -> list[str]:
    desc = getattr(param, "type_descriptor", None)
    choices = desc.choices if desc is not None and desc.is_choice else getattr(getattr(param, "type", None), "choices", None)
    return [str(c.value) if isinstance(c, Enum) else str(c) for c in choices or ()]


def _accepts(param: _click.Parameter, ctx: _click.Context, value: str) -> bool:
    many = getattr(param, "multiple", False) or param.nargs != 1
    try:
        param.process_value(ctx, (value,) if many else value)
    except Exception:  # noqa: BLE001 - any refusal means "not this value"
        return False
    return True


def _representative(param: _click.Parameter, ctx: _click.Context, written: str) -> str:
    """The written placeholder if the parameter takes it, else the first value it accepts."""
    for value in (written, *_choices(param), *REPRESENTATIVES):
        if _accepts(param, ctx, value):
            return value
    return written


def _flatten(value: object) -> list[object]:
    if isinstance(value, (list, tuple)):
        return [x for v in value for x in _flatten(v)]
    return [value]


def _substitute(cmd: _click.Command, name: str, parent: _click.Context | None, args: list[str],
                written: dict[str, str], existing: set[str]) -> list[str]:
    """``args`` with the placeholders this command's own parameters take replaced by values they accept,
    and the values of the parameters named in ``existing`` by a path that exists."""
    ctx = cmd.context_class(cmd, info_name=name, parent=parent, **cmd.context_settings)
    opts, _, _ = cmd.make_parser(ctx).parse_args(args=list(args))
    bound: dict[str, str] = {}
    for param in cmd.get_params(ctx):
        for value in _flatten(opts.get(param.name)):
            if not isinstance(value, str):
                continue
            if param.name in existing:
                bound[value] = next((p for p in PRESENT if _accepts(param, ctx, p)), value)
            elif value in written:
                bound[value] = _representative(param, ctx, written[value])
    return [bound.get(a, a) for a in args]


def _message(exc: _click.UsageError, path: list[str], written: dict[str, str]) -> str:
    text = exc.format_message()
    for sentinel, word in written.items():
        text = text.replace(sentinel, word)
    return f"{' '.join(path)}: {text}"


def _parse(cmd: _click.Command, name: str, parent: _click.Context | None, args: list[str],
           written: dict[str, str], fragment: bool, path: list[str]) -> str | None:
    """None if ``cmd`` (and the sub-commands the args name) accept ``args``, else the parser's message."""
    existing: set[str] = set()
    while True:
        try:
            concrete = _substitute(cmd, name, parent, args, written, existing)
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                ctx = cmd.make_context(name, concrete, parent=parent)
            break
        except EXITS:  # --help, --version
            return None
        except _click.exceptions.MissingParameter as exc:
            return None if fragment else _message(exc, path, written)
        except _click.exceptions.NoArgsIsHelpError:  # a group named alone prints its help and exits 2
            return None if fragment else f"{' '.join(path)}: Missing command."
        except _click.exceptions.UsageError as exc:
            message = exc.format_message()
            if fragment and args and args[-1].startswith("-") and "requires an argument" in message:
                sentinel = SENTINEL.format(len(written))
                written[sentinel] = "VALUE"
                args = [*args, sentinel]
                continue
            param = getattr(exc, "param", None)
            if "does not exist" in message and param is not None and param.name not in existing:
                existing.add(param.name)  # a documented path need not exist here: parse on with one that does
                continue
            return _message(exc, path, written)
    commands = getattr(cmd, "commands", None)
    if commands is None:
        return None
    protected = getattr(ctx, "_protected_args", None)
    if protected is None:  # click before 8.2 keeps them public
        protected = getattr(ctx, "protected_args", [])
    rest = [*protected, *ctx.args]
    if not rest:
        if fragment or getattr(cmd, "invoke_without_command", False):
            return None
        return f"{' '.join(path)}: Missing command."
    if rest[0] in written:  # a placeholder sub-command: the rest must suit every sub-command
        problems = [_parse(sub, sub_name, ctx, rest[1:], written, fragment, [*path, sub_name])
                    for sub_name, sub in sorted(commands.items())]
        return next((p for p in problems if p), None)
    try:
        sub_name, sub, rest = cmd.resolve_command(ctx, rest)
    except _click.exceptions.UsageError as exc:
        return _message(exc, path, written)
    return _parse(sub, sub_name, ctx, rest, written, fragment, [*path, sub_name])


def problem(doc: DocCommand, root: _click.Command | None = None) -> str | None:
    """None if the CLI accepts the documented command, else what the parser says about it (or the
    extraction: an options line continuing nothing; or docs/cli.md: an ``--out`` named like a file)."""
    if doc.error:
        return doc.error
    written = {SENTINEL.format(i): doc.words[i].removesuffix("...") or "..." for i in sorted(doc.placeholders)}
    args = [SENTINEL.format(i) if i in doc.placeholders else w for i, w in enumerate(doc.words)]
    message = _parse(root or ROOT_COMMAND, "bib", None, args, written, doc.fragment, ["bib"])
    if message is not None:
        return message
    for i, word in enumerate(doc.words):
        value = word[6:] if word.startswith("--out=") else doc.words[i + 1] if word == "--out" and i + 1 < len(doc.words) else ""
        if FILE_NAME.search(value):
            return f"--out {value}: --out is an output folder (docs/cli.md), not a file"
    return None


ROOT_COMMAND = command()
DOCUMENTED = all_documented()


# ---------------------------------------------------------------------------------------------
# The tests


@pytest.mark.parametrize("doc", DOCUMENTED, ids=lambda d: f"{d.where} bib {' '.join(d.words)}")
def test_documented_command_parses(doc: DocCommand) -> None:
    message = problem(doc)
    assert message is None, f"{doc}\n  -> {message}"


def test_the_documentation_is_read() -> None:
    """The extraction finds the commands of every kind of source (so an empty list cannot pass)."""
    where = {d.where.split(":")[0] for d in DOCUMENTED}
    assert {"README.md", "docs/cli.md", "baselines/README.md", "data/README.md",
            "stimuli/bib-eval.toml"} <= where
    full = [d for d in DOCUMENTED if not d.fragment]
    assert len(full) >= 100, len(full)
    trains = {" ".join(d.words[:2]) for d in DOCUMENTED if d.where.startswith("baselines/README.md") and d.words[0] == "train"}
    assert {"train bc-mlp", "train bc-rnn", "train video-rnn"} <= trains  # the for loop, expanded


WRONG = [
    ("bib generate --spec stimuli/infant-pilot.toml --out out/pilot", "No such option: --spec"),
    ("bib power --task preference --n 16,24,32", "Invalid value for '--n'"),
    ("bib render out/pilot/episodes/x.json --out check.mp4 --contact-sheet check.png", "unexpected extra argument(s) (check.png)"),
    ("bib genrate stimuli/infant-pilot.toml --out out/pilot", "No such command 'genrate'"),
    ("bib agency fly --out out/x", "No such command 'fly'"),
    ("bib score inverse-planner", "Missing argument"),
    ("bib evaluate SET RESULTS --readout median", "median"),
    ("bib generate --task preference --n -3 --out out/x", "greater than or equal to 0"),
    ("bib train --observer bc-mlp out/bg --out out/ckpt", "No such option: --observer"),
    ("bib agency", "Missing command"),
    ("bib agency run --grids N --agent wizard --suite keys --out out/x", "wizard"),
    ("bib power simulate --out data/looking_times/example.csv", "--out is an output folder"),
]


@pytest.mark.parametrize(("line", "expected"), WRONG)
def test_a_wrong_command_is_reported(line: str, expected: str) -> None:
    text = f"# Page\n\n```bash\n{line}   # a comment\n```\n"
    (doc,) = markdown_commands(ROOT / "docs" / "page.md", text)
    assert doc.where == "docs/page.md:4"
    message = problem(doc)
    assert message is not None and expected.lower() in message.lower(), message


def test_wrong_values_in_fragments_are_reported_but_missing_parts_are_not() -> None:
    text = "Use `bib evaluate --out`, `bib agency` or `bib score --checkpoint CKPT`; not `bib power --n 1,2` or `bib train --observer x`."
    docs = markdown_commands(ROOT / "README.md", text)
    assert [problem(d) is None for d in docs] == [True, True, True, False, False]


def test_shell_forms() -> None:
    block = "\n".join([
        "$ bib validate out/a \\",
        "    --workers 2      # a comment",
        "for m in bc-mlp video-rnn; do",
        "  bib train $m out/bg --out out/ckpt/${m} --config baselines/$m.toml",
        "done",
        "bib generate --task preference --out out/p && bib stats out/p | head  # comment 'quoted",
        "bib generate --scheduler tcp://host:8786#x --out 'out/a #b'",
        'echo "$(bib --version)" $(bib stats out/p --json)',
        "python tool.py bib not-a-command",
    ])
    found = [(off, " ".join(w)) for off, w in shell_commands(block)]
    assert found == [
        (0, "bib validate out/a --workers 2"),
        (3, "bib train bc-mlp out/bg --out out/ckpt/bc-mlp --config baselines/bc-mlp.toml"),
        (3, "bib train video-rnn out/bg --out out/ckpt/video-rnn --config baselines/video-rnn.toml"),
        (5, "bib generate --task preference --out out/p"),
        (5, "bib stats out/p"),
        (6, "bib generate --scheduler tcp://host:8786#x --out out/a #b"),
        (7, "bib --version"),
        (7, "bib stats out/p --json"),
    ]
    assert shell_commands("$ bib stats out/p\nbib 1.0 (output)\n", console=True) == [(0, ["bib", "stats", "out/p"])]
    # an options line after a command without the trailing backslash is reported, not dropped
    (cmd, dangling) = markdown_commands(ROOT / "x.md", "```bash\nbib stats out/p\n    [--json] --workers 2\n```\n")
    assert problem(cmd) is None and dangling.where == "x.md:3" and "trailing backslash" in problem(dangling)


def test_synopsis_forms() -> None:
    (a, b) = documented("x:1", shlex.split("bib evaluate SET RESULTS [--readout max|mean] [--out DIR] [--json]"))
    assert a.words[3:5] == ["--readout", "max"] and b.words[3:5] == ["--readout", "mean"]
    assert a.placeholders == {1, 2, 6}
    assert problem(a) is None and problem(b) is None
    # a placeholder is replaced only where its parameter refuses the text: an int, a choice
    (c,) = documented("x:2", shlex.split("bib agency run --agent AGENT --suite keys --grids N --out DIR"))
    assert problem(c) is None
    # a real value is never replaced
    (d,) = documented("x:3", shlex.split("bib agency run --agent optimal --suite keys --grids many --out out/x"))
    assert "--grids" in problem(d)


def test_a_path_the_parser_checks_may_be_missing() -> None:
    app = typer.Typer()

    @app.command()
    def read(src: Path = typer.Argument(..., exists=True), n: int = typer.Option(1, "--n")) -> None:
        raise AssertionError("the callback ran")

    @app.command()
    def other() -> None:
        raise AssertionError("the callback ran")

    root = typer.main.get_command(app)
    (ok,) = documented("x:1", ["bib", "read", "does/not/exist.csv", "--n", "3"])
    (bad,) = documented("x:2", ["bib", "read", "does/not/exist.csv", "--n", "three"])
    assert problem(ok, root) is None
    assert "--n" in problem(bad, root)
