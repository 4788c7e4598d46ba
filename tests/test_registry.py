"""One registry mechanism for every extension point (issue 18 item 4): :class:`bib.registry.Registry`.

The generic rules (duplicates refused, unknown names a one-line BibInputError with the known names,
``package.module:attr`` user code, registration order, lazy entries), every extension point's
registry listing exactly what it listed before the move (the old explicit lists are spelled out
here on purpose), and the CLI's choices read from the registries.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
import typer

from bib.errors import BibInputError
from bib.registry import Registry, UnknownName


def _toy() -> Registry[int]:
    reg: Registry[int] = Registry("widget")
    reg.register("one", 1)

    @reg.register("two")
    def two() -> int:  # the decorator form returns the function itself
        return 2

    reg.register("three", 3)
    return reg


def test_registers_by_call_and_decorator_in_registration_order():
    reg = _toy()
    assert list(reg) == ["one", "two", "three"] == list(reg.names())
    assert reg["one"] == 1 and reg["two"]() == 2 and len(reg) == 3
    assert "two" in reg and "four" not in reg and reg.get("four") is None and reg.get("four", 0) == 0
    assert dict(reg.items())["three"] == 3


def test_duplicate_names_are_refused():
    reg = _toy()
    with pytest.raises(ValueError, match=r"^widget 'one' is registered twice$"):
        reg.register("one", 1)  # even the same entry
    with pytest.raises(ValueError, match="registered twice"):
        reg.register("two")(lambda: 3)
    assert reg["one"] == 1


def test_unknown_name_is_one_line_bib_input_error_listing_the_known_names():
    reg = _toy()
    with pytest.raises(BibInputError) as info:
        reg["four"]
    assert str(info.value) == "unknown widget 'four'; known: one, two, three"
    assert isinstance(info.value, KeyError) and isinstance(info.value, UnknownName)
    with pytest.raises(BibInputError, match=r"^unknown widget 'x'; known: one, two, three$"):
        reg.lookup("x")


def test_the_cli_exits_2_on_an_unknown_name(tmp_path, capsys):
    from bib.cli import main

    with pytest.raises(SystemExit) as info:
        main(["generate", "--task", "no-such-task", "--n", "1", "--out", str(tmp_path / "o")])
    from bib.tasks import REGISTRY

    known = ", ".join(REGISTRY.names())
    assert info.value.code == 2
    assert capsys.readouterr().err == f"bib: error: unknown task id 'no-such-task'; known: {known}\n"
    proc = subprocess.run([sys.executable, "-m", "bib.cli", "reflect", "--agent", "nope"], capture_output=True,
                          text=True, cwd=tmp_path)
    assert proc.returncode == 2  # a choice: click refuses it and lists the registry's names
    for name in ("random", "constant", "naive-learner", "a2c", "dqn", "ppo", "recurrent-dqn"):
        assert name in proc.stderr


def test_module_attr_fallback_where_user_code_is_accepted(tmp_path, monkeypatch):
    (tmp_path / "my_widgets.py").write_text("BIG = 40\nclass Holder:\n    value = 2\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    reg: Registry[int] = Registry("widget", user=lambda target, obj: obj + 2)
    reg.register("one", 1)
    assert reg["my_widgets:BIG"] == 42 and reg["my_widgets:Holder.value"] == 4
    assert "my_widgets:BIG" not in reg  # not registered by the lookup
    with pytest.raises(BibInputError, match=r"^widget 'my_widgets:SMALL': module 'my_widgets' has no attribute 'SMALL'$"):
        reg["my_widgets:SMALL"]
    with pytest.raises(BibInputError, match=r"^widget 'no_such_module_xyz:A': cannot import 'no_such_module_xyz'"):
        reg["no_such_module_xyz:A"]
    with pytest.raises(BibInputError, match=r"^unknown widget 'two'; known: one \(or package.module:attr\)$"):
        reg["two"]
    plain = _toy()  # no user code: a module:attr name is just unknown
    with pytest.raises(BibInputError, match=r"^unknown widget 'my_widgets:BIG'; known: one, two, three$"):
        plain["my_widgets:BIG"]


def test_lazy_entries_are_imported_on_first_lookup():
    reg: Registry = Registry("format", lazy=True)
    reg.register("json", "json:dumps")
    assert reg.names() == ("json",)
    import json

    assert reg["json"] is json.dumps


def test_choices_are_a_str_enum_of_the_names():
    reg = _toy()
    reg.register("v1.1-x", 4)
    choices = reg.choices("Widget")
    assert [c.value for c in choices] == ["one", "two", "three", "v1.1-x"]
    assert choices("v1.1-x").name == "v1_1_x" and isinstance(choices("one"), str)
    assert [c.value for c in reg.choices("Some", ("three", "one"))] == ["three", "one"]


# ---------------------------------------------------------------- every extension point

OBSERVERS = ("random", "closest-object", "inverse-planner", "test-only", "novelty", "familiarity", "path-familiarity",
             "path-length",
             "single-feature", "bc-mlp", "bc-rnn", "video-rnn")
PROFILE_AGENTS = ("rational", "rational-b1", "rational-b4", "rational-b16", "instrumental", "irrational", "random",
                  "policy-net", "learner")


def _extension_points() -> dict[str, tuple[Registry, tuple[str, ...]]]:
    """Each extension point's registry and the names it listed before the move to :class:`Registry`."""
    from bib.agency.agents import AGENTS as AGENCY_AGENTS
    from bib.agency.suite import SUITES
    from bib.analysis.formats import IMPORTERS
    from bib.observers import OBSERVERS as OBS
    from bib.observers.learned import LEARNED
    from bib.profile.agents import AGENTS as PROFILE
    from bib.reflection.harness import AGENTS as REFLECTION
    from bib.render.video import CODECS
    from bib.stimuli.bibjson import NAMINGS
    from bib.tasks import REGISTRY

    learned_class = __import__("bib.observers.learned", fromlist=["learned_class"]).learned_class
    for name in ("bc-mlp", "bc-rnn", "video-rnn"):
        learned_class(name)  # imports the class's module, which fills LEARNED
    return {
        "tasks": (REGISTRY, REGISTRY.names()),  # not spelled out here (tests/test_one_source.py); see below
        "observers": (OBS, OBSERVERS),
        "learned observers": (LEARNED, ("bc-mlp", "bc-rnn", "video-rnn")),
        "profile agents": (PROFILE, PROFILE_AGENTS),
        "agency agents": (AGENCY_AGENTS, ("optimal", "noisy", "random", "policy-net", "endpoint")),
        "agency suites": (SUITES, ("navigation", "perturbations", "keys")),
        "reflection agents": (REFLECTION, ("random", "constant", "naive-learner", "a2c", "dqn", "ppo", "recurrent-dqn")),
        "codecs": (CODECS, ("h264", "vp9", "mp4v")),
        "looking-time importers": (IMPORTERS, ("csv", "pyhab")),
        "BIB JSON namings": (NAMINGS, ("v1.1", "old")),
    }


def test_every_extension_point_is_a_registry_listing_what_it_listed_before():
    points = _extension_points()
    for what, (reg, old) in points.items():
        assert isinstance(reg, Registry), what
        # the package's own entries come first (registered on import); other tests in the same process
        # (docs/score-your-model.md's example) may have registered their own after them
        assert reg.names()[:len(old)] == old, what
        assert all(not _builtin(reg[n]) for n in reg.names()[len(old):]), what
    from bib.tasks import REGISTRY, task_ids

    tasks, _ = points["tasks"]  # BIB's 9 evaluation conditions and 4 background tasks (those with a BIB folder) and
    # 4 agent tasks, as before the move; AGENT's families (issue 43) add theirs, without a BIB folder
    assert [len([t for t in task_ids(kind) if REGISTRY[t].bib_folder]) for kind in ("evaluation", "background")] == [9, 4]
    assert [len(task_ids(kind)) for kind in ("evaluation", "background", "agent")] == [11, 6, 4]
    assert set(tasks) == set(task_ids()) and len(tasks) == 21
    for family in ("cost-reward", "unobserved-constraints"):
        assert len(task_ids(family=family)) == 2 and all(REGISTRY[t].bib_folder is None for t in task_ids(family=family))


def _builtin(entry: object) -> bool:
    """Whether a registry entry comes from the package: an observer whose factory is a ``bib.`` string
    (every other registry here holds only the package's entries)."""
    factory = getattr(entry, "factory", None)
    return not hasattr(entry, "needs_checkpoint") or (isinstance(factory, str) and factory.startswith("bib."))


def test_extension_point_lookups_and_messages(tmp_path):
    from bib.agency.agents import AgentSpec, check_spec
    from bib.analysis.importers import read_looking_times
    from bib.analysis.spec import load_spec as load_analysis_spec
    from bib.profile.agents import AgentSpec as ProfileSpec
    from bib.profile.agents import check_spec as check_profile
    from bib.reflection.harness import make_agent
    from bib.render.video import codec_for
    from bib.tasks import get_task

    with pytest.raises(BibInputError, match=r"^unknown task id 'x'; known: navigation, key-door, "):
        get_task("x")
    with pytest.raises(BibInputError, match=r"^unknown agent 'x'; known: optimal, noisy, random, policy-net, endpoint$"):
        check_spec(AgentSpec("x"))
    with pytest.raises(BibInputError, match=r"^unknown agent 'x'; known: rational, .*, learner \(or package.module:attr\)$"):
        check_profile(ProfileSpec("x"))
    with pytest.raises(BibInputError, match=r"^unknown agent 'x'; known: random, constant, naive-learner, a2c, dqn, ppo, recurrent-dqn$"):
        make_agent("x", 0)
    with pytest.raises(BibInputError, match=r"^unknown codec 'divx'; known: h264, vp9, mp4v$"):
        codec_for("a.avi", "divx")
    with pytest.raises(BibInputError, match=r"^unknown format 'xls'; known: csv, pyhab$"):
        read_looking_times("nowhere.xls", "xls")
    spec = tmp_path / "analysis.toml"
    spec.write_text('format = "xls"\n')  # the spec's field reads the same registry as --format
    with pytest.raises(BibInputError, match=r"analysis.toml: field format: unknown format 'xls'; known: csv, pyhab$"):
        load_analysis_spec(spec)


def test_user_observer_and_agent_go_through_the_registries(tmp_path, monkeypatch):
    (tmp_path / "my_ext.py").write_text(textwrap.dedent("""
        class Obs:
            def surprise(self, episode):
                return [0.0]

        class Stay:
            def __init__(self, goals):
                self.goals = goals

            def act(self, layout, state):
                return 4
    """))
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    import numpy as np

    from bib.observers import OBSERVERS as OBS
    from bib.observers import make_observer
    from bib.profile.agents import AGENTS, AgentSpec

    assert OBS["my_ext:Obs"].description == "user observer"
    assert make_observer("my_ext:Obs").name == "my_ext:Obs"
    assert AGENTS["my_ext:Stay"].description == "a user agent class"
    assert AgentSpec("my_ext:Stay").make(("a",), np.random.default_rng(0)).goals == ("a",)


# ---------------------------------------------------------------- the CLI reads them


def _choices(path: list[str], option: str) -> list[str]:
    """The values of the enum a command's option or argument takes (and, for an option, its --help metavar agrees)."""
    import enum
    import typing

    import click

    from bib.cli import command

    cmd = command()
    for part in path:
        cmd = cmd.commands[part]
    param = next(p for p in cmd.params if option in (*p.opts, p.name))
    annotation = param.type_descriptor.annotation
    choice = next(a for a in (annotation, *typing.get_args(annotation)) if isinstance(a, type) and issubclass(a, enum.Enum))
    values = [m.value for m in choice]
    record = param.get_help_record(click.Context(cmd))
    if record is not None and param.opts[0].startswith("--"):
        assert '|'.join(values) in record[0], record
    return values


def test_cli_choices_come_from_the_registries():
    from bib.observers import OBSERVERS as OBS
    from bib.observers import observer_names

    points = _extension_points()
    assert _choices(["agency", "run"], "--suite") == list(points["agency suites"][0])
    assert _choices(["agency", "run"], "--agent") == [n for n in points["agency agents"][0] if n != "endpoint"]
    assert _choices(["reflect"], "--agent") == list(points["reflection agents"][0])
    assert _choices(["generate"], "--codec") == list(points["codecs"][0])
    assert _choices(["analyze"], "--format") == list(points["looking-time importers"][0])
    assert _choices(["export"], "--naming") == list(points["BIB JSON namings"][0])
    assert _choices(["import"], "--naming") == ["auto", *points["BIB JSON namings"][0]]
    # bib train takes a learned observer's name or a package.module:Class (issue 29), checked by trainable()
    from bib.observers.registry import trainable

    assert [trainable(n) for n in observer_names(learned=True)] == ["bc-mlp", "bc-rnn", "video-rnn"]
    with pytest.raises(BibInputError, match="bib train trains bc-mlp, bc-rnn, video-rnn or your own package.module:Class"):
        trainable("random")
    profile = _choices(["profile"], "--observer")  # the registered observers without a checkpoint, when the CLI was built
    assert [n for n in profile if _builtin(OBS[n])] == [n for n, s in OBS.items() if _builtin(s) and not s.needs_checkpoint]
    assert not any(OBS[n].needs_checkpoint for n in profile)
    from bib.cli import app

    score = typer.main.get_command(app).commands["score"]
    builtin = ", ".join(n for n, s in OBS.items() if _builtin(s))
    assert builtin in next(p for p in score.params if p.name == "observer").help
