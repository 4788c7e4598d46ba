"""`bib cache clear`: empty the endpoint answer cache (issue 39; bounded anyway: docs/agency.md)."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Add the ``cache`` command group to ``app``."""
    sub = typer.Typer(help="bib's caches: the answers of language-model endpoints.", no_args_is_help=True)

    @sub.command()
    def clear() -> None:
        """Remove every cached endpoint answer ($XDG_CACHE_HOME/bib/endpoint, ~/.cache/bib/endpoint)."""
        from bib.agency.endpoint import cache_root, clear_cache

        files, size = clear_cache()
        typer.echo(f"removed {files} cached answer{'s' if files != 1 else ''} ({size / (1 << 20):.1f} MiB) "
                   f"from {cache_root()}")

    app.add_typer(sub, name="cache")
