"""Shared pytest setup: headless pygame and a fixed hypothesis profile."""

from __future__ import annotations

import os

os.environ.setdefault("SDL_VIDEODRIVER", "dummy")

from hypothesis import settings  # noqa: E402

settings.register_profile("bib", max_examples=60, deadline=None, derandomize=True)
settings.load_profile("bib")
