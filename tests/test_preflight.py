"""Preflights before any write (issue 28 item 4): --scheduler, disk space, a full disk mid-run."""

from __future__ import annotations

import errno
import os
import sys
from pathlib import Path

import pytest

from bib.cli import main


def run_cli(argv, capsys):
    with pytest.raises(SystemExit) as ended:
        main(argv)
    cap = capsys.readouterr()
    return ended.value.code, cap.err


@pytest.mark.parametrize("command", [
    ["generate", "--task", "single-object", "--n", "2"],
    ["score", "random", "no-such-set"],
    ["audit", "no-such-set"],
])
def test_scheduler_without_the_dask_extra_is_refused_before_anything_is_written(command, tmp_path, capsys,
                                                                                monkeypatch):
    monkeypatch.setitem(sys.modules, "dask.distributed", None)  # as if the extra were not installed
    out = tmp_path / "o"
    code, err = run_cli([*command, "--scheduler", "tcp://127.0.0.1:8786", "--out", str(out)], capsys)
    assert code == 2 and err == "bib: error: --scheduler needs the dask extra: pip install 'bib-voe[dask]'\n"
    assert list(tmp_path.iterdir()) == []


def test_an_unreachable_scheduler_is_refused_before_anything_is_written(tmp_path, capsys):
    pytest.importorskip("dask.distributed")
    out = tmp_path / "o"
    code, err = run_cli(["generate", "--task", "single-object", "--n", "2", "--scheduler", "tcp://127.0.0.1:9",
                         "--out", str(out)], capsys)
    assert code == 2 and err == "bib: error: --scheduler tcp://127.0.0.1:9: cannot connect (Connection refused)\n"
    code, err = run_cli(["generate", "--task", "single-object", "--n", "2", "--scheduler", "tcp://127.0.0.1",
                         "--out", str(out)], capsys)
    assert code == 2 and err == "bib: error: --scheduler tcp://127.0.0.1: expected tcp://HOST:PORT\n"
    assert list(tmp_path.iterdir()) == []


def _no_space(path):
    return OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))


def _files(folder):
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and p.name != "provenance.json"}


def test_a_full_disk_in_generate_video_names_the_file_and_the_rerun_resumes_byte_identically(tmp_path, capsys,
                                                                                              monkeypatch):
    import bib.render.video

    monkeypatch.setenv("BIB_NO_PROGRESS", "1")
    args = ["generate", "--task", "single-object", "--n", "4", "--video"]
    assert run_cli([*args, "--out", str(tmp_path / "whole")], capsys)[0] == 0
    real, calls = bib.render.video.write_mp4, []

    def fills_the_disk(path, *a, **kw):  # the third video meets a full disk half-way
        calls.append(path)
        if len(calls) == 3:
            with open(path, "wb") as fh:
                fh.write(b"half a video")
            raise _no_space(path)
        return real(path, *a, **kw)

    monkeypatch.setattr(bib.render.video, "write_mp4", fills_the_disk)
    out = tmp_path / "o"
    code, err = run_cli([*args, "--out", str(out)], capsys)
    assert code == 2 and err == (f"bib: error: {out}/videos/single-object-000002.mp4: cannot write: no space left on "
                                 "device; free some space and rerun the same command\n")
    assert not list(out.rglob(".*.tmp*"))  # no temporary file left
    monkeypatch.setattr(bib.render.video, "write_mp4", real)
    code, err = run_cli([*args, "--out", str(out)], capsys)
    assert code == 0
    assert _files(out) == _files(tmp_path / "whole")


def test_a_full_disk_in_export_names_the_file_and_leaves_no_output(tmp_path, capsys, monkeypatch):
    import bib.stimuli.bibjson
    from bib.io import atomic_open

    monkeypatch.setenv("BIB_NO_PROGRESS", "1")
    assert run_cli(["generate", "--task", "single-object", "--n", "3", "--out", str(tmp_path / "set")], capsys)[0] == 0
    real, calls = bib.stimuli.bibjson.atomic_write_text, []

    def fills_the_disk(path, text, durable=True):
        calls.append(path)
        if len(calls) == 2:
            with atomic_open(path, "w", encoding="utf-8") as fh:
                fh.write(text[:100])
                raise _no_space(None)  # as a write into the temporary file fails: bib.io names the target
        return real(path, text, durable=durable)

    monkeypatch.setattr(bib.stimuli.bibjson, "atomic_write_text", fills_the_disk)
    out = tmp_path / "ex"
    code, err = run_cli(["export", str(tmp_path / "set"), "--out", str(out)], capsys)
    where = out / Path(calls[1]).parent.name / Path(calls[1]).name  # named where it was going, not in the temporary folder
    assert code == 2 and err == f"bib: error: {where}: cannot write: no space left on device; free some space and rerun the same command\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["set"]  # nothing half-written: export builds beside --out
    monkeypatch.setattr(bib.stimuli.bibjson, "atomic_write_text", real)
    assert run_cli(["export", str(tmp_path / "set"), "--out", str(out)], capsys)[0] == 0


def test_append_bytes_cuts_a_failed_append_back(tmp_path):
    from bib.errors import BibInputError
    from bib.io import append_bytes

    path = tmp_path / "manifest.csv"
    path.write_bytes(b"a,b\n1,2\n")

    class HalfThenFull:
        def __init__(self, fh):
            self.fh, self.done = fh, False

        def tell(self):
            return self.fh.tell()

        def truncate(self, n):
            return self.fh.truncate(n)

        def seek(self, n):
            return self.fh.seek(n)

        def write(self, data):
            if self.done:
                raise _no_space(None)
            self.done = True
            return self.fh.write(bytes(data[: len(data) // 2]))

    with open(path, "ab", buffering=0) as raw:
        with pytest.raises(BibInputError, match=r"manifest.csv: cannot write: no space left on device"):
            append_bytes(HalfThenFull(raw), b"3,4\n5,6\n", path)
        append_bytes(raw, b"7,8\n", path)
    assert path.read_bytes() == b"a,b\n1,2\n7,8\n"


def test_too_little_free_space_is_refused_before_anything_is_written(tmp_path, capsys, monkeypatch):
    import shutil

    from bib.stimuli.bibjson import EXPORT_BYTES
    from bib.stimuli.build import EPISODE_BYTES, VIDEO_BYTES

    monkeypatch.setenv("BIB_NO_PROGRESS", "1")
    assert run_cli(["generate", "--task", "single-object", "--n", "3", "--out", str(tmp_path / "set")], capsys)[0] == 0
    real = shutil.disk_usage
    free = 10 * (EPISODE_BYTES + VIDEO_BYTES)  # room for 10 episodes with videos

    def disk_usage(path):
        return real(path)._replace(free=free)

    monkeypatch.setattr(shutil, "disk_usage", disk_usage)
    out = tmp_path / "o"
    code, err = run_cli(["generate", "--task", "single-object", "--n", "11", "--video", "--out", str(out)], capsys)
    assert code == 2 and err == (f"bib: error: {out}: generating 11 episodes with videos needs about 1.2 MB; "
                                 f"{tmp_path} has 1.1 MB free; free some space or choose another --out\n")
    assert run_cli(["generate", "--task", "single-object", "--n", "10", "--video", "--out", str(out)], capsys)[0] == 0
    # a rerun needs only what is not there yet
    assert run_cli(["generate", "--task", "single-object", "--n", "11", "--video", "--out", str(out)], capsys)[0] == 0
    code, err = run_cli(["export", str(tmp_path / "set"), "--out", str(tmp_path / "ex")], capsys)
    assert code == 2 and err.startswith(f"bib: error: {tmp_path / 'ex'}: exporting 3 episodes needs about "
                                        f"{3 * EXPORT_BYTES / 1e6:.1f} MB; ")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["o", "set"]


def test_the_estimates_are_near_what_is_written(tmp_path, capsys, monkeypatch):
    """The per-episode estimates are within a factor 1.5 of the real sizes of single-object episodes."""
    from bib.io import folder_bytes
    from bib.stimuli.bibjson import EXPORT_BYTES
    from bib.stimuli.build import EPISODE_BYTES, VIDEO_BYTES

    monkeypatch.setenv("BIB_NO_PROGRESS", "1")
    assert run_cli(["generate", "--task", "single-object", "--n", "4", "--video", "--out", str(tmp_path / "s")], capsys)[0] == 0
    assert run_cli(["export", str(tmp_path / "s"), "--out", str(tmp_path / "ex")], capsys)[0] == 0
    for real, estimate in ((folder_bytes(tmp_path / "s" / "episodes") / 4, EPISODE_BYTES),
                           (folder_bytes(tmp_path / "s" / "videos") / 4, VIDEO_BYTES),
                           (folder_bytes(tmp_path / "ex") / 4, EXPORT_BYTES)):
        assert estimate / 1.5 < real < estimate * 1.5, (real, estimate)
