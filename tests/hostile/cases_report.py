"""Malformed `bib report` inputs (issue 39: jinja2 UndefinedError, TypeError, KeyError, ValueError
tracebacks): an audit, an analysis report or an evaluation whose fields have the wrong types; each is
one line naming the file, and no site is left."""

from __future__ import annotations

import json

from hostile import Case
from hostile.build import write

DOCS = [
    ("audit-condition-not-an-object", {"schema": "bib.audit/1", "conditions": {"preference": 5}}),
    ("analysis-task-not-an-object", {"tasks": {"x": 5}, "exclusions": {}}),
    ("analysis-task-empty", {"tasks": {"x": {}}, "exclusions": {}}),
    ("analysis-exclusions-not-lists", {"tasks": {}, "exclusions": {"excluded": 5}}),
    ("evaluation-sets-not-a-list", {"conditions": {"preference": {"accuracy": 0.5}}, "sets": 5}),
    ("evaluation-without-readout", {"conditions": {"preference": {"accuracy": 0.5}}, "difficulty": 5}),
]

CASES = [Case(f"report-malformed-{name}", ["report", "{in}/x.json", "--out", "{out}"],
              build=write("x.json", json.dumps(doc)), culprit="{in}/x.json: malformed input (")
         for name, doc in DOCS]
