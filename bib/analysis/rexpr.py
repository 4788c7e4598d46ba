"""R expressions inside a formula (``I(x^2)``, ``poly(x, 2)``, ``log(z + 1)``, ``offset(2 * Days)``):
tokens, a tree of our own, R's deparse, and an evaluator that walks the tree over a fixed table.

A formula is data (issue 39): a spec shared with a preregistration must not run code. Nothing here
hands text to Python's ``eval``/``compile`` (nor to formulaic, whose ``I()`` evals). The parser is a
small precedence climber over R's grammar; the evaluator knows exactly these nodes:

- numbers (``2``, ``1e-3``), column names (``age_mo``, R's dotted names too), parentheses;
- arithmetic ``+ - * / ^`` (``^`` right-associative and above unary minus: ``-x^2`` is ``-(x^2)``);
- comparisons ``< <= > >= == !=`` (a logical result; as a term it is a factor ``FALSE``/``TRUE``,
  named as R names it: ``I(x > 3)TRUE``; in arithmetic it counts 0/1, as in R);
- calls of the functions in :data:`FUNCTIONS` only, with positional and ``name = value`` arguments.

Anything else (another function, a string where a number is needed, an attribute, an index) is one
line naming it: ``term I(system(x)): function system() is not supported (supported: ...)``.

The tokens also cover what the formula grammar needs around these expressions (``~ | || : %in% ^``,
strings, ``TRUE``/``FALSE`` as names, read as logical arguments: ``poly(x, 2, raw = TRUE)``), so the term
parser (:mod:`bib.analysis.formula`: ``^`` crossing, ``%in%``, ``relevel(x, ref = "b")``,
``factor(x, levels = c(...))``, ``C(x, contr.sum)``) shares one tokenizer and one expression tree.

Functions whose value depends on the data (``mean``, ``sd``, ``scale``, ``poly``) compute their parameters once
on the data the model is given and keep them in a :class:`Basis` (R's ``predvars``), so that predictions and
emmeans' reference grids evaluate the terms as the fit did.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from bib.errors import BibInputError

#: R's tokens: ``||``, two-character comparisons, ``%op%``, numbers, names, strings, one character.
_TOKEN = re.compile(r"""\s*(?:
    (?P<op>\|\||<=|>=|==|!=|%[^%\s]*%)
  | (?P<num>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)
  | (?P<name>[A-Za-z_.][A-Za-z0-9_.]*|`[^`]+`)
  | (?P<str>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')
  | (?P<char>\S)
)""", re.VERBOSE)

#: The longest expression text read (a formula is a line of a spec, not a program).
TEXT_MAX = 10_000
#: The deepest nesting of parentheses and calls (deeper is refused before any recursion limit).
DEPTH_MAX = 50


def tokenize(text: str, where: str) -> list[str]:
    """R tokens of ``text`` (whitespace dropped; a name in backquotes loses them).

    Raises:
        BibInputError: the text is longer than :data:`TEXT_MAX` characters.
    """
    if len(text) > TEXT_MAX:
        raise BibInputError(f"{where}: the formula is {len(text):,} characters long; at most {TEXT_MAX:,} "
                            "are read")
    out: list[str] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            break
        pos = m.end()
        tok = m.group(m.lastgroup) if m.lastgroup else None
        if tok is None:
            continue
        if m.lastgroup == "name" and tok.startswith("`"):
            tok = tok[1:-1]
        out.append(tok)
    return out


def is_number(tok: str | None) -> bool:
    return tok is not None and re.fullmatch(r"(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?", tok) is not None


def is_name(tok: str | None) -> bool:
    return tok is not None and re.fullmatch(r"[A-Za-z_.][A-Za-z0-9_.]*", tok) is not None and not is_number(tok)


# ---------------------------------------------------------------------------------------------
# The tree


@dataclass(frozen=True)
class Num:
    """A number as written (``1e-3`` keeps its text: bib names terms as the user wrote them)."""

    text: str

    @property
    def value(self) -> float:
        return float(self.text)


@dataclass(frozen=True)
class Str:
    """A quoted string (an argument such as ``relevel(x, "b")``; never a value in arithmetic)."""

    value: str


@dataclass(frozen=True)
class Name:
    """A column of the data."""

    name: str


@dataclass(frozen=True)
class Paren:
    """``( ... )``, kept so the term is named as written: ``I((x + 1) * 2)``."""

    inner: Node


@dataclass(frozen=True)
class Unary:
    op: str
    operand: Node


@dataclass(frozen=True)
class BinOp:
    op: str
    left: Node
    right: Node


@dataclass(frozen=True)
class Call:
    """``fn(args..., name = value...)``."""

    fn: str
    args: tuple[Node, ...]
    kwargs: tuple[tuple[str, Node], ...] = ()


Node = Num | Str | Name | Paren | Unary | BinOp | Call

#: Binary operators by R's precedence (higher binds tighter); ``^`` is handled apart (right-assoc).
_BINARY = {"*": 4, "/": 4, "+": 3, "-": 3, "<": 2, ">": 2, "<=": 2, ">=": 2, "==": 2, "!=": 2}
_COMPARE = {"<", ">", "<=", ">=", "==", "!="}
#: R's deparse puts spaces around these, not around ``/``, ``^`` or ``:``.
_SPACED = {"*", "+", "-"} | _COMPARE


class TokenCursor:
    """A position ``i`` in a token list with ``peek`` and ``take``: what the formula's term parser and
    :class:`ExprParser` share (a subclass says how it fails)."""

    tokens: list[str]
    i: int

    def fail(self, message: str) -> None:
        raise NotImplementedError

    def peek(self) -> str | None:
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def take(self, expected: str | None = None) -> str:
        tok = self.peek()
        if tok is None or (expected is not None and tok != expected):
            self.fail(f"expected {expected!r}" if expected else "unexpected end")
        self.i += 1
        return tok  # type: ignore[return-value]


class ExprParser(TokenCursor):
    """Parses expressions from a token list shared with the caller (the formula's term parser).

    ``fail`` raises the caller's one-line error; ``i`` is the position in ``tokens``.
    """

    def __init__(self, tokens: list[str], fail: Callable[[str], None], start: int = 0) -> None:
        self.tokens = tokens
        self.i = start
        self._fail = fail
        self.depth = 0
        #: The first call outside the table: a syntax error after it is reported as that call
        #: (``len(str(__import__('os').makedirs(...)))`` names ``len()``, not the ``.`` that follows).
        self.bad_call: str | None = None

    def fail(self, message: str) -> None:
        if self.bad_call is not None:
            message = unsupported(self.bad_call)
        self._fail(message)

    def expr(self, level: int = 0) -> Node:
        """An expression whose binary operators bind at ``level`` or tighter."""
        left = self.unary()
        while (op := self.peek()) in _BINARY and _BINARY[op] > level:  # type: ignore[operator]
            self.take()
            right = self.expr(_BINARY[op])  # type: ignore[index]
            if op in _COMPARE and isinstance(left, BinOp) and left.op in _COMPARE:
                self.fail(f"unexpected {op!r}")  # R: a < b < c is a syntax error
            left = BinOp(op, left, right)  # type: ignore[arg-type]
        return left

    def unary(self) -> Node:
        # Every nesting (parentheses, calls, unary signs, ``^`` chains) passes here: bounded depth.
        self.depth += 1
        if self.depth > DEPTH_MAX:
            self.fail(f"nested more than {DEPTH_MAX} deep")
        try:
            if self.peek() in ("-", "+"):
                op = self.take()
                return Unary(op, self.unary())
            return self.power()
        finally:
            self.depth -= 1

    def power(self) -> Node:
        base = self.atom()
        if self.peek() == "^":
            self.take()
            return BinOp("^", base, self.unary())  # right-associative; 2^-1 is 0.5
        return base

    def atom(self) -> Node:
        tok = self.peek()
        if tok is None:
            self.fail("unexpected end")
        if tok == "(":
            self.take()
            inner = self.expr()
            self.take(")")
            return Paren(inner)
        if is_number(tok):
            return Num(self.take())
        if tok[0] in "\"'":  # type: ignore[index]
            self.take()
            return Str(tok[1:-1])  # type: ignore[index]
        if is_name(tok):
            self.take()
            if self.peek() == "(":
                return self.call(tok)  # type: ignore[arg-type]
            return Name(tok)  # type: ignore[arg-type]
        self.fail(f"unexpected {tok!r}")
        raise AssertionError

    def call(self, fn: str) -> Call:
        """``fn(a, b, name = c)``; :func:`check` checks ``fn`` against the table."""
        if fn not in FUNCTIONS and fn not in PARSED_CALLS and self.bad_call is None:
            self.bad_call = fn
        self.take("(")
        args: list[Node] = []
        kwargs: list[tuple[str, Node]] = []
        while self.peek() != ")":
            if is_name(self.peek()) and self.i + 1 < len(self.tokens) and self.tokens[self.i + 1] == "=":
                key = self.take()
                self.take("=")
                kwargs.append((key, self.expr()))
            else:
                if kwargs:
                    self.fail(f"{fn}(): a positional argument after a named one")
                args.append(self.expr())
            if self.peek() != ")":
                self.take(",")
        self.take(")")
        return Call(fn, tuple(args), tuple(kwargs))


def deparse(node: Node) -> str:
    """The expression as R's ``deparse`` writes it (``x^2``, ``x * 2``, ``x/10``, ``x > 3``,
    ``poly(x, degree = 2)``), numbers as written."""
    if isinstance(node, Num):
        return node.text
    if isinstance(node, Str):
        return '"' + node.value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(node, Name):
        return node.name if is_name(node.name) else f"`{node.name}`"
    if isinstance(node, Paren):
        return f"({deparse(node.inner)})"
    if isinstance(node, Unary):
        return f"{node.op}{deparse(node.operand)}"
    if isinstance(node, BinOp):
        sep = f" {node.op} " if node.op in _SPACED else node.op
        return f"{deparse(node.left)}{sep}{deparse(node.right)}"
    parts = [deparse(a) for a in node.args] + [f"{k} = {deparse(v)}" for k, v in node.kwargs]
    return f"{node.fn}({', '.join(parts)})"


def names(node: Node) -> list[str]:
    """The column names an expression reads, in order of appearance."""
    out: list[str] = []

    def walk(n: Node) -> None:
        if isinstance(n, Name) and n.name not in out:
            out.append(n.name)
        elif isinstance(n, Paren):
            walk(n.inner)
        elif isinstance(n, Unary):
            walk(n.operand)
        elif isinstance(n, BinOp):
            walk(n.left)
            walk(n.right)
        elif isinstance(n, Call):
            for a in n.args:
                walk(a)
            for _, v in n.kwargs:
                walk(v)

    walk(node)
    return out


def functions(node: Node) -> set[str]:
    """The functions an expression calls, at any depth (``{"I", "scale"}`` for ``I(scale(x) + 1)``)."""
    out: set[str] = set()
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, Call):
            out.add(n.fn)
            stack += list(n.args) + [v for _, v in n.kwargs]
        elif isinstance(n, Paren):
            stack.append(n.inner)
        elif isinstance(n, Unary):
            stack.append(n.operand)
        elif isinstance(n, BinOp):
            stack += [n.left, n.right]
    return out


# ---------------------------------------------------------------------------------------------
# Evaluation over a whitelist


class EvalError(Exception):
    """An expression that cannot be evaluated on the data (the caller names the term)."""


def _poly_fit(x: np.ndarray, degree: int) -> tuple[np.ndarray, np.ndarray]:
    """R's ``poly(x, degree)`` coefficients on the data it is fitted on: ``alpha`` and ``norm2`` of the
    three-term recurrence (R's ``attr(, "coefs")``), from the QR decomposition of the centred powers."""
    if degree >= len(np.unique(x)):
        raise EvalError("poly(): 'degree' must be less than number of unique points")
    xbar = x.mean()
    xc = x - xbar
    q, r = np.linalg.qr(np.vander(xc, degree + 1, increasing=True))
    z = q * np.diag(r)  # R: qr.qy(QR, diag(R)): column j of Q times R[j, j]
    norm2 = (z ** 2).sum(axis=0)
    alpha = ((xc[:, None] * z ** 2).sum(axis=0) / norm2 + xbar)[:degree]
    return alpha, np.concatenate([[1.0], norm2])


def _poly_apply(x: np.ndarray, alpha: np.ndarray, norm2: np.ndarray) -> np.ndarray:
    """R's ``predict(poly(...), x)``: the three-term recurrence with the fitted data's coefficients
    (``Z[, i + 2] = (x - alpha[i + 1]) Z[, i + 1] - norm2[i + 2] / norm2[i + 1] Z[, i]``), columns of unit length
    on the fitted data."""
    degree = len(alpha)
    z = np.ones((len(x), degree + 1))
    z[:, 1] = x - alpha[0]
    for i in range(1, degree):
        z[:, i + 1] = (x - alpha[i]) * z[:, i] - (norm2[i + 1] / norm2[i]) * z[:, i - 1]
    return z[:, 1:] / np.sqrt(norm2[2:])


def _sd(x: np.ndarray) -> float:
    if len(x) < 2:
        raise EvalError("sd(): needs at least two rows")
    return float(x.std(ddof=1))


def _degree(node: Node) -> int:
    if isinstance(node, Num) and float(node.text).is_integer() and 1 <= float(node.text) <= 20:
        return int(float(node.text))
    raise EvalError(f"poly(): the degree must be a whole number from 1 to 20, got {deparse(node)}")


def _logical(node: Node) -> bool:
    """R's ``TRUE``/``FALSE`` as an argument (``raw = TRUE``)."""
    if isinstance(node, Name) and node.name in ("TRUE", "FALSE"):
        return node.name == "TRUE"
    raise EvalError(f"expected TRUE or FALSE, got {deparse(node)}")


@dataclass(frozen=True)
class Function:
    """An entry of the table: how many vector arguments, and the numpy function applied to them."""

    apply: Callable[..., np.ndarray]
    #: Extra arguments (after the vector): names in R's order, each read by its reader (a whole number,
    #: TRUE/FALSE).
    options: tuple[str, ...] = ()
    #: Only as a whole term (its value is a matrix, or it is not a predictor at all).
    term_only: bool = False
    #: Options that may be left out, with R's default.
    defaults: tuple[tuple[str, str], ...] = ()
    #: For a function whose value depends on the data it is computed on (a mean, an SD, a basis): ``learn(x,
    #: *options)`` gives its parameters on the data the model is fitted on, kept in a :class:`Basis` (as R's
    #: ``predvars``) so that predictions and reference grids reuse them; ``apply(x, params, *options)``.
    learn: Callable[..., Any] | None = None


def _unary(fn: Callable[[np.ndarray], np.ndarray]) -> Callable[..., np.ndarray]:
    def apply(x: np.ndarray) -> np.ndarray:
        with np.errstate(all="ignore"):  # log(-1) is NaN: the caller counts the rows that are not finite
            return fn(_numeric(x))
    return apply


def _complete(fn: str, x: np.ndarray) -> np.ndarray:
    """``x`` as floats, refused when a value is missing (R: ``mean()`` and ``sd()`` are then NA on every row,
    and ``poly()`` stops: "missing values are not allowed in 'poly'")."""
    x = _numeric(x)
    bad = ~np.isfinite(x)
    if bad.any():
        raise EvalError(f"{fn}() over {int(bad.sum())} missing or infinite values (R gives NA for every row, or "
                        "stops, as it computes it on the whole data before leaving rows out); remove those rows "
                        "from the data, or compute the column in the data")
    return x


def _scale_learn(x: np.ndarray) -> tuple[float, float]:
    """R's ``scale(x)``: the mean and the SD (n - 1) of the values present (``na.rm``)."""
    x = _numeric(x)
    present = x[np.isfinite(x)]
    if len(present) < 2:
        raise EvalError("scale(): needs at least two values")
    return float(present.mean()), float(present.std(ddof=1))


def _poly_learn(x: np.ndarray, degree: int, raw: bool = False) -> tuple[np.ndarray, np.ndarray] | None:
    return None if raw else _poly_fit(_complete("poly", x), degree)


def _poly_value(x: np.ndarray, params: tuple[np.ndarray, np.ndarray] | None, degree: int,
                raw: bool = False) -> np.ndarray:
    x = _numeric(x)
    return x[:, None] ** np.arange(1, degree + 1) if params is None else _poly_apply(x, *params)


#: The functions a formula may call, R's names (``offset`` is read by the formula: subtracted from
#: the response). ``I()`` is the identity that protects arithmetic from the formula operators; ``mean()`` and
#: ``sd()`` are the column's mean and SD (n - 1) on the data the model is fitted on, for ``I(x - mean(x))``.
FUNCTIONS: dict[str, Function] = {
    "I": Function(lambda x: x),
    "poly": Function(_poly_value, options=("degree", "raw"), term_only=True, defaults=(("raw", "FALSE"),),
                     learn=_poly_learn),
    "log": Function(_unary(np.log)),
    "log2": Function(_unary(np.log2)),
    "log10": Function(_unary(np.log10)),
    "exp": Function(_unary(np.exp)),
    "sqrt": Function(_unary(np.sqrt)),
    "scale": Function(lambda x, p: (_numeric(x) - p[0]) / p[1], learn=_scale_learn),
    "mean": Function(lambda x, p: np.full(len(x), p), learn=lambda x: float(_complete("mean", x).mean())),
    "sd": Function(lambda x, p: np.full(len(x), p), learn=lambda x: _sd(_complete("sd", x))),
    "offset": Function(lambda x: _numeric(x), term_only=True),
}

#: How each option is read: R's argument name -> reader of its tree.
_OPTION_READERS: dict[str, Callable[[Node], Any]] = {"degree": _degree, "raw": _logical}

#: Calls that make a factor (read by the formula's term parser, :mod:`bib.analysis.formula`), and ``c()`` for their
#: ``levels``: parsed by the same expression parser, never evaluated here.
FACTOR_CALLS = ("factor", "as.factor", "C", "relevel")
PARSED_CALLS = (*FACTOR_CALLS, "c")


def _numeric(x: np.ndarray) -> np.ndarray:
    return x.astype(float) if x.dtype == bool else x


def _column(name: str, data: pd.DataFrame) -> np.ndarray:
    if name not in data.columns:
        raise EvalError(f"column {name} is not in the data")
    col = data[name]
    if col.dtype.kind == "b":
        return col.to_numpy(dtype=bool)
    if col.dtype.kind in "iuf":
        return col.to_numpy(dtype=float)
    values = pd.to_numeric(col, errors="coerce")
    bad = values.isna() & col.notna()
    if bad.any():
        row = int(np.flatnonzero(bad.to_numpy())[0])
        raise EvalError(f"column {name} is not numeric ({str(col.iloc[row])[:40]!r} in row {row + 1})")
    return values.to_numpy(dtype=float)


def unsupported(fn: str) -> str:
    """The message for a call outside the table (the name cut to 40 characters)."""
    shown = fn if len(fn) <= 40 else fn[:40] + "..."
    return (f"function {shown}() is not supported (supported: factor(), as.factor(), C(), relevel(), "
            + ", ".join(f"{f}()" for f in FUNCTIONS) + ")")


def check(node: Node, fail: Callable[[str], None], *, top: bool = True) -> None:
    """Refuse, before any data is read, a call outside :data:`FUNCTIONS`, a string where a value is
    needed, or a term-only function (``poly``, ``offset``) inside another expression."""
    if isinstance(node, Str):
        fail(f"a string ({deparse(node)}) is not a value")
    elif isinstance(node, Paren):
        check(node.inner, fail, top=False)
    elif isinstance(node, Unary):
        check(node.operand, fail, top=False)
    elif isinstance(node, BinOp):
        check(node.left, fail, top=False)
        check(node.right, fail, top=False)
    elif isinstance(node, Call):
        entry = FUNCTIONS.get(node.fn)
        if entry is None:
            fail(unsupported(node.fn))
            return
        if entry.term_only and not top:
            fail(f"{node.fn}() is a whole term, not a value inside another expression")
        if not node.args:
            fail(f"{node.fn}() needs an argument")
        allowed = len(entry.options) + 1
        if len(node.args) + len(node.kwargs) > allowed:
            fail(f"{node.fn}() takes {allowed} argument{'s' if allowed > 1 else ''}")
        unknown = [k for k, _ in node.kwargs if k not in entry.options]
        if unknown:
            fail(f"{node.fn}() has no argument {unknown[0]!r}")
        given = dict(zip(entry.options, node.args[1:]))
        twice = [k for k, _ in node.kwargs if k in given]
        if twice:
            fail(f"{node.fn}(): argument {twice[0]!r} given twice")
        given |= dict(node.kwargs)
        missing = [o for o in entry.options if o not in given and o not in dict(entry.defaults)]
        if missing:
            fail(f"{node.fn}() needs {', '.join(missing)}")
        for key, value in given.items():
            try:
                _OPTION_READERS[key](value)
            except EvalError as exc:
                fail(str(exc) if str(exc).startswith(f"{node.fn}()") else f"{node.fn}(): {key}: {exc}")
        check(node.args[0], fail, top=False)


def _options(node: Call, entry: Function) -> list[Any]:
    """The call's extra arguments, read, in the table's order (R's defaults where left out)."""
    given = {k: Name(v) for k, v in entry.defaults} | dict(zip(entry.options, node.args[1:])) | dict(node.kwargs)
    return [_OPTION_READERS[o](given[o]) for o in entry.options]


@dataclass
class Basis:
    """What the data-dependent calls of a model (``mean()``, ``sd()``, ``scale()``, ``poly()``) computed on the
    data it is fitted on, by call: R's ``predvars`` (``poly``'s coefficients, ``scale``'s centre and SD), kept so
    that a prediction or a reference grid evaluates the model's terms as the fit did."""

    params: dict[Call, Any] = field(default_factory=dict)


def evaluate(node: Node, data: pd.DataFrame, basis: Basis | None = None) -> np.ndarray:
    """The value of a checked expression on ``data``: a float or bool vector (a matrix for ``poly``).

    A data-dependent call (``mean``, ``sd``, ``scale``, ``poly``) takes its parameters from ``basis`` when they are
    there; else it computes them on ``data`` and, given a ``basis``, keeps them there.

    Raises:
        EvalError: a missing or non-numeric column, a bad ``poly`` degree; the message names it.
    """
    if isinstance(node, Num):
        return np.full(len(data), node.value)
    if isinstance(node, Name):
        return _column(node.name, data)
    if isinstance(node, Paren):
        return evaluate(node.inner, data, basis)
    if isinstance(node, Unary):
        x = _numeric(evaluate(node.operand, data, basis))
        return -x if node.op == "-" else x
    if isinstance(node, BinOp):
        a, b = evaluate(node.left, data, basis), evaluate(node.right, data, basis)
        if node.op in _COMPARE:
            return {"<": np.less, ">": np.greater, "<=": np.less_equal, ">=": np.greater_equal,
                    "==": np.equal, "!=": np.not_equal}[node.op](a, b)
        a, b = _numeric(a), _numeric(b)
        with np.errstate(all="ignore"):  # x/0 and 0^-1 are inf, as in R: the caller refuses them
            if node.op == "^":
                return np.power(a, b)
            return {"+": np.add, "-": np.subtract, "*": np.multiply, "/": np.divide}[node.op](a, b)
    if isinstance(node, Call):
        entry = FUNCTIONS[node.fn]
        x = evaluate(node.args[0], data, basis)
        extra = _options(node, entry)
        if entry.learn is None:
            return entry.apply(x, *extra)
        if basis is not None and node in basis.params:
            params = basis.params[node]
        else:
            params = entry.learn(x, *extra)
            if basis is not None:
                basis.params[node] = params
        return entry.apply(x, params, *extra)
    raise EvalError(f"{deparse(node)} is not a value")


def finite_rows(values: np.ndarray) -> np.ndarray:
    """Rows whose every value is finite (a bool vector is always finite)."""
    if values.dtype == bool:
        return np.ones(len(values), dtype=bool)
    v = values.reshape(len(values), -1)
    return np.isfinite(v).all(axis=1)


__all__ = ["FACTOR_CALLS", "FUNCTIONS", "Basis", "BinOp", "Call", "EvalError", "ExprParser", "Name", "Num", "Paren",
           "Str", "Unary",
           "check", "deparse", "evaluate", "finite_rows", "functions", "is_name", "is_number", "names", "tokenize"]
