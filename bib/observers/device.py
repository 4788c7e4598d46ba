"""``--device auto|cpu|cuda[:N]|mps``: where a torch model trains and scores, and with how many threads.

``auto`` (the default) is the first CUDA GPU when torch sees one, else Apple's ``mps`` when available,
else ``cpu``. On the CPU nothing changes: the same code runs with the same tensors, so checkpoints and
surprise values are byte-identical to runs before devices existed (``tests/test_device.py``). On a GPU,
training's loader processes build batches in pinned memory and copy them without blocking, and the
model's weights are saved from the CPU (a checkpoint does not depend on where it was trained).

Nothing here imports torch until a device has to be resolved, and :func:`check_device` reads only the
text, so an observer that does not use torch never imports it for ``auto`` or ``cpu``.
"""

from __future__ import annotations

import contextlib
import re
import sys
from collections.abc import Iterator
from typing import Any

from bib.errors import BibInputError

DEVICE_CHOICES = ("auto", "cpu", "cuda", "cuda:N", "mps")
"""What ``--device`` takes (``cuda:N`` is the N-th CUDA GPU)."""
_FORM = re.compile(r"^(auto|cpu|mps|cuda(?::(\d+))?)$")


def check_device(spec: str) -> str:
    """``spec`` when it is one of :data:`DEVICE_CHOICES` (text only, no torch); else a one-line BibInputError."""
    if not isinstance(spec, str) or not _FORM.match(spec):
        raise BibInputError(f"--device {spec!r}: expected one of {', '.join(DEVICE_CHOICES)}")
    return spec


def available() -> list[str]:
    """The devices torch can use here: ``cpu``, ``cuda:0`` ... and ``mps`` when present."""
    import torch

    found = ["cpu"] + [f"cuda:{i}" for i in range(torch.cuda.device_count())] if torch.cuda.is_available() else ["cpu"]
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        found.append("mps")
    return found


def resolve_device(spec: str = "auto") -> str:
    """The torch device ``spec`` names here (``cuda`` becomes ``cuda:0``).

    Raises:
        BibInputError: a malformed spec, or a device this machine does not have (naming the ones it has).
    """
    spec = check_device(spec)
    have = available()
    if spec == "auto":
        return next((d for d in have if d.startswith("cuda")), "mps" if "mps" in have else "cpu")
    want = "cuda:0" if spec == "cuda" else spec
    if want not in have:
        import torch

        what = "no CUDA device" if want.startswith("cuda") and not torch.cuda.is_available() else f"no {want}"
        build = "" if torch.version.cuda else f" (torch {torch.__version__} is built without CUDA)"
        raise BibInputError(f"--device {spec}: {what} here{build if want.startswith('cuda') else ''}; "
                            f"available: {', '.join(have)}")
    return want


def uses_torch(model: Any) -> bool:
    """True for a model that runs on a torch device: a ``torch.nn.Module`` or a learned observer (``net``)."""
    torch = sys.modules.get("torch")
    return torch is not None and (isinstance(model, torch.nn.Module) or isinstance(getattr(model, "net", None), torch.nn.Module))


def place(model: Any, device: str) -> Any:
    """Move ``model`` to ``device`` (a resolved device): a learned observer through its ``to_device``, a
    ``torch.nn.Module`` with ``.to``; anything else is returned as it is. On ``cpu`` nothing moves."""
    if device == "cpu" or not uses_torch(model):
        return model
    mover = getattr(model, "to_device", None)
    if callable(mover):
        mover(device)
    else:
        model.to(device)
    return model


def device_for(model: Any, spec: str = "auto") -> str:
    """The resolved device ``model`` runs on for ``--device spec``: ``cpu`` for a model that does not use torch
    (unless a device was named: ``--device cuda`` where there is none is refused whatever the model)."""
    check_device(spec)
    if spec in ("auto", "cpu") and not uses_torch(model):
        return "cpu"
    return resolve_device(spec)


@contextlib.contextmanager
def torch_threads(n: int) -> Iterator[None]:
    """Run the body with ``torch.set_num_threads(n)`` (restored afterwards; n <= 0 keeps the setting, and so
    does a process that has not imported torch: a user's model that does not use it never imports it here).

    Small per-step tensors gain nothing from intra-op threads, and on a shared machine the
    thread pool's spinning makes them several times slower (measured: 1 thread scored 156
    episodes/s, 2 threads 28, on a loaded 2-core VM), so scoring and training default to 1.
    """
    torch = sys.modules.get("torch")
    if torch is None or n <= 0:
        yield
        return
    old = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(old)
