"""Hostile analysis specs (issue 39): a formula is data. Code hidden in ``I()``, ``offset()``, a
function term or ``pooled_formula`` is refused in one line naming the call, before any data is read;
nothing runs (the corpus harness sees any folder it would make, in the working folder or elsewhere)."""

from __future__ import annotations

from hostile import Case
from hostile.build import chain, write

_LT = ["participant_id,lab,age_days,task,trial_num,phase,outcome,looking_time_s"]
for _p in range(6):
    _LT += [f"p{_p},L1,{300 + _p},voe,1,test,expected,{4 + _p}",
            f"p{_p},L1,{300 + _p},voe,2,test,unexpected,{6 + _p * 1.1}"]
LOOKING_TIMES = "\n".join(_LT) + "\n"
_MAKE = "__import__('os').makedirs('PWNED')"

# (name, the [model] field, its formula, culprit)
FORMULAS = [
    ("import-in-I", "formula", f"log_lt ~ outcome + I(age_days + 0*len(str({_MAKE}))) + (1 | participant_id)",
     "function len() is not supported"),
    ("import-call", "formula", f"log_lt ~ outcome + I({_MAKE}) + (1 | participant_id)",
     "function __import__() is not supported"),
    ("import-in-offset", "formula", f"log_lt ~ outcome + offset({_MAKE}) + (1 | participant_id)",
     "function __import__() is not supported"),
    ("import-in-log", "formula", "log_lt ~ outcome + log(age_days + eval('1')) + (1 | participant_id)",
     "function eval() is not supported"),
    ("import-in-pooled", "pooled_formula", "log_lt ~ outcome * task + I(exec('1')) + (1 | participant_id)",
     "function exec() is not supported"),
    ("attribute", "formula", "log_lt ~ outcome + I(age_days.__class__) + (1 | participant_id)",
     "column age_days.__class__ is not in the data"),
    ("index", "formula", "log_lt ~ outcome + I(age_days[0]) + (1 | participant_id)", "expected ','"),
    ("lambda", "formula", "log_lt ~ outcome + I(lambda: 1) + (1 | participant_id)", "expected ','"),
    ("string-value", "formula", "log_lt ~ outcome + I('rm -rf') + (1 | participant_id)", "is not a value"),
    ("poly-inside", "formula", "log_lt ~ outcome + I(poly(age_days, 2)) + (1 | participant_id)",
     "poly() is a whole term"),
    ("poly-degree-huge", "formula", "log_lt ~ outcome + poly(age_days, 1e9) + (1 | participant_id)",
     "poly(): the degree must be a whole number from 1 to 20"),
    ("nested-deep", "formula", "log_lt ~ outcome + I(" + "(" * 5000 + "age_days" + ")" * 5000 + ") + (1 | participant_id)",
     "characters long; at most 10,000"),
    ("nested-60", "formula", "log_lt ~ outcome + I(" + "-" * 60 + "age_days) + (1 | participant_id)",
     "nested more than 50 deep"),
    ("power-chain", "formula", "log_lt ~ outcome + I(" + "age_days^" * 200 + "2) + (1 | participant_id)",
     "nested more than 50 deep"),
    # Issue 41's forms: code in a factor call's arguments or in the response, and term explosions.
    ("import-in-levels", "formula", f"log_lt ~ outcome + factor(lab, levels = c({_MAKE})) + (1 | participant_id)",
     "function __import__() is not supported"),
    ("call-in-levels", "formula", "log_lt ~ outcome + factor(lab, levels = c(eval('1'))) + (1 | participant_id)",
     "levels must be text or numbers"),
    ("eval-in-relevel", "formula", "log_lt ~ relevel(outcome, ref = eval('x')) + (1 | participant_id)",
     "relevel(): ref must be a level in quotes"),
    ("eval-as-contrasts", "formula", "log_lt ~ outcome + C(lab, eval) + (1 | participant_id)",
     "C(): contrasts eval are not supported"),
    ("import-in-response", "formula", f"I({_MAKE}) ~ outcome + (1 | participant_id)",
     "function __import__() is not supported"),
    ("power-huge", "formula", "log_lt ~ (outcome + lab)^99999 + (1 | participant_id)",
     "the power after '^' must be a whole number from 1 to 20"),
    ("cross-explosion", "formula", "log_lt ~ outcome + " + "*".join(f"v{i}" for i in range(40)) + " + (1 | participant_id)",
     "the formula expands to more than 5,000 terms"),
    ("power-explosion", "formula", "log_lt ~ outcome + (" + "+".join(f"v{i}" for i in range(40)) + ")^20 + (1 | participant_id)",
     "the formula expands to more than 5,000 terms"),
    ("colon-explosion", "formula", "log_lt ~ outcome + " + ":".join(f"(a{i} + b{i})" for i in range(30)) + " + (1 | participant_id)",
     "the formula expands to more than 5,000 terms"),
]


def _cases() -> list[Case]:
    out = []
    for name, field, formula, culprit in FORMULAS:
        spec = f"[model]\n{field} = {formula!r}\n".replace("\\'", "'")
        if "'" in formula:
            spec = f'[model]\n{field} = """{formula}"""\n'
        build = chain(write("lt.csv", LOOKING_TIMES), write("spec.toml", spec))
        out.append(Case(f"analyze-formula-{name}", ["analyze", "{in}/lt.csv", "--spec", "{in}/spec.toml"],
                        build=build, culprit=culprit))
        out.append(Case(f"analyze-out-formula-{name}", ["analyze", "{in}/lt.csv", "--spec", "{in}/spec.toml",
                                                        "--out", "{out}"], build=build, culprit=culprit))
    return out


CASES = _cases()
