"""Memory of `bib generate` is flat in the number of units (issue 17 item 4): the job list and the
manifest are streamed. benchmarks/memory.py measures n = 2,000 vs 200,000 (and the real generator)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

SPEC = importlib.util.spec_from_file_location("bench_memory", Path(__file__).resolve().parents[1] / "benchmarks" / "memory.py")
bench = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(bench)


def test_peak_memory_does_not_grow_with_units():
    small, _ = bench.peak_mib(1_000)
    large, _ = bench.peak_mib(30_000)
    assert large <= 1.10 * small, (small, large)


@pytest.mark.slow
def test_peak_memory_2000_vs_200000_units():
    small, _ = bench.peak_mib(2_000)
    large, _ = bench.peak_mib(200_000)
    assert large <= 1.10 * small, (small, large)
