"""Looking-time table: canonical CSV, mapped CSV and PyHab importers, and bad-input errors."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from bib.analysis.importers import read_looking_times
from bib.analysis.schema import COLUMNS
from bib.analysis.spec import AnalysisSpec, load_spec
from bib.errors import BibInputError

HEADER = ",".join(c for c in COLUMNS if c != "item")


def _rows(n: int = 3, task: str = "preference") -> list[str]:
    out = []
    for i in range(n):
        out.append(f"p{i},labA,330,{task},1,familiarization,,12.5,EU,")
        out.append(f"p{i},labA,330,{task},2,test,expected,{5 + i}.25,EU,")
        out.append(f"p{i},labA,330,{task},3,test,unexpected,{8 + i}.5,EU,noerror")
    return out


def _write(tmp_path: Path, lines: list[str], header: str = HEADER, name: str = "lt.csv") -> Path:
    path = tmp_path / name
    path.write_text("\n".join([header, *lines]) + "\n")
    return path


def test_canonical_csv_types_and_rows(tmp_path: Path) -> None:
    table = read_looking_times(_write(tmp_path, _rows()), "csv").table
    assert len(table) == 9
    assert table["looking_time_s"].tolist()[:3] == [12.5, 5.25, 8.5]
    assert table["trial_num"].dtype.kind == "i"
    assert table["row"].tolist()[:3] == ["2", "3", "4"]  # file lines, header = line 1
    assert set(table["trial_error"]) == {""}  # "noerror" means no error


def test_optional_columns_may_be_absent(tmp_path: Path) -> None:
    header = "participant_id,age_days,task,trial_num,phase,outcome,looking_time_s"
    lines = [",".join(r.split(",")[i] for i in (0, 2, 3, 4, 5, 6, 7)) for r in _rows()]
    table = read_looking_times(_write(tmp_path, lines, header), "csv").table
    assert list(table["lab"].unique()) == [""] and list(table["order"].unique()) == [""]


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda r: r.replace("test,expected,5.25", "test,expected,abc"), "column looking_time_s: non-numeric looking time (line 3)"),
        (lambda r: r.replace("test,expected,6.25", "test,expected,-1"), "column looking_time_s: negative looking time (line 6)"),
        (lambda r: r.replace("p1,labA,330,preference,3", "p1,labA,330,preference,2"), "duplicate (participant_id, task, trial_num) rows (lines 6, 7)"),
        (lambda r: r.replace("preference", ""), "column task: empty values"),
        (lambda r: r.replace(",2,test,expected", ",2,test,surprising"), "column outcome: test trials need expected or unexpected (lines 3, 6, 9)"),
        (lambda r: r.replace(",3,test,unexpected", ",3,test,expected"), "task preference: test trials have the single outcome expected (lines 3, 4, 6, 7, 9, 10)"),
    ],
)
def test_bad_values_raise_one_line_listing_rows(tmp_path: Path, edit, message: str) -> None:  # noqa: ANN001
    path = _write(tmp_path, [edit(r) for r in _rows()])
    with pytest.raises(BibInputError) as err:
        read_looking_times(path, "csv")
    text = str(err.value)
    assert text.startswith(f"{path}: ") and message in text and "\n" not in text


def test_missing_required_columns_named(tmp_path: Path) -> None:
    header = "participant_id,task,trial_num,phase,outcome,looking"
    path = _write(tmp_path, ["p0,preference,1,test,expected,3"], header)
    with pytest.raises(BibInputError, match=r"missing required column looking_time_s$"):
        read_looking_times(path, "csv")


def test_empty_looking_time_is_missing_not_an_error(tmp_path: Path) -> None:
    rows = _rows()
    rows[1] = rows[1].replace("5.25", "NA")
    table = read_looking_times(_write(tmp_path, rows), "csv").table
    assert math.isnan(table.loc[1, "looking_time_s"])


def test_mapped_csv_with_units_recoding_and_constants(tmp_path: Path) -> None:
    header = "subid,age,condition,trial,kind,result,lt_ms,trial_error"
    lines = []
    for i in range(2):
        lines.append(f"b{i},300,preference,1,test,congruent,5250,noerror")
        lines.append(f"b{i},300,preference,2,test,incongruent,8000,error")
    spec_path = tmp_path / "spec.toml"
    spec_path.write_text(
        '[mapping]\nunit = "ms"\n'
        '[mapping.columns]\nparticipant_id = "subid"\nage_days = "age"\ntask = "condition"\n'
        'trial_num = "trial"\nphase = "kind"\noutcome = "result"\nlooking_time_s = "lt_ms"\n'
        '[mapping.values.outcome]\ncongruent = "expected"\nincongruent = "unexpected"\n'
        '[mapping.constants]\nlab = "mb2-lab"\n'
    )
    spec = load_spec(spec_path)
    table = read_looking_times(_write(tmp_path, lines, header), spec=spec).table
    assert table["looking_time_s"].tolist() == [5.25, 8.0, 5.25, 8.0]
    assert table["outcome"].tolist() == ["expected", "unexpected"] * 2
    assert set(table["lab"]) == {"mb2-lab"}
    assert table["trial_error"].tolist() == ["", "error"] * 2


def test_mapping_to_absent_column_is_an_error(tmp_path: Path) -> None:
    spec = AnalysisSpec.model_validate({"mapping": {"columns": {"participant_id": "subject"}}})
    with pytest.raises(BibInputError, match=r"field mapping.columns.participant_id: column 'subject' is not in the file"):
        read_looking_times(_write(tmp_path, _rows()), spec=spec)


def test_spec_errors_name_the_field(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text('scale = "sqrt"\n')
    with pytest.raises(BibInputError, match=r"bad.toml: field scale: "):
        load_spec(path)
    path.write_text("[exclusions]\nmin_look = 2\n")
    with pytest.raises(BibInputError, match=r"field exclusions.min_look: "):
        load_spec(path)


PYHAB_SPEC = """
format = "pyhab"
[pyhab]
ignore = ["attn"]
[pyhab.trial_types]
fam = {task = "preference", phase = "familiarization"}
exp = {task = "preference", outcome = "expected"}
unexp = {task = "preference", outcome = "unexpected"}
"""


def _pyhab_file(folder: Path, snum: int, rows: list[tuple[int, int, str, float]], columns: str) -> Path:
    """rows: (trial, GNG, trialType, sumOnA)."""
    lines = [columns]
    for trial, gng, kind, on in rows:
        values = {"sNum": str(snum), "sID": f"inf{snum}", "months": "11", "days": "4", "sex": "f", "cond": "A",
                  "condLabel": "A", "trial": str(trial), "GNG": str(gng), "trialType": kind, "sumOnA": str(on),
                  "numOnA": "3", "sumOffA": "1.0", "trialDuration": "20"}
        lines.append(",".join(values[c] for c in columns.split(",")))
    path = folder / f"BIB{snum}_inf{snum}_1142022.csv"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_pyhab_folder_subset_of_columns_gng_and_ignored(tmp_path: Path) -> None:
    spec_path = tmp_path / "pyhab.toml"
    spec_path.write_text(PYHAB_SPEC)
    spec = load_spec(spec_path)
    out = tmp_path / "pyhab"
    out.mkdir()
    full = "sNum,sID,months,days,sex,cond,condLabel,trial,GNG,trialType,stimName,sumOnA,numOnA,sumOffA,trialDuration"
    full = full.replace(",stimName", "")
    _pyhab_file(out, 1, [(1, 1, "attn", 2.0), (2, 1, "fam", 14.0), (3, 0, "exp", 1.2), (3, 1, "exp", 6.5), (4, 1, "unexp", 9.0)], full)
    _pyhab_file(out, 2, [(1, 1, "fam", 11.0), (2, 1, "unexp", 7.0), (3, 1, "exp", 4.0)], "sID,trial,trialType,sumOnA")
    (out / "BIB1_inf1_1142022_VERBOSE.csv").write_text("snum,months\n1,11\n")  # side file, skipped
    result = read_looking_times(out, spec=spec)
    t = result.table
    assert len(t) == 6
    assert t["participant_id"].tolist() == ["inf1"] * 3 + ["inf2"] * 3
    assert t["looking_time_s"].tolist() == [14.0, 6.5, 9.0, 11.0, 7.0, 4.0]
    assert t["outcome"].tolist() == ["", "expected", "unexpected", "", "unexpected", "expected"]
    assert t.loc[0, "age_days"] == pytest.approx(11 * 30.44 + 4)
    assert math.isnan(t.loc[3, "age_days"])  # the second file has no months/days columns
    assert t.loc[0, "order"] == "A"
    reasons = dict(zip(result.dropped["row"], result.dropped["reason"], strict=True))
    assert reasons == {
        "BIB1_inf1_1142022.csv:4": "GNG = 0 (aborted or redone trial)",
        "BIB1_inf1_1142022.csv:2": "trial type attn ignored by the spec",
    }


def test_pyhab_unmapped_trial_type_is_an_error(tmp_path: Path) -> None:
    spec_path = tmp_path / "pyhab.toml"
    spec_path.write_text(PYHAB_SPEC)
    path = _pyhab_file(tmp_path, 1, [(1, 1, "fam", 3.0), (2, 1, "mystery", 4.0)], "sID,trial,GNG,trialType,sumOnA")
    with pytest.raises(BibInputError, match=r"trial types without a mapping in the spec's \[pyhab.trial_types\]: mystery \(line 3\)"):
        read_looking_times(path, spec=load_spec(spec_path))


def test_pyhab_needs_id_trial_type_and_looking(tmp_path: Path) -> None:
    path = _pyhab_file(tmp_path, 1, [(1, 1, "fam", 3.0)], "sID,trial,GNG,trialType")
    with pytest.raises(BibInputError, match=r"PyHab file lacks column sumOnA$"):
        read_looking_times(path, "pyhab")


def test_canonical_round_trip(tmp_path: Path) -> None:
    first = read_looking_times(_write(tmp_path, _rows()), "csv").table
    again_path = tmp_path / "again.csv"
    first[list(COLUMNS)].to_csv(again_path, index=False)
    again = read_looking_times(again_path, "csv").table
    pd.testing.assert_frame_equal(first[list(COLUMNS)], again[list(COLUMNS)])
