"""The documentation: its Python code blocks run, and it links to nothing outside the repository.

Every fenced ``python`` block of ``README.md`` and ``docs/*.md`` is executed, page by page in
order, in one namespace per page, in a fresh working directory (so pages may write ``out/...``).
Blocks in other languages (``bash``, ``toml``, ``text``) are shown, not run.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md")])
FENCE = re.compile(r"^```python[^\n]*\n(.*?)^```", re.S | re.M)
LINK = re.compile(r"\]\(([^)\s]+)")


def python_blocks(text: str) -> list[tuple[int, str]]:
    """``(line, code)`` of every fenced python block."""
    return [(text[: m.start()].count("\n") + 2, m.group(1)) for m in FENCE.finditer(text)]


@pytest.mark.parametrize("page", [p for p in PAGES if python_blocks(p.read_text(encoding="utf-8"))],
                         ids=lambda p: p.relative_to(ROOT).as_posix())
def test_python_blocks_run(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("BIB_NO_PROGRESS", "1")
    namespace: dict[str, object] = {"__name__": "__docs__"}
    for line, code in python_blocks(page.read_text(encoding="utf-8")):
        exec(compile(code, f"{page.relative_to(ROOT)}:{line}", "exec"), namespace)  # noqa: S102


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_nothing_links_outside_the_repository(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    assert "shared/" not in text, f"{page.name} refers to shared/, which is not in the repository"
    for target in LINK.findall(text):
        if re.match(r"[a-z]+://|#|mailto:", target):
            continue
        resolved = (page.parent / target.split("#")[0]).resolve()
        assert resolved.is_relative_to(ROOT), f"{page.name}: link {target} leaves the repository"
        assert resolved.exists(), f"{page.name}: link {target} points to nothing"


#: The guides for model builders (issue 42): their code uses only the blind routes (bib.train, bib.score, bib.data's
#: default), never a route that hands a model open episodes. Their Python blocks run above (test_python_blocks_run).
GUIDES = [ROOT / "docs" / name for name in ("score-your-model.md", "train-your-model.md", "guide-agent.md",
                                            "guide-analysis.md", "guide-lab.md")]
OPEN_ROUTES = re.compile(r"read_episodes\(|load_episode\(|open=True|\.fit\(|EpisodeRef\(")


@pytest.mark.parametrize("page", GUIDES, ids=lambda p: p.name)
def test_guides_use_only_blind_routes(page: Path) -> None:
    for line, code in python_blocks(page.read_text(encoding="utf-8")):
        found = OPEN_ROUTES.search(code)
        assert found is None, f"{page.name}:{line}: {found.group(0)!r} hands a model open episodes; use bib.train / bib.score"
