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
