"""Formulas are data (issue 39): the expressions inside a formula are parsed into bib's own tree and
evaluated by walking it over a fixed table of functions; no text of a spec reaches eval (bib's or
formulaic's). Values and names against R (fixtures written by R: tests/fixtures/lme4/make_functions.R)."""

from __future__ import annotations

import builtins
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from bib.analysis import lmer, rexpr
from bib.analysis.formula import call_variable, parse_formula, term_matrix
from bib.analysis.mixed import model_frame
from bib.errors import BibInputError

FIX = Path(__file__).parent / "fixtures" / "lme4"
SLEEP = FIX / "sleepstudy.csv"


def _fail(message: str) -> None:
    raise BibInputError(message)


def parse_expr(text: str) -> rexpr.Node:
    parser = rexpr.ExprParser(rexpr.tokenize(text, "t"), _fail)
    node = parser.expr()
    assert parser.peek() is None
    return node


# R 4's deparse(quote(...)) of each expression (numbers kept as written: bib names terms as typed).
R_DEPARSE = [
    ("I(x/10)", "I(x/10)"), ("I(x^2)", "I(x^2)"), ("I(x*2)", "I(x * 2)"), ("I(x>3)", "I(x > 3)"),
    ("I(-x)", "I(-x)"), ("poly(x, degree=2)", "poly(x, degree = 2)"), ("I(2^-1)", "I(2^-1)"),
    ("I((x+1)*2)", "I((x + 1) * 2)"), ("I(x!=3)", "I(x != 3)"), ("I(-x^2)", "I(-x^2)"),
    ("I(x==1)", "I(x == 1)"), ("I(x>=1)", "I(x >= 1)"), ("I(x - -1)", "I(x - -1)"),
]


@pytest.mark.parametrize(("text", "r"), R_DEPARSE)
def test_deparse_is_rs_and_round_trips(text: str, r: str) -> None:
    node = parse_expr(text)
    assert rexpr.deparse(node) == r
    assert parse_expr(rexpr.deparse(node)) == node


def test_precedence_is_rs() -> None:
    # -x^2 is -(x^2); 2^-1 is 0.5; * before +; comparisons last; ^ is right-associative.
    data = pd.DataFrame({"x": [3.0]})
    for text, value in [("-x^2", -9.0), ("2^-1", 0.5), ("1 + 2 * x", 7.0), ("2^3^2", 512.0), ("x - -1", 4.0),
                        ("(x + 1) * 2", 8.0), ("x/2/3", 0.5), ("10 - 2 - 3", 5.0)]:
        assert rexpr.evaluate(parse_expr(text), data)[0] == pytest.approx(value), text
    assert rexpr.evaluate(parse_expr("x + 1 > 2 * x"), data).tolist() == [False]


def test_function_terms_match_rs_model_matrix() -> None:
    """Every function of the table and a logical term (R: a factor named ``I(Days > 3)TRUE``), names
    and values as R's model.matrix gives them."""
    ref = pd.read_csv(FIX / "functions_mm.csv")
    data = pd.read_csv(SLEEP, dtype={"Subject": str})
    rhs = " + ".join(c for c in ref.columns[1:]).replace("I(Days > 3)TRUE", "I(Days > 3)")
    f = parse_formula(f"Reaction ~ {rhs}")
    variables = {name: call_variable(name, node, data, "t") for name, node in f.calls}
    X, names = term_matrix(f.terms, f.intercept, variables, len(data))  # R's model.matrix: no rank pruning
    assert names == list(ref.columns)
    assert X[:10] == pytest.approx(ref.to_numpy(), abs=1e-11)


def test_poly_is_rs_orthogonal_polynomial() -> None:
    # R 4: poly(c(1, 2, 4, 7, 11, 3), 2)
    got = rexpr.evaluate(parse_expr("poly(x, 2)"), pd.DataFrame({"x": [1.0, 2, 4, 7, 11, 3]}))
    assert got == pytest.approx(np.array([
        [-0.44035242, 0.5235981], [-0.32025631, 0.1295501], [-0.08006408, -0.3994460],
        [0.28022427, -0.5451898], [0.76060873, 0.4696189], [-0.20016019, -0.1781313]]), abs=1e-7)
    with pytest.raises(rexpr.EvalError, match="'degree' must be less than number of unique points"):
        rexpr.evaluate(parse_expr("poly(x, 3)"), pd.DataFrame({"x": [1.0, 2, 1, 3]}))


def test_no_eval_anywhere(monkeypatch: pytest.MonkeyPatch) -> None:
    """A fit with I(), poly(), log(), offset() on lme4's data runs with eval and compile gone (formulaic's
    I() used eval: this failed before issue 39), and gives the lme4 estimates of the parity fixture."""
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("eval/compile called")

    data = pd.read_csv(SLEEP, dtype={"Subject": str})
    ref = json.loads((FIX / "parity_formulas.json").read_text())
    monkeypatch.setattr(builtins, "eval", refuse)
    monkeypatch.setattr(builtins, "compile", refuse)
    for index in (0, 1, 2, 4):
        fit = lmer(ref[index]["formula"], data)
        assert list(fit.coefficients.index) == ref[index]["terms"]
        assert fit.coefficients["estimate"].to_numpy() == pytest.approx(ref[index]["estimate"], rel=1e-4)


@pytest.mark.parametrize(("formula", "message"), [
    ("y ~ I(x + 0*len(str(__import__('os').makedirs('PWNED'))))", "function len() is not supported (supported: "
     "factor(), as.factor(), C(), relevel(), I(), poly(), log(), log2(), log10(), exp(), sqrt(), scale(), mean(), sd(), "
     "offset())"),
    ("y ~ I(__import__('os'))", "function __import__() is not supported"),
    ("y ~ offset(open('x'))", "term offset(open(\"x\")): function open() is not supported"),
    ("y ~ x + (1 + I(system('ls')) | g)", "function system() is not supported"),
    ("y ~ I(x[1])", "expected ','"),
    ("y ~ I('text')", "term I(\"text\"): a string (\"text\") is not a value"),
    ("y ~ I(poly(x, 2))", "term I(poly(x, 2)): poly() is a whole term, not a value inside another expression"),
    ("y ~ log(x, base = 2)", "term log(x, base = 2): log() takes 1 argument"),
    ("y ~ poly(x)", "term poly(x): poly() needs degree"),
    ("y ~ poly(x, deg = 2)", "term poly(x, deg = 2): poly() has no argument 'deg'"),
    ("y ~ I(" + "-" * 60 + "x)", "nested more than 50 deep"),
    ("y ~ " + "(" * 60 + "x" + ")" * 60, "nested more than 50 deep"),
    ("y ~ I(" + "x^" * 100 + "2)", "nested more than 50 deep"),
    ("y ~ x" + " + x" * 4000, "the formula is 16,005 characters long; at most 10,000 are read"),
    ("y ~ f" + "o" * 5000 + "(x)", "function fooooooooooooooooooooooooooooooooooooooo...() is not supported"),
])
def test_a_call_outside_the_table_is_one_line_naming_it(formula: str, message: str) -> None:
    with pytest.raises(BibInputError) as exc:
        parse_formula(formula)
    assert message in str(exc.value) and "\n" not in str(exc.value) and len(str(exc.value)) < 600


@pytest.mark.parametrize(("formula", "message"), [
    ("y ~ I(z + 1) + (1 | g)", "term I(z + 1) cannot be evaluated on the data (column z is not in the data)"),
    ("y ~ log(w) + (1 | g)", "term log(w) cannot be evaluated on the data (column w is not numeric ('a' in row 1))"),
    ("y ~ log(x - 2) + (1 | g)", "term log(x - 2) is missing or not finite in 2 rows"),
    ("y ~ poly(x, 1e9) + (1 | g)", "poly(): the degree must be a whole number from 1 to 20, got 1e9"),
])
def test_bad_values_name_the_term(formula: str, message: str) -> None:
    data = pd.DataFrame({"y": [1.0, 2, 3, 4, 5, 6], "x": [1.0, 2, 3, 4, 5, 6], "w": ["a"] * 6,
                         "g": ["a", "a", "b", "b", "c", "c"]})
    with pytest.raises(BibInputError) as exc:
        model_frame(parse_formula(formula), data)
    assert message in str(exc.value)
