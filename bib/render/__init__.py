"""Rendering: procedural sprites, trial -> frames, and video writers."""

from __future__ import annotations

from bib.render.frames import RenderSettings, episode_frames, frame_count, trial_frames

__all__ = ["RenderSettings", "episode_frames", "frame_count", "trial_frames"]
