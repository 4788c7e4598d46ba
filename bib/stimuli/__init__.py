"""Stimulus sets: specs (TOML) and the streaming, resumable, parallel build of episodes and videos."""
