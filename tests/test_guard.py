"""bib.guard (issue 28): safe names, containment, regular files only, bounded reading, encodings,
duplicate headers; and a byte-order mark accepted by every reader of text the CLI takes."""

from __future__ import annotations

import gzip
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bib.cli import main
from bib.errors import BibInputError
from bib.guard import (
    check_header,
    check_name,
    gunzip,
    inside,
    load_json,
    load_toml,
    output_path,
    read_bytes,
    read_text,
    set_path,
    text_lines,
)

BAD_INPUTS = Path(__file__).with_name("bad_inputs")
ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("name", ["preference-000000-expected", "a", "A_b.c-9", "_x", "x" * 200])
def test_safe_names_pass(name):
    assert check_name(name, "id") == name


@pytest.mark.parametrize("name", ["", ".", "..", ".x", "-x", "a/b", "../x", "/x", "a\\b", "a b", "a\x00b", "a\nb",
                                  "x" * 201, "caf\u00e9", "~x", "$(x)"])
def test_unsafe_names_are_refused(name):
    with pytest.raises(BibInputError, match=r"^field 'id': .* is not a safe file name"):
        check_name(name, "field 'id'")


def test_inside_follows_links(tmp_path):
    root = tmp_path / "set"
    (root / "episodes").mkdir(parents=True)
    (tmp_path / "outside.json").write_text("{}")
    (root / "episodes" / "in.json").write_text("{}")
    os.symlink(tmp_path / "outside.json", root / "episodes" / "out.json")
    os.symlink(root / "episodes" / "in.json", root / "episodes" / "link-in.json")
    assert inside(root, root / "episodes" / "link-in.json") == root / "episodes" / "link-in.json"
    assert inside(root, root) == root
    with pytest.raises(BibInputError, match=r"out.json resolves to .*outside.json, outside .*set$"):
        inside(root, root / "episodes" / "out.json")
    (tmp_path / "set2").mkdir()  # a sibling whose name starts with the root's is still outside
    with pytest.raises(BibInputError, match="outside"):
        inside(root, tmp_path / "set2")


@pytest.mark.parametrize("rel", ["/etc/passwd", "../x.json", "episodes/../../x.json", "~/x", "..\\x", "", "a\x00b"])
def test_set_paths_stay_in_the_set(tmp_path, rel):
    with pytest.raises(BibInputError, match=r"^row 2: episode_path: "):
        set_path(tmp_path, rel, "row 2: episode_path")


def test_set_path_and_output_path_accept_what_stays_inside(tmp_path):
    assert set_path(tmp_path, "episodes/x.json", "row") == tmp_path / "episodes" / "x.json"
    assert set_path(tmp_path, "episodes/../x.json", "row") == tmp_path / "episodes/../x.json"
    assert output_path(tmp_path, "videos", "x.mp4") == tmp_path / "videos" / "x.mp4"
    with pytest.raises(BibInputError, match="output name: '..' is not a safe file name"):
        output_path(tmp_path, "..", "x.mp4")
    os.symlink("/tmp", tmp_path / "videos-link")
    with pytest.raises(BibInputError, match="resolves to /tmp/x.mp4, outside"):
        output_path(tmp_path, "videos-link", "x.mp4")


def test_only_regular_files_are_read_and_without_waiting(tmp_path):
    fifo = tmp_path / "f.json"
    os.mkfifo(fifo)  # opening it for reading would block until a writer came: it must not be waited on
    with pytest.raises(BibInputError, match=r"f.json: is not a regular file \(a pipe, device or socket\)"):
        read_bytes(fifo)
    with pytest.raises(BibInputError, match=r"null: is not a regular file"):
        read_bytes("/dev/null")
    with pytest.raises(BibInputError, match=r": is a folder"):
        read_text(tmp_path)
    with pytest.raises(BibInputError, match=r"nothere: no such file"):
        read_text(tmp_path / "nothere")


def test_sizes_are_capped_before_reading(tmp_path):
    p = tmp_path / "big.json"
    p.write_bytes(b" " * 2048)
    assert read_bytes(p, 2048) == b" " * 2048
    with pytest.raises(BibInputError, match=r"big.json: file of 0.0 MiB is larger than the 0 MiB bib reads"):
        read_bytes(p, 2047)


def test_text_utf8_bom_and_bad_bytes_named(tmp_path):
    p = tmp_path / "t.csv"
    p.write_bytes(b"\xef\xbb\xbfa,b\r\n1,2\n")
    assert read_text(p) == "a,b\r\n1,2\n"
    assert list(text_lines(p)) == ["a,b\n", "1,2\n"]
    p.write_bytes(b"a,b\n1,2\n3,\xe9\n")
    with pytest.raises(BibInputError, match=r"t.csv: not UTF-8 text \(byte 0xe9 at line 3, offset 10\); save it as UTF-8"):
        read_text(p)
    with pytest.raises(BibInputError, match=r"t.csv: not UTF-8 text \(byte 0xe9 at line 3\)"):
        list(text_lines(p))


def test_json_depth_and_malformation_are_one_line():
    assert load_json('{"a": [1, 2]}', "x.json") == {"a": [1, 2]}
    with pytest.raises(BibInputError, match=r"^x.json: JSON nested too deeply \(more than 64 levels\)$"):
        load_json("[" * 100000 + "]" * 100000, "x.json")
    # issue 39: capped at 64 levels, lists and objects alike, whatever the parser could take
    expected: list = []
    for _ in range(63):
        expected = [expected]
    assert load_json("[" * 64 + "]" * 64, "x.json") == expected
    for deep in ("[" * 65 + "]" * 65, '{"a":' * 65 + "1" + "}" * 65, '[{"a":' * 40 + "1" + "}]" * 40):
        with pytest.raises(BibInputError, match=r"^x.json: JSON nested too deeply \(more than 64 levels\)$"):
            load_json(deep, "x.json")


@pytest.mark.parametrize("text", ["x = " + "[" * 65 + "]" * 65, "x = " + "{a = " * 65 + "1" + "}" * 65,
                                  "x = " + "[" * 5000 + "]" * 5000, "x = [" + "[{a = " * 40 + "1" + "}]" * 40 + "]"])
def test_toml_depth_is_capped_before_the_parser(tmp_path, text):
    p = tmp_path / "s.toml"
    p.write_text(text + "\n")
    with pytest.raises(BibInputError, match=r"s.toml: TOML nested too deeply \(more than 64 levels\)$"):
        load_toml(p)


def test_toml_brackets_in_strings_and_comments_do_not_count(tmp_path):
    p = tmp_path / "s.toml"
    body = 'a = "' + "[" * 100 + '"\nb = \'' + "{" * 100 + "'\n# " + "[" * 100 + '\nc = """\n' + "[" * 100 + '\n"""\n[[t]]\nd = [[1]]\n'
    p.write_text(body)
    assert load_toml(p) == {"a": "[" * 100, "b": "{" * 100, "c": "[" * 100 + "\n", "t": [{"d": [[1]]}]}
    with pytest.raises(BibInputError, match=r"^x.json: malformed JSON at line 1 column 2"):
        load_json("{", "x.json")


def test_toml(tmp_path):
    p = tmp_path / "s.toml"
    p.write_bytes(b'\xef\xbb\xbfname = "x"\n')
    assert load_toml(p) == {"name": "x"}
    with pytest.raises(BibInputError, match=r"nope.toml: no such spec file$"):
        load_toml(tmp_path / "nope.toml", "spec file")
    p.write_text("name = \n")
    with pytest.raises(BibInputError, match=r"s.toml: malformed TOML"):
        load_toml(p)
    from bib.guard import TOML_MAX

    p.write_bytes(b"# " + b"x" * (TOML_MAX - 3) + b"\n")  # exactly the limit: read
    assert load_toml(p) == {}
    with p.open("ab") as fh:  # one byte more: refused by its size, before anything is parsed
        fh.write(b"a = 1\n" * 10 + b"[")
    with pytest.raises(BibInputError, match=r"^.*s\.toml: file of 4\.0 MiB is larger than the 4 MiB bib reads$"):
        load_toml(p)


def test_duplicate_header_names_are_refused():
    assert check_header(["a", "b"], "t.csv") == ["a", "b"]
    with pytest.raises(BibInputError, match=r"^t.csv: column 'looking_time_s' appears twice in the header$"):
        check_header(["looking_time_s", "x", "looking_time_s"], "t.csv")


def test_gunzip_multi_member_and_capped():
    data = gzip.compress(b"a" * 1000) + gzip.compress(b"b" * 1000)
    assert bytes(gunzip(data, "x.gz")) == b"a" * 1000 + b"b" * 1000
    assert bytes(gunzip(data, "x.gz", limit=2000)) == b"a" * 1000 + b"b" * 1000
    with pytest.raises(BibInputError, match=r"^x.gz: inflates to more than 0 MiB"):
        gunzip(data, "x.gz", limit=1999)
    with pytest.raises(BibInputError, match=r"x.gz: not a readable gzip file \(cut short\)"):
        gunzip(data[:30], "x.gz")


def _run(argv, tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    got = capsys.readouterr()
    return exc.value.code, got.out, got.err


def test_read_text_inflates_a_gzip_file_within_its_cap(tmp_path):
    """A compressed CSV (ManyBabies 1 ships ``03_data_trial_main.csv.gz``) is read as its text; a small file
    inflating past the cap is refused without inflating it whole."""

    p = tmp_path / "data.csv.gz"
    p.write_bytes(gzip.compress("\ufeffa,b\n1,é\n".encode()))
    assert read_text(p) == "a,b\n1,é\n"
    p.write_bytes(gzip.compress(b" " * 5000))
    with pytest.raises(BibInputError, match=r"data\.csv\.gz: inflates to more than"):
        read_text(p, limit=4096)
    p.write_bytes(gzip.compress(b"a,b\n\xff\n"))
    with pytest.raises(BibInputError, match=r"data\.csv\.gz: not UTF-8 text \(byte 0xff at line 2"):
        read_text(p)


def test_a_byte_order_mark_is_accepted_everywhere(tmp_path, monkeypatch, capsys):
    """evaluate (results CSV), stats/score (manifest), leaderboard (table), analyze (looking times),
    generate (spec TOML): the same answer with and without a BOM (issue 28: evaluate refused one)."""
    monkeypatch.setenv("BIB_NO_PROGRESS", "1")
    shutil.copytree(BAD_INPUTS, tmp_path / "in")
    inp = tmp_path / "in"
    shutil.copy(ROOT / "data" / "looking_times" / "example.csv", inp / "looks.csv")
    commands = [["evaluate", f"{inp}/set", f"{inp}/scores/results.csv", "--json"],
                ["stats", f"{inp}/set", "--json"],
                ["leaderboard", f"{inp}/ours.csv", "--json"],
                ["analyze", f"{inp}/looks.csv", "--json"]]
    plain = [_run(c, tmp_path, capsys) for c in commands]
    assert [p[0] for p in plain] == [0, 0, 0, 0]
    for name in ("scores/results.csv", "set/manifest.csv", "ours.csv", "looks.csv"):
        p = inp / name
        p.write_bytes(b"\xef\xbb\xbf" + p.read_bytes())
    assert [_run(c, tmp_path, capsys) for c in commands] == plain


def test_generate_reads_a_spec_with_a_bom(tmp_path):
    from bib.stimuli.spec import load_spec

    text = (ROOT / "stimuli" / "bib-eval.toml").read_text(encoding="utf-8")
    (tmp_path / "s.toml").write_bytes(b"\xef\xbb\xbf" + text.encode("utf-8"))
    (tmp_path / "t.toml").write_text(text, encoding="utf-8")
    assert load_spec(tmp_path / "s.toml") == load_spec(tmp_path / "t.toml")


@pytest.mark.slow
def test_a_1_gib_gzip_bomb_is_refused_with_little_memory(tmp_path):
    """Issue 28: 1 GiB of spaces gzipped (about 1 MB) given to `bib import` is refused with a peak
    resident memory under 300 MB (it was inflated whole: 3.2 GB)."""
    folder = tmp_path / "preference"
    folder.mkdir()
    member = gzip.compress(b" " * (1 << 20), compresslevel=9)
    with open(folder / "000000e.json", "wb") as fh:
        for _ in range(1024):
            fh.write(member)
    (folder / "000000u.json").write_bytes((folder / "000000e.json").read_bytes())
    code = ("import resource, sys\nfrom bib.cli import main\n"
            "try:\n    main(sys.argv[1:])\nexcept SystemExit as e:\n    code = e.code\n"
            "print(code, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)")
    proc = subprocess.run([sys.executable, "-c", code, "import", str(folder), "--out", str(tmp_path / "out")],
                          capture_output=True, text=True, timeout=300, env={**os.environ, "BIB_NO_PROGRESS": "1"})
    status, peak_kib = proc.stdout.split()
    assert status == "2" and "inflates to more than 64 MiB" in proc.stderr, proc.stderr
    assert int(peak_kib) < 300 * 1024, peak_kib
    assert not (tmp_path / "out").exists()


def test_a_fifo_render_stamp_is_read_as_no_stamp_without_blocking(tmp_path):
    """A FIFO where a set's render.json should be (issue 39): read_stamps and set_render_settings answer at once
    (no reader blocks on the pipe) and fall back to the set's spec.toml, as for a set without a stamp."""
    import threading

    from bib.stimuli.render_stamp import STAMP, read_stamps, set_render_settings

    root = tmp_path / "set"
    shutil.copytree(Path(__file__).resolve().parent / "bad_inputs" / "set", root)
    (root / "spec.toml").write_text('name = "x"\nseed = 1\n[[tasks]]\nid = "preference"\nn = 1\n[render]\ncell_px = 12\n',
                                    encoding="utf-8")
    os.mkfifo(root / STAMP)
    answers: list[object] = []
    worker = threading.Thread(target=lambda: answers.extend(
        [read_stamps(root), set_render_settings(root / "episodes" / "preference-000000-expected.json",
                                                "preference-000000-expected")]), daemon=True)
    worker.start()
    worker.join(timeout=10)
    assert not worker.is_alive(), "reading a FIFO render.json blocked"
    stamps, (settings, codec, source) = answers
    assert stamps is None
    assert settings.cell_px == 12 and source == root / "spec.toml"
