"""The sprite vocabulary (bib.vocabulary): one source read by the schema, renderer, generators, encoders and exporter."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace

import pytest

from bib import vocabulary as V
from bib.episode import validate
from bib.observers.encoders import SYMBOLIC_CHANNELS
from bib.tasks import make_unit
from bib.tasks.common import ITEM_SHAPES


def test_vocabulary_imports_without_pygame() -> None:
    code = "import sys, bib.vocabulary, bib.episode; assert 'pygame' not in sys.modules, 'pygame loaded'"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_renderer_draws_exactly_the_vocabulary() -> None:
    from bib.render.sprites import shape_names

    assert set(shape_names()) == V.SHAPES
    assert set(V.OBJECT_SHAPES).isdisjoint(V.AGENT_SHAPES)


def test_generators_and_encoders_read_the_vocabulary() -> None:
    assert tuple(ITEM_SHAPES) == tuple(s for s in V.OBJECT_SHAPES if s != "medal")
    objects = [n.split(":", 1)[1] for n in SYMBOLIC_CHANNELS if n.startswith("object:")]
    agents = [n.split(":", 1)[1] for n in SYMBOLIC_CHANNELS if n.startswith("agent:")]
    assert objects[: len(V.OBJECT_SHAPES)] == list(V.OBJECT_SHAPES)
    assert agents[: len(V.AGENT_SHAPES)] == list(V.AGENT_SHAPES)


def test_bib_names() -> None:
    assert V.BIB_NAME["double_diamond"] == "double_dia"
    assert set(V.BIB_NAME.values()) <= set(V.BIB_OBJECT_SHAPES) | set(V.BIB_AGENT_SHAPES)
    assert set(V.BIB_AGENT_SHAPES) == set(V.AGENT_SHAPES)
    # every BIB name has one of ours, so an import never meets a BIB sprite it cannot name
    assert {V.OUR_NAME[b] for b in V.BIB_OBJECT_SHAPES} <= set(V.OBJECT_SHAPES)
    # shapes BIB lacks take BIB names the episode does not use; all names distinct
    names = V.bib_names_for(["star", "heart", "ring", "double_diamond", "cross", "hexagon"])
    assert names["heart"] == "heart" and names["double_diamond"] == "double_dia"
    assert names["star"] == "clove_tree" and names["ring"] == "moon"  # first free BIB items, in BIB's order
    assert len(set(names.values())) == len(names) and "medal" not in names.values()
    assert set(names.values()) <= set(V.BIB_OBJECT_SHAPES)
    with pytest.raises(ValueError, match="unknown object shape 'comet'"):
        V.bib_names_for(["comet"])
    with pytest.raises(ValueError, match="more object shapes than BIB has sprite names"):
        V.bib_names_for(ITEM_SHAPES)


def test_schema_check_refuses_shapes_outside_the_vocabulary() -> None:
    ep = make_unit("preference", 0, 3)[0]
    assert validate(ep) == []
    t = ep.trials[0]
    lay = t.layout
    bad_obj = replace(lay, objects=(replace(lay.objects[0], shape="comet"), *lay.objects[1:]))
    bad_agent = replace(lay, agents=(replace(lay.agent, shape="heart"),))
    for layout, msg in [(bad_obj, "has shape 'comet', not an object shape of bib.vocabulary"),
                        (bad_agent, "has shape 'heart', not an agent shape of bib.vocabulary")]:
        bad = replace(ep, trials=(replace(t, layout=layout), *ep.trials[1:]))
        problems = validate(bad)
        assert len(problems) == 1 and msg in str(problems[0]) and "trial 0" in str(problems[0])
