"""mkdocs hooks: pages quote facts from the code instead of copying them.

``<!-- bib:conditions -->`` in a page becomes the table of conditions and tasks of the task
registry (id, kind, family, BIB folder, what the expected and unexpected episodes show).
"""

from __future__ import annotations

from bib.results import markdown_table
from bib.tasks import REGISTRY, task_ids


def conditions_table() -> str:
    """The registry's tasks as a Markdown table, in registry order (evaluation, background, agent)."""
    rows = []
    for kind in ("evaluation", "background", "agent"):
        for tid in task_ids(kind):
            t = REGISTRY[tid]
            rows.append([f"`{t.id}`", kind, t.family.replace("_", " "), f"`{t.bib_folder}`" if t.bib_folder else "",
                         t.expected, t.unexpected])
    return markdown_table(["id", "kind", "family", "BIB folder", "expected (or: the episode)", "unexpected"], rows,
                          align="llllll")


def on_page_markdown(markdown: str, **kwargs: object) -> str:
    """Replace the markers of this module in a page."""
    return markdown.replace("<!-- bib:conditions -->", conditions_table())
