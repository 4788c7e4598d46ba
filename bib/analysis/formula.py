"""lme4-style model formulas: parsing, and the fixed- and random-effects design they define.

A formula is ``response ~ fixed part + (random | group) + ...``:

- fixed part: variables joined by ``+``, ``*`` (``a*b`` = ``a + b + a:b``) and ``/`` (``a/b`` = ``a + a:b``),
  one precedence read left to right as R's; ``%in%`` (``a %in% b`` = ``a:b``); ``:`` (interaction); ``^``
  (``(a + b + c)^2``: every interaction up to that order); ``1`` or ``0``/``-1`` for the intercept; ``.`` (the
  data's columns less the response and the grouping factors: :func:`expand_dot`); ``factor(x)`` (or ``C(x)``,
  ``as.factor(x)``) makes column ``x`` a factor, named as written (``factor(x)B``, as R names it), and
  ``factor(x, levels = c(...))``, ``relevel(x, ref = "b")``, ``C(x, contr.sum)`` set its levels' order, its
  reference or its contrasts (:func:`factor_spec`); ``I(...)``, ``poly(x, k)`` (``raw = TRUE``), ``log()``,
  ``exp()``, ``sqrt()``, ``scale()``, ``mean()``/``sd()`` inside ``I()`` are parsed into a tree and evaluated by
  walking it over a fixed table (:mod:`bib.analysis.rexpr`; no text of a formula is ever evaluated as code),
  named as R deparses them (``I(x^2)``, ``poly(x, 2)1``); ``offset(...)`` is subtracted from the response.
- response: a column or an expression of the same table (``sqrt(y)``, ``log(y + 1)``, ``I(y^2)``).
- random terms: ``(1 | g)``, ``(1 + x | g)``, ``(0 + x | g)``, ``(x || g)`` (uncorrelated),
  ``(1 | a/b)`` (= ``(1 | a) + (1 | b:a)``, named as lme4 names it), ``(1 | a:b)``, crossed terms side by side.

Design matrices follow R's ``model.matrix``: terms ordered by degree (main effects, then two-way
interactions, ...), variables within a term in their order of first appearance, treatment
contrasts with the first level (sorted, or the spec's ``reference``) as the reference, and a
factor coded by indicators where the term without it is absent from the model (R's rule), so the
column names are lme4's: ``outcomeunexpected``, ``trial_typeIDS:methodhpp``, ``naeTRUE``.
"""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from bib.analysis import rexpr
from bib.errors import BibInputError

#: Values read as logical (R's TRUE/FALSE); such a column is a factor with levels FALSE, TRUE.
_LOGICAL = {"TRUE", "FALSE", "True", "False", "true", "false"}


@dataclass(frozen=True)
class RandomTerm:
    """One ``(lhs | group)`` term: the lhs terms (with or without intercept) and the grouping variables."""

    terms: tuple[tuple[str, ...], ...]
    intercept: bool
    group: tuple[str, ...]
    text: str

    @property
    def group_name(self) -> str:
        """The grouping factor as lme4 names it (``lab:participant`` for ``(1 | lab:participant)``,
        ``participant:lab`` for the nested term of ``(1 | lab/participant)``)."""
        return ":".join(self.group)


def uncorrelated(intercept: bool, terms: tuple[tuple[str, ...], ...], group: tuple[str, ...]) -> list[RandomTerm]:
    """lme4's ``(lhs || group)``: one term per column of ``lhs`` (``(1 | g)``, ``(0 + x | g)``), so their
    random effects are uncorrelated."""
    gtext = ":".join(group)
    pieces: list[tuple[bool, tuple[tuple[str, ...], ...]]] = ([(True, ())] if intercept else [])
    pieces += [(False, (t,)) for t in terms]
    return [RandomTerm(ts, icpt, group, f"({'1' if icpt else '0 + ' + ':'.join(ts[0])} | {gtext})") for icpt, ts in pieces]


#: One step of a factor call: ``("levels", (text, ...))`` (``factor(x, levels = c(...))``: the order, numbers as R
#: writes them), ``("ref", "b")`` or ``("ref", 2)`` (``relevel``: a level, or R's 1-based position when a number),
#: ``("contrasts", "sum" | "treatment")`` (``C(x, contr.sum)``).
FactorStep = tuple[str, Any]

#: ``C()``'s contrasts bib codes (R's names and ``C()``'s short forms) -> the coding.
C_CONTRASTS = {"contr.treatment": "treatment", "treatment": "treatment", "contr.sum": "sum", "sum": "sum"}


@dataclass(frozen=True)
class Formula:
    """A parsed formula: response, fixed terms (in R's order), intercept, random terms."""

    response: str
    response_fn: str | None
    terms: tuple[tuple[str, ...], ...]
    intercept: bool
    random: tuple[RandomTerm, ...]
    #: ``factor(x)``, ``C(x)``, ``as.factor(x)``: (R's name of the variable, the data column it reads).
    factor_calls: tuple[tuple[str, str], ...] = ()
    lhs_text: str = ""
    fixed_source: str = "1"
    #: Function terms (R's name, the call's tree) and offsets (R's name, the tree of the offset's value),
    #: evaluated by :func:`bib.analysis.rexpr.evaluate` (a walk over a fixed table, never ``eval``).
    calls: tuple[tuple[str, rexpr.Call], ...] = ()
    offsets: tuple[tuple[str, rexpr.Node], ...] = ()
    #: A transformed response (``sqrt(y)``, ``log(y + 1)``, ``I(y^2)``): its tree; ``None`` for a column.
    response_expr: rexpr.Node | None = None
    #: What each factor call does to its column's levels, in order (:data:`FactorStep`): ``factor(x, levels =)``,
    #: ``relevel(x, ref =)``, ``C(x, contr.sum)``.
    factor_steps: tuple[tuple[str, tuple[FactorStep, ...]], ...] = ()
    #: ``.`` in the fixed part, not yet expanded (:func:`expand_dot` does it with the data's columns).
    has_dot: bool = False
    #: The formula as written (what :func:`expand_dot` parses again).
    source: str = ""

    @property
    def text(self) -> str:
        """The formula as text (random terms in their expanded form)."""
        return " + ".join([f"{self.lhs_text} ~ {self.fixed_source}"] + [r.text for r in self.random])

    @property
    def variables(self) -> list[str]:
        """Every data variable the formula names (response first), in order of appearance."""
        out = [self.response]
        for t in self.terms:
            out += [v for v in t if v not in out]
        for r in self.random:
            for t in r.terms:
                out += [v for v in t if v not in out]
            out += [v for v in r.group if v not in out]
        return out

    def column(self, name: str) -> str:
        """The data column a variable reads (``x`` for ``factor(x)``; a plain variable is its column)."""
        return dict(self.factor_calls).get(name, name)

    def uses(self, name: str) -> bool:
        """``name`` is a variable of the formula or a column one reads (``x`` of ``factor(x)``)."""
        return name in self.variables or name in {column for _, column in self.factor_calls}

    def fixed_text(self) -> str:
        """The fixed part as text (terms joined by ``+``)."""
        parts = ["1" if self.intercept else "0"] + [":".join(t) for t in self.terms]
        return " + ".join(parts)

    @property
    def response_columns(self) -> list[str]:
        """The data columns the response reads (``y`` for ``log(y + 1)``)."""
        return [self.response] if self.response_expr is None else rexpr.names(self.response_expr)

    def steps(self, name: str) -> tuple[FactorStep, ...]:
        """What the factor call ``name`` does to its column's levels (empty for a plain variable or ``factor(x)``)."""
        return dict(self.factor_steps).get(name, ())

    def with_random(self, random: list[RandomTerm]) -> Formula:
        """The same fixed part with other random terms (used by the pruning ladder)."""
        return dataclasses.replace(self, random=tuple(random))


def _strip_random(rhs: str) -> str:
    """The fixed part of a right-hand side as written (random terms removed)."""
    depth, start, chunks = 0, 0, []
    i = 0
    while i < len(rhs):
        ch = rhs[i]
        if ch == "(":
            if depth == 0:
                start = i
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                chunks.append((start, i + 1))
        i += 1
    keep, last = [], 0
    for s, e in chunks:
        if "|" in rhs[s:e]:
            keep.append(rhs[last:s])
            last = e
    keep.append(rhs[last:])
    text = "".join(keep)
    text = re.sub(r"(\+\s*)+", "+ ", text).strip()
    return text.strip("+ ").strip() or "1"


#: Functions a formula may apply to predictors, beyond factor()/C(): the fixed table of
#: :mod:`bib.analysis.rexpr` (R's names; ``poly`` is R's orthogonal polynomial, ``scale`` centres and
#: divides by the SD with n - 1, as R's). ``offset()`` is subtracted from the response.
FUNCTIONS = tuple(rexpr.FUNCTIONS)


Items = list[tuple[bool, frozenset[str]]]

#: The most terms a formula may expand to: ``*``, ``:`` and ``^`` multiply them (``a*b*c*...`` of 30 variables
#: would be 2^30 terms), so a hostile formula is refused before it fills memory.
TERMS_MAX = 5_000


class _Parser(rexpr.TokenCursor):
    """R's formula operators over terms, by R's precedence (loosest first): ``+ -``, ``* /`` (left to right:
    ``a*b/c`` is ``(a*b)/c``), ``%in%``, ``:``, ``^``; atoms are variables, ``0``/``1``, ``.``, parentheses and
    calls."""

    def __init__(self, text: str, where: str, dot: list[str] | None = None) -> None:
        self.text = text
        self.where = where
        self.tokens = rexpr.tokenize(text, where)
        self.i = 0
        self.depth = 0
        self.order: list[str] = []  # variables in order of first appearance
        self.forced: dict[str, str] = {}  # factor(x) -> x
        self.steps: dict[str, tuple[FactorStep, ...]] = {}  # relevel(x, ref = "b") -> its steps
        self.calls: dict[str, rexpr.Call] = {}  # term name (R's) -> its expression tree
        self.offsets: list[tuple[str, rexpr.Node]] = []  # (R's text, the expression subtracted)
        self.dot = dot  # the columns "." stands for (None: not known yet)
        self.has_dot = False

    def fail(self, message: str) -> None:
        shown = self.text if len(self.text) <= 200 else self.text[:200] + "..."
        raise BibInputError(f"{self.where}: {message} in {shown!r}")

    def note(self, name: str) -> None:
        if name not in self.order:
            self.order.append(name)

    def call(self, fn: str) -> Items:
        """``I(...)``, ``poly(...)``, ``log(...)``, ... as one term named as R deparses it;
        ``offset(...)`` as an offset (no term); ``factor()``, ``relevel()``, ``C()`` as a factor of a column.
        The call is parsed into a tree (never text to eval) and checked before any data is read."""
        parser = rexpr.ExprParser(self.tokens, self.fail, self.i)
        parser.depth = self.depth
        node = parser.call(fn)
        self.i = parser.i
        name = rexpr.deparse(node)
        shown = name if len(name) <= 80 else name[:80] + "..."
        if fn in rexpr.FACTOR_CALLS:
            column, steps = factor_spec(node, lambda message: self.fail(f"term {shown}: {message}"))
            self.forced[name] = column
            if steps:
                self.steps[name] = steps
            self.note(name)
            return [(False, frozenset([name]))]
        rexpr.check(node, lambda message: self.fail(f"term {shown}: {message}"))
        if fn == "offset":
            self.offsets.append((name, node.args[0]))
            return []
        self.calls[name] = node
        self.note(name)
        return [(False, frozenset([name]))]

    # An expression is a list of terms; each term a tuple of variables; () is the intercept,
    # and ("-", ...) marks removal. Terms are returned as frozensets with a removal flag.
    def expr(self) -> Items:
        out = self.product()
        while self.peek() in ("+", "-"):
            op = self.take()
            rhs = self.product()
            out += [((op == "-") != neg, t) for neg, t in rhs]
        return out

    def product(self) -> Items:
        """``*`` (crossing) and ``/`` (nesting: ``a/b`` = ``a + a:b``, the right side within every variable of
        the left), one precedence, left to right as R's parser reads them."""
        out = self.within()
        while self.peek() in ("*", "/"):
            op = self.take()
            rhs = self.within()
            if op == "*":
                out = self.cross(out, rhs)
            else:
                outer = frozenset().union(*[t for _, t in out])
                out = out + [(False, outer | t) for _, t in rhs]
        return out

    def within(self) -> Items:
        """``a %in% b``: each term of ``a`` within every variable of ``b`` (R's ``terms``: ``a:b``)."""
        out = self.inter()
        while (op := self.peek()) is not None and op.startswith("%") and op.endswith("%") and len(op) > 1:
            self.take()
            if op != "%in%":
                self.fail(f"operator {op} is not a formula operator (R's formulas know %in%)")
            rhs = self.inter()
            outer = frozenset().union(*[t for _, t in rhs])
            out = list(dict.fromkeys((False, t | outer) for _, t in out))
        return out

    def inter(self) -> Items:
        out = self.power()
        while self.peek() == ":":
            self.take()
            rhs = self.power()
            self.bound(len(out) * len(rhs))
            out = [(False, a | b) for _, a in out for _, b in rhs]
        return out

    def bound(self, n: int) -> None:
        if n > TERMS_MAX:
            self.fail(f"the formula expands to more than {TERMS_MAX:,} terms")

    def cross(self, left: Items, right: Items) -> Items:
        """R's ``left * right``: both sides and every union of a term of each, without repeats."""
        self.bound(len(left) + len(right) + len(left) * len(right))
        out = left + right + [(False, a | b) for _, a in left for _, b in right]
        seen: set[tuple[bool, frozenset[str]]] = set()
        return [x for x in out if not (x in seen or seen.add(x))]  # type: ignore[func-returns-value]

    def power(self) -> Items:
        """``(a + b + c)^k``: every interaction of up to ``k`` of the terms (R's ``terms``: the crossing repeated)."""
        base = self.atom()
        if self.peek() != "^":
            return base
        self.take()
        tok = self.peek()
        if not rexpr.is_number(tok) or not float(tok).is_integer() or not 1 <= float(tok) <= 20:  # type: ignore[arg-type]
            self.fail(f"the power after '^' must be a whole number from 1 to 20 (R: invalid power in formula), "
                      f"got {tok!r}")
        self.take()
        if any(neg for neg, _ in base):
            self.fail("'^' of an expression with '-' (remove terms after the power: (a + b)^2 - a:b)")
        out = base
        for _ in range(int(float(tok)) - 1):  # type: ignore[arg-type]
            out = self.cross(out, base)
        return out

    def atom(self) -> Items:
        # Parentheses and signs nest through here: bounded, so a formula never meets Python's recursion limit.
        self.depth += 1
        if self.depth > rexpr.DEPTH_MAX:
            self.fail(f"nested more than {rexpr.DEPTH_MAX} deep")
        try:
            return self._atom()
        finally:
            self.depth -= 1

    def _atom(self) -> Items:
        tok = self.peek()
        if tok is None:
            self.fail("unexpected end")
        if tok == "(":
            self.take()
            inner = self.expr()
            self.take(")")
            return inner
        if tok == "-":
            self.take()
            return [(not neg, t) for neg, t in self.atom()]
        if rexpr.is_number(tok):
            self.take()
            if float(tok) not in (0.0, 1.0):
                self.fail(f"only 0 or 1 may stand alone, got {tok}")
            return [(float(tok) == 0.0, frozenset())]
        if tok == ".":
            self.take()
            self.has_dot = True
            for column in self.dot or []:
                self.note(column)
            return [(False, frozenset([column])) for column in self.dot or []]
        if rexpr.is_name(tok):
            self.take()
            if self.peek() == "(":
                return self.call(tok)  # type: ignore[arg-type]
            self.note(tok)  # type: ignore[arg-type]
            return [(False, frozenset([tok]))]
        self.fail(f"unexpected {tok!r}")
        raise AssertionError


def _level_texts(node: rexpr.Node, fail: Any) -> tuple[str, ...]:
    """The levels of ``factor(x, levels = ...)``: ``c("a", "b")``, ``c(3, 1, 2)`` or one value, as R's
    ``as.character`` writes them (numbers to 15 significant digits)."""
    items = node.args if isinstance(node, rexpr.Call) and node.fn == "c" and not node.kwargs else (node,)
    out = []
    for item in items:
        if isinstance(item, rexpr.Str):
            out.append(item.value)
        elif isinstance(item, rexpr.Num) or (isinstance(item, rexpr.Unary) and isinstance(item.operand, rexpr.Num)):
            out.append(f"{float(rexpr.deparse(item)):.15g}")
        else:
            fail(f"levels must be text or numbers, as c(\"a\", \"b\") or c(1, 2), got {rexpr.deparse(item)}")
    if len(set(out)) != len(out):
        dup = next(v for v in out if out.count(v) > 1)
        fail(f"level {dup!r} is given twice (R: factor level is duplicated)")
    return tuple(out)


def factor_spec(node: rexpr.Call, fail: Any) -> tuple[str, tuple[FactorStep, ...]]:
    """The column and the level steps of a factor call, checked before any data is read: ``factor(x)``,
    ``as.factor(x)``, ``factor(x, levels = c(...))``, ``relevel(x, ref = "b")`` (or ``relevel(x, "b")``),
    ``C(x)``, ``C(x, contr.sum)`` (``sum``, ``contr.treatment``, ``treatment``, or the name as text), nested
    (``relevel(factor(x), ref = "2")``)."""
    fn = node.fn
    options = {"factor": ("levels",), "as.factor": (), "C": ("contr",), "relevel": ("ref",)}[fn]
    if not node.args:
        fail(f"{fn}() needs a column")
    unknown = [k for k, _ in node.kwargs if k not in options]
    if unknown:
        hint = {"factor": "levels", "C": "contr (contr.sum or contr.treatment)", "relevel": "ref",
                "as.factor": "none"}[fn]
        fail(f"{fn}() has no argument {unknown[0]!r} that bib reads (bib reads: {hint})")
    given = dict(zip(options, node.args[1:]))
    if len(node.args) - 1 > len(options):
        fail(f"{fn}() takes {len(options) + 1} argument{'s' if options else ''}")
    given |= dict(node.kwargs)
    inner = node.args[0]
    if isinstance(inner, rexpr.Name):
        column, steps = inner.name, ()
    elif isinstance(inner, rexpr.Call) and inner.fn in rexpr.FACTOR_CALLS:
        column, steps = factor_spec(inner, fail)
    else:
        fail(f"{fn}() takes a column name or another factor call (factor, as.factor, relevel, C), got "
             f"{rexpr.deparse(inner)}")
        raise AssertionError
    if fn == "factor" and "levels" in given:
        steps += (("levels", _level_texts(given["levels"], fail)),)
    elif fn == "relevel":
        if "ref" not in given:
            fail("relevel() needs ref, the reference level (relevel(x, ref = \"b\"))")
        ref = given["ref"]
        if isinstance(ref, rexpr.Str):
            steps += (("ref", ref.value),)
        elif isinstance(ref, rexpr.Num) and float(ref.text).is_integer() and float(ref.text) >= 1:
            steps += (("ref", int(float(ref.text))),)  # R: a number is the level's position
        else:
            fail(f"relevel(): ref must be a level in quotes (or its position), got {rexpr.deparse(ref)}")
    elif fn == "C" and "contr" in given:
        contr = given["contr"]
        key = contr.name if isinstance(contr, rexpr.Name) else contr.value if isinstance(contr, rexpr.Str) else None
        if key not in C_CONTRASTS:
            fail(f"C(): contrasts {rexpr.deparse(contr)} are not supported (supported: "
                 f"{', '.join(C_CONTRASTS)})")
        steps += (("contrasts", C_CONTRASTS[key]),)  # type: ignore[index]
    return column, steps


def _split_top(text: str, where: str) -> tuple[str, list[str]]:
    """Split a right-hand side into the fixed text and the ``(... | ...)`` random-term texts."""
    random, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "(":
            if depth == 0:
                start = i
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth < 0:
                raise BibInputError(f"{where}: unbalanced parentheses in {text!r}")
            if depth == 0 and "|" in text[start:i]:
                random.append(text[start:i + 1])
    if depth != 0:
        raise BibInputError(f"{where}: unbalanced parentheses in {text!r}")
    return _strip_random(text), random


def _resolve(items: Items, order: list[str]) -> tuple[bool, list[tuple[str, ...]]]:
    """Apply removals; return (intercept, terms ordered by degree then appearance)."""
    intercept = True
    terms: list[frozenset[str]] = []
    for neg, t in items:
        if not t:
            intercept = not neg
            continue
        if neg:
            terms = [x for x in terms if x != t]
        elif t not in terms:
            terms.append(t)
    ordered = sorted(terms, key=len)  # stable: R orders terms by degree, keeping appearance order
    rank = {v: i for i, v in enumerate(order)}
    return intercept, [tuple(sorted(t, key=rank.__getitem__)) for t in ordered]


def _response(lhs: str, where: str) -> tuple[str, rexpr.Node | None, str]:
    """The response: a column, or an expression of one (``sqrt(y)``, ``log(y + 1)``, ``I(y^2)``) checked against
    the table of functions; returns its first column, its tree (``None`` for a column) and R's deparse."""
    p = _Parser(lhs, where)
    if not p.tokens:
        raise BibInputError(f"{where}: a formula needs a response before '~' (lme4 fits a response), got {lhs!r}")
    parser = rexpr.ExprParser(p.tokens, p.fail)
    node = parser.expr()
    if parser.peek() is not None:
        p.fail(f"unexpected {parser.peek()!r} in the response")
    if isinstance(node, rexpr.Name):
        if node.name == ".":
            p.fail("the response cannot be '.' (that is update()'s shorthand)")
        return node.name, None, node.name
    text = rexpr.deparse(node)
    shown = text if len(text) <= 80 else text[:80] + "..."
    if isinstance(node, rexpr.Call) and node.fn in rexpr.FUNCTIONS and rexpr.FUNCTIONS[node.fn].term_only:
        p.fail(f"response {shown}: {node.fn}() cannot be the response")
    rexpr.check(node, lambda message: p.fail(f"response {shown}: {message}"))
    columns = rexpr.names(node)
    if not columns:
        p.fail(f"response {shown}: names no column")
    return columns[0], node, text


def parse_formula(text: str, where: str = "model.formula", *, dot: list[str] | None = None) -> Formula:
    """Parse an lme4-style formula.

    Args:
        text: e.g. ``"log_lt ~ outcome * age_mo + (1 | participant) + (1 | item)"``.
        where: names the spec field in error messages.
        dot: the columns ``.`` stands for (:func:`expand_dot` gives them from the data); without them a ``.`` is
            kept for later (``has_dot``).

    Raises:
        BibInputError: a syntax error, naming ``where`` and the formula.
    """
    if not isinstance(text, str):
        raise BibInputError(f"{where}: a formula is text, got {type(text).__name__}")
    if len(text) > rexpr.TEXT_MAX:
        raise BibInputError(f"{where}: the formula is {len(text):,} characters long; at most "
                            f"{rexpr.TEXT_MAX:,} are read")
    if text.count("~") != 1:
        raise BibInputError(f"{where}: a formula needs exactly one '~', got {text!r}")
    lhs, rhs = (s.strip() for s in text.split("~"))
    response, response_expr, lhs_text = _response(lhs, where)
    response_fn = ("log" if isinstance(response_expr, rexpr.Call) and response_expr.fn == "log"
                   and isinstance(response_expr.args[0], rexpr.Name) else None)
    fixed_text, random_texts = _split_top(rhs, where)
    p = _Parser(fixed_text, where, dot)
    items = p.expr()
    if p.peek() is not None:
        p.fail(f"unexpected {p.peek()!r}")
    intercept, terms = _resolve(items, p.order)
    random: list[RandomTerm] = []
    for rt in random_texts:
        random += _parse_random(rt, where, p)
    return Formula(response, response_fn, tuple(terms), intercept, tuple(random), tuple(p.forced.items()), lhs_text,
                   " ".join(fixed_text.split()), tuple(p.calls.items()), tuple(p.offsets), response_expr,
                   tuple(p.steps.items()), p.has_dot and dot is None, text)


def expand_dot(formula: Formula, columns: list[Any], exclude: list[str] | None = None,
               where: str = "model.formula") -> Formula:
    """``formula`` with ``.`` replaced by the data's ``columns`` (in their order) less the response's columns,
    the grouping factors' columns (the right of every ``|``) and ``exclude`` (a weights column): what ``.`` means
    in bib. R's ``terms`` leaves out only the response, so that in lme4 ``y ~ . + (1 | g)`` also puts ``g`` among
    the fixed effects. A grouping factor of the formula as written stays out after the pruning ladder removed its term.

    Raises:
        BibInputError: a column name that is not text, or nothing left for ``.``.
    """
    if not formula.has_dot:
        return formula
    written = parse_formula(formula.source, where)  # its grouping factors too: a pruned term's stays out of "."
    groups = {f.column(g) for f in (formula, written) for r in f.random for g in r.group}
    left_out = set(formula.response_columns) | groups | set(exclude or [])
    bad = [c for c in columns if not isinstance(c, str)]
    if bad:
        raise BibInputError(f"{where}: '.' stands for the data's columns, and column {bad[0]!r} has no name as text")
    dot = [c for c in columns if c not in left_out]
    if not dot:
        raise BibInputError(f"{where}: '.' stands for no column (the data has only the response and grouping columns)")
    # The random terms stay the formula's own (the pruning ladder's with_random changes them, not the source).
    return dataclasses.replace(parse_formula(formula.source, where, dot=dot), fixed_source=formula.fixed_source,
                               random=formula.random)


def _parse_random(text: str, where: str, outer: _Parser) -> list[RandomTerm]:
    inner = text.strip()[1:-1]
    double = "||" in inner
    bar = "||" if double else "|"
    if inner.count(bar) != 1 or (not double and inner.count("|") != 1):
        raise BibInputError(f"{where}: a random term needs one '|' or '||', got {text!r}")
    lhs, rhs = inner.split(bar)
    lp = _Parser(lhs, where)
    lp.order = outer.order
    intercept, terms = _resolve(lp.expr(), lp.order)
    if lp.peek() is not None:
        lp.fail(f"unexpected {lp.peek()!r}")
    if lp.offsets:
        lp.fail(f"{lp.offsets[0]} inside a random term")
    if lp.has_dot:
        lp.fail("'.' inside a random term (name the columns)")
    outer.forced.update(lp.forced)
    outer.steps.update(lp.steps)
    outer.calls.update(lp.calls)
    gp = _Parser(rhs, where)  # the grouping variables keep their written order: (1 | dept:service)
    groups = gp.expr()
    if gp.peek() is not None:
        gp.fail(f"unexpected {gp.peek()!r}")
    if gp.has_dot:
        gp.fail("'.' as a grouping factor (name the column)")
    outer.forced.update(gp.forced)
    outer.steps.update(gp.steps)
    group_terms = [tuple(sorted(t, key=gp.order.index)) for neg, t in groups if t and not neg]
    if "/" in rhs:  # lme4 names a nested factor innermost first: (1 | a/b) = (1 | a) + (1 | b:a)
        group_terms = [tuple(reversed(g)) for g in group_terms]
    if not group_terms:
        raise BibInputError(f"{where}: random term {text!r} has no grouping factor")
    out = []
    for g in group_terms:
        gtext = ":".join(g)
        if double:
            out += uncorrelated(intercept, tuple(terms), g)
        else:
            lhs_text = " + ".join((["1"] if intercept else ["0"]) + [":".join(t) for t in terms])
            out.append(RandomTerm(tuple(terms), intercept, g, f"({lhs_text} | {gtext})"))
    return out


# ---------------------------------------------------------------------------------------------
# Design matrices


@dataclass
class Variable:
    """A data variable as the design sees it: numeric values, or a factor with its levels."""

    name: str
    numeric: np.ndarray | None = None
    codes: np.ndarray | None = None
    levels: list[str] = field(default_factory=list)
    #: A function term's columns (``poly(x, 2)`` has two) and their name suffixes (``1``, ``2``).
    matrix: np.ndarray | None = None
    suffixes: list[str] = field(default_factory=list)
    #: A factor's coding where R codes it by contrasts: ``treatment`` (R's default ``contr.treatment``: a column
    #: per level but the first) or ``sum`` (``contr.sum``: level j minus the last level, columns named 1, 2, ...).
    contrasts: str = "treatment"

    @property
    def is_factor(self) -> bool:
        return self.codes is not None


def is_number(v: str) -> bool:
    """Whether a level's text is a number (R orders such levels numerically)."""
    try:
        float(v)
    except ValueError:
        return False
    return True


def sort_levels(levels: list[str]) -> list[str]:
    """Levels in R's order for ``factor()``: numerically when every level is a number (R's factor of a
    numeric column), else as R sorts text (ICU collation: case-insensitively, lower case first on a tie, and
    digits as text, so ``"10"`` before ``"2"`` among words)."""
    if levels and all(is_number(v) for v in levels):
        return sorted(levels, key=lambda v: (float(v), v))
    return sorted(levels, key=lambda v: (v.casefold(), v.swapcase()))


def make_variable(name: str, values: pd.Series, *, factor: bool = False, reference: str | None = None,
                  where: str = "model") -> Variable:
    """A numeric variable, or a factor (text, logical TRUE/FALSE, or ``factor=True``).

    Raises:
        BibInputError: a reference level not among the values.
    """
    if values.dtype.kind in "biuf" and not factor:
        return Variable(name, numeric=values.to_numpy(dtype=float))
    categories = values.cat.categories if isinstance(values.dtype, pd.CategoricalDtype) else None
    if values.dtype.kind == "b":
        text_arr = np.where(values.to_numpy(dtype=bool), "TRUE", "FALSE")
    elif values.dtype.kind == "f":  # R's as.character: 3 not 3.0, 15 significant digits
        text_arr = np.array([f"{v:.15g}" for v in values.to_numpy(dtype=float)], dtype=object).astype(str)
    else:
        text_arr = values.to_numpy(dtype=object).astype(str)
    uniq, inverse = np.unique(text_arr, return_inverse=True)
    uniq = [str(u) for u in uniq]
    if not factor and values.dtype.kind not in "biuf" and not set(uniq) & _LOGICAL:
        num = pd.to_numeric(pd.Series(uniq), errors="coerce")
        if num.notna().all():
            return Variable(name, numeric=num.to_numpy(dtype=float)[inverse])
    if categories is not None:  # a pandas Categorical: its own order, the levels that occur
        seen = set(uniq)
        levels = [str(c) for c in categories if str(c) in seen]
    elif set(uniq) <= _LOGICAL:
        levels = sorted(uniq, key=lambda v: v.upper() == "TRUE")
    else:
        levels = sort_levels(uniq)
    if reference is not None:
        if reference not in levels:
            raise BibInputError(f"{where}: reference level {reference!r} of {name} is not among its values "
                                f"({', '.join(levels[:8])})")
        levels = [reference] + [v for v in levels if v != reference]
    position = np.array([levels.index(u) for u in uniq], dtype=np.int64)
    return Variable(name, codes=position[inverse], levels=levels)


def factor_variable(name: str, values: pd.Series, steps: tuple[FactorStep, ...], *, reference: str | None = None,
                    where: str = "model") -> Variable:
    """A factor call's variable: the column as a factor (R's level order, or the spec's ``reference``), then its
    steps in order: ``levels`` (that order, R's labels), ``ref`` (that level first), ``contrasts``.

    Raises:
        BibInputError: a value not among the given levels (R makes it NA), a given level that does not occur,
            a ``ref`` that is not a level (one line naming the term).
    """
    var = make_variable(name, values, factor=True, reference=reference, where=where)
    numeric = values.dtype.kind in "iuf"
    for kind, arg in steps:
        if kind == "levels":
            def key(text: str) -> Any:
                return float(text) if numeric and is_number(text) else text
            wanted = [key(t) for t in arg]
            have = [key(t) for t in var.levels]
            stray = [lev for lev, k in zip(var.levels, have) if k not in wanted]
            if stray:
                raise BibInputError(f"{where}: term {name}: value {stray[0]!r} of {values.name} is not among the levels "
                                    f"given (R makes it NA and leaves the row out; bib refuses: add it to levels)")
            unused = [t for t, k in zip(arg, wanted) if k not in have]
            if unused:
                raise BibInputError(f"{where}: term {name}: level {unused[0]!r} does not occur in the data (R keeps an "
                                    "empty level and lme4 drops its column; bib refuses: leave it out of levels)")
            position = np.array([wanted.index(k) for k in have], dtype=np.int64)
            var = Variable(name, codes=position[var.codes], levels=list(arg), contrasts=var.contrasts)
        elif kind == "ref":
            if isinstance(arg, int):
                if arg > len(var.levels):
                    raise BibInputError(f"{where}: term {name}: ref = {arg} but {values.name} has {len(var.levels)} levels")
                arg = var.levels[arg - 1]
            if arg not in var.levels:
                raise BibInputError(f"{where}: term {name}: ref {arg!r} must be an existing level of {values.name} "
                                    f"({', '.join(var.levels[:8])})")
            order = [arg] + [v for v in var.levels if v != arg]
            position = np.array([order.index(v) for v in var.levels], dtype=np.int64)
            var = Variable(name, codes=position[var.codes], levels=order, contrasts=var.contrasts)
        else:
            var.contrasts = arg
    return var


def learn_basis(formula: Formula, data: pd.DataFrame, where: str) -> rexpr.Basis:
    """The parameters of the formula's data-dependent calls (``mean()``, ``sd()``, ``scale()``, ``poly()``) on
    ``data``: as R, on the whole data given to the fit, before rows are left out for a missing value or by
    ``subset`` (R's ``model.frame`` evaluates the variables first).

    Raises:
        BibInputError: a call that cannot be computed there (``mean()`` of a column with a missing value), naming
            the term.
    """
    basis = rexpr.Basis()
    exprs = [(name, node) for name, node in formula.calls] + list(formula.offsets)
    if formula.response_expr is not None:
        exprs.append((formula.lhs_text, formula.response_expr))
    for name, node in exprs:
        if not rexpr.functions(node) & DATA_DEPENDENT:
            continue
        try:
            rexpr.evaluate(node, data, basis)
        except rexpr.EvalError as exc:
            raise BibInputError(f"{where}: term {name} cannot be evaluated on the data ({exc})") from None
    return basis


#: The functions whose value depends on the data they are computed on (:attr:`rexpr.Function.learn`).
DATA_DEPENDENT = frozenset(name for name, entry in rexpr.FUNCTIONS.items() if entry.learn is not None)


def evaluate_term(name: str, node: rexpr.Node, data: pd.DataFrame, where: str,
                  basis: rexpr.Basis | None = None) -> np.ndarray:
    """The values of a function term or offset on ``data``: rows x columns (or a bool vector); the
    data-dependent calls take their parameters from ``basis`` (:func:`learn_basis`).

    Raises:
        BibInputError: the expression names a missing or non-numeric column, or gives missing or
            infinite values: one line naming the term.
    """
    try:
        values = rexpr.evaluate(node, data, basis)
    except rexpr.EvalError as exc:
        raise BibInputError(f"{where}: term {name} cannot be evaluated on the data ({exc})") from None
    bad = ~rexpr.finite_rows(values)
    if values.shape[0] != len(data) or bad.any():
        raise BibInputError(f"{where}: term {name} is missing or not finite in {int(bad.sum())} rows")
    return values


def call_variable(name: str, node: rexpr.Call, data: pd.DataFrame, where: str,
                  basis: rexpr.Basis | None = None) -> Variable:
    """A function term (``I(x^2)``, ``poly(x, 2)``, ``log(z + 1)``) evaluated on ``data`` by walking
    its tree: its columns, named with R's suffixes (``poly(x, 2)1``, ``poly(x, 2)2``); a logical value
    (``I(x > 3)``) is a factor with levels FALSE, TRUE, as in R (``I(x > 3)TRUE``).

    Raises:
        BibInputError: as :func:`evaluate_term`.
    """
    values = evaluate_term(name, node, data, where, basis)
    if values.dtype == bool:
        return make_variable(name, pd.Series(values), factor=True, where=where)
    if values.ndim == 1:
        return Variable(name, matrix=values[:, None], suffixes=[""])
    return Variable(name, matrix=values, suffixes=[str(j + 1) for j in range(values.shape[1])])


def _columns(var: Variable, contrasts: bool) -> tuple[np.ndarray, list[str]]:
    if var.matrix is not None:
        return var.matrix, [f"{var.name}{s}" for s in var.suffixes]
    if not var.is_factor:
        return var.numeric[:, None], [var.name]  # type: ignore[index]
    n_lev = len(var.levels)
    if contrasts and var.contrasts == "sum":
        mat = np.zeros((len(var.codes), n_lev - 1))  # type: ignore[arg-type]
        for j in range(n_lev - 1):
            mat[:, j] = (var.codes == j).astype(float) - (var.codes == n_lev - 1)
        return mat, [f"{var.name}{j + 1}" for j in range(n_lev - 1)]
    first = 1 if contrasts else 0
    mat = np.zeros((len(var.codes), n_lev - first))  # type: ignore[arg-type]
    for j in range(first, n_lev):
        mat[:, j - first] = var.codes == j
    return mat, [f"{var.name}{lev}" for lev in var.levels[first:]]


def coded_variables(term: tuple[str, ...], terms: tuple[tuple[str, ...], ...], intercept: bool) -> tuple[str, ...]:
    """The variables of ``term`` that R codes by contrasts: those whose margin (the term without them; the
    intercept for a main effect) is in the model, ``1`` in the ``factors`` attribute of R's ``terms()``; the
    others (``2``) get a column for every level (``grp + cond %in% grp``: ``cond:grp`` codes ``cond`` only)."""
    present = {frozenset(t) for t in terms} | ({frozenset()} if intercept else set())
    return tuple(v for v in term if frozenset(term) - {v} in present)


def term_matrix(terms: tuple[tuple[str, ...], ...], intercept: bool, variables: dict[str, Variable],
                n: int) -> tuple[np.ndarray, list[str]]:
    """R's ``model.matrix`` for the given terms: columns and their names (factors coded by contrasts where
    :func:`coded_variables` says so, else by every level)."""
    blocks, names = [], []
    if intercept:
        blocks.append(np.ones((n, 1)))
        names.append("(Intercept)")
    for term in terms:
        mat, nm = np.ones((n, 1)), [""]
        coded = coded_variables(term, terms, intercept)
        for v in term:
            cols, cn = _columns(variables[v], v in coded if variables[v].is_factor else True)
            # R: the first variable varies fastest.
            mat = (mat[:, None, :] * cols[:, :, None]).reshape(n, -1)
            nm = [f"{a}:{b}" if a else b for b in cn for a in nm]
        blocks.append(mat)
        names += nm
    return (np.hstack(blocks) if blocks else np.zeros((n, 0))), names


def group_codes(group: tuple[str, ...], variables: dict[str, Variable]) -> tuple[np.ndarray, list[str]]:
    """Integer codes and level names of a grouping factor (``a:b`` = the observed combinations)."""
    codes = np.zeros(0, dtype=np.int64)
    labels: list[str] = []
    for i, g in enumerate(group):
        var = variables[g]
        if var.is_factor:
            c, lv = var.codes, var.levels
        else:
            uniq, c = np.unique(var.numeric, return_inverse=True)  # type: ignore[call-overload]
            lv = [f"{u:.15g}" for u in uniq]
        if i == 0:
            codes, labels = c.astype(np.int64), list(lv)
            continue
        pair = codes * len(lv) + c
        used, codes = np.unique(pair, return_inverse=True)
        labels = [f"{labels[u // len(lv)]}:{lv[u % len(lv)]}" for u in used]
    used, codes = np.unique(codes, return_inverse=True)
    labels = [labels[u] for u in used]
    rank_of = {v: i for i, v in enumerate(sort_levels(list(labels)))}
    order = sorted(range(len(labels)), key=lambda j: rank_of[labels[j]])
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    return rank[codes], [labels[j] for j in order]


def finite(x: float) -> bool:
    """``x`` is a finite float."""
    return isinstance(x, float) and math.isfinite(x)
