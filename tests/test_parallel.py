"""bib.parallel.map_ordered: results in input order for any worker count, with or without this process working too."""

from __future__ import annotations

import os

import pytest

from bib.parallel import map_ordered


def square_and_pid(x: int) -> tuple[int, int]:
    return x * x, os.getpid()


@pytest.mark.parametrize("workers, local", [(1, False), (2, False), (2, True), (3, True)])
def test_results_come_in_input_order(workers, local):
    out = list(map_ordered(square_and_pid, range(30), workers=workers, local=local, in_flight=5))
    assert [v for v, _ in out] == [x * x for x in range(30)]
    pids = {p for _, p in out}
    if workers == 1:
        assert pids == {os.getpid()}
    elif local:  # the first items wait for a worker's start-up, so this process runs some of them
        assert os.getpid() in pids
    else:
        assert os.getpid() not in pids


def test_an_error_in_this_process_stops_the_pool():
    def items():
        yield from range(5)
        yield "x"  # x * x fails

    with pytest.raises(TypeError):
        list(map_ordered(square_and_pid, items(), workers=2, local=True))


def slow_pid(x: int) -> int:
    import time

    time.sleep(0.05)
    return os.getpid()


def test_stop_all_stops_a_pool_whose_generator_an_error_left_suspended_in_the_callers_loop():
    """The caller's loop raises between two results: the generator (kept by the traceback's frames) has
    not run its own clean-up, so its pool would go on with the tasks in flight; stop_all kills it now."""
    from bib.parallel import _LIVE, stop_all

    gen = map_ordered(slow_pid, range(100), workers=3)
    pids = set()
    with pytest.raises(KeyboardInterrupt):
        for pid in gen:
            pids.add(pid)
            if len(pids) == 2:
                raise KeyboardInterrupt
    (pool,) = list(_LIVE)
    processes = list(pool._processes.values())
    assert len(processes) == 3 and all(p.is_alive() for p in processes)
    stop_all()
    assert not any(p.is_alive() for p in processes) and list(_LIVE) == []
    gen.close()  # its own clean-up later finds the pool stopped already
    assert list(map_ordered(square_and_pid, range(4), workers=2)) and list(_LIVE) == []  # a finished run leaves none


def test_the_cli_stops_every_pool_as_a_command_ends(monkeypatch):
    import bib.cli
    import bib.parallel

    calls = []
    monkeypatch.setattr(bib.parallel, "stop_all", lambda: calls.append(1))
    with pytest.raises(SystemExit):
        bib.cli.main(["--version"])
    assert calls == [1]


_SETUP_DONE = False


def _setup() -> None:
    global _SETUP_DONE
    _SETUP_DONE = True


def _failing_setup() -> None:
    raise ValueError("setup failed")


def square_pid_setup(x: int) -> tuple[int, int, bool]:
    return x * x, os.getpid(), _SETUP_DONE


def test_setup_runs_in_each_pool_process_before_its_items():
    out = list(map_ordered(square_pid_setup, range(40), workers=3, local=True, setup=_setup))
    assert [v for v, _, _ in out] == [x * x for x in range(40)]
    assert all(done for _, pid, done in out if pid != os.getpid())
    assert not _SETUP_DONE  # this process does not run it (it has set itself up)


def test_an_error_in_setup_is_left_to_the_items():
    out = list(map_ordered(square_and_pid, range(10), workers=2, local=True, setup=_failing_setup))
    assert [v for v, _ in out] == [x * x for x in range(10)]


def test_no_item_goes_to_a_pool_that_has_not_started():
    """Until ``pool_ready()`` this process runs every item itself; then the pool gets items too, in order."""
    from concurrent.futures import Future

    from bib.parallel import _drain_local

    ran, submitted = [], []

    def square(x):
        ran.append(x)
        return x * x

    def submit(fn, x):
        submitted.append(x)
        f = Future()
        f.set_result(fn(x))
        return f

    out = list(_drain_local(submit, square, range(20), 8, 2, lambda: len(ran) >= 5))
    assert out == [x * x for x in range(20)]
    assert ran[:5] == [0, 1, 2, 3, 4] and submitted and min(submitted) == 5  # the pool starts after 5 items


def test_a_started_forkserver_preloads_modules_for_the_pool(tmp_path):
    """start_forkserver(preload) imports the modules in the forkserver, so pool processes start with them."""
    import subprocess
    import sys

    script = tmp_path / "preload.py"
    script.write_text(
        "import sys\n"
        "from bib.parallel import map_ordered, start_forkserver\n"
        "def loaded(name):\n"
        "    return name in sys.modules\n"
        "if __name__ == '__main__':\n"
        "    start_forkserver(['bib.observers.heuristics'])\n"
        "    print(list(map_ordered(loaded, ['bib.observers.heuristics'], workers=2)))\n"
    )
    if not sys.platform.startswith("linux"):
        pytest.skip("forkserver: Linux only")
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == "[True]"


def test_ctrl_c_while_the_forkserver_still_imports_does_not_wait_for_the_import(tmp_path):
    """Ctrl-C (a KeyboardInterrupt in this process) while the pool's processes wait for a forkserver that is still
    importing its preload (a fresh `bib score`: torch) stops map_ordered at once: the pool's start does not hold the
    pool's lock while it waits, so stopping the pool does not wait for that import. The preloaded module here
    imports until a flag file appears (30 s at most), which the script creates only after map_ordered has stopped."""
    import subprocess
    import sys

    if not sys.platform.startswith("linux"):
        pytest.skip("forkserver: Linux only")
    (tmp_path / "slow_import.py").write_text(
        "import os, time\n"
        "open(os.environ['BIB_TEST_STARTED'], 'w').close()\n"
        "end = time.monotonic() + 30\n"
        "while not os.path.exists(os.environ['BIB_TEST_FLAG']) and time.monotonic() < end:\n"
        "    time.sleep(0.01)\n"
        "open(os.environ['BIB_TEST_DONE'], 'w').close()\n"
    )
    script = tmp_path / "interrupt.py"
    script.write_text(
        "import os, time\n"
        "from bib.parallel import map_ordered, start_forkserver\n"
        "def interrupted(x):\n"
        "    while not os.path.exists(os.environ['BIB_TEST_STARTED']):  # the forkserver is importing slow_import\n"
        "        time.sleep(0.01)\n"
        "    time.sleep(0.1)  # and the pool's start thread is waiting for it\n"
        "    raise KeyboardInterrupt\n"
        "if __name__ == '__main__':\n"
        "    start_forkserver(['slow_import'])\n"
        "    try:\n"
        "        list(map_ordered(interrupted, range(4), workers=2, local=True))\n"
        "    except KeyboardInterrupt:\n"
        "        print('stopped while the forkserver imports:', not os.path.exists(os.environ['BIB_TEST_DONE']))\n"
        "    open(os.environ['BIB_TEST_FLAG'], 'w').close()\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]),
           **{f"BIB_TEST_{k}": str(tmp_path / k.lower()) for k in ("STARTED", "FLAG", "DONE")}}
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120, env=env)
    assert out.stdout.strip() == "stopped while the forkserver imports: True", out.stdout + out.stderr
