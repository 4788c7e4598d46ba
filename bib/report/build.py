"""``bib report``: one static site from stimulus sets, evaluation results and analysis reports.

Layout of ``SITE/`` (flat, so every page reaches ``style.css`` and ``table.js`` at the root):

* ``index.html``: the inputs and their pages;
* per stimulus set ``<slug>``: ``set-<slug>.html`` (overview), ``set-<slug>-<condition>.html``
  (expected and unexpected side by side: linked videos and contact sheets; a condition with more
  than ``pairs_per_page`` pairs continues on ``set-<slug>-<condition>-page<k>.html``),
  ``set-<slug>-manifest.html`` (filterable) and ``set-<slug>-orders.html``; contact sheets under
  ``sheets/<slug>/``;
* ``evaluation.html`` (every evaluation input together, with the published anchors) and
  ``figures/evaluation.svg``;
* per analysis report ``<slug>``: ``analysis-<slug>.html`` and ``figures/analysis-<slug>-*.svg``;
* per ``bib profile`` output ``<slug>``: one agent's ``profile-<slug>.html``, or a table of agents'
  ``profiles-<slug>.html`` with each agent's ``profile-<slug>-<agent>.html``; figures
  ``figures/profile-*.svg``.

Pages hold no dates, so the same inputs give the same site; ``provenance.json`` records the command
line, version and times.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
import re
import shutil
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bib.errors import BibInputError
from bib.report import figures
from bib.report.inputs import (
    AnalysisReport,
    AuditReport,
    Evaluation,
    Input,
    ProfileReport,
    StimulusSet,
    malformed,
    read_inputs,
)
from bib.report.site import Site, building, is_site, output_folder

#: Contact sheets: frames of the test trial, in one row, at this many pixels per cell.
SHEET_FRAMES = 6
SHEET_CELL_PX = 12
DEFAULT_PAIRS = 100
#: Pairs per condition page: a page holds two ``<video>`` elements per pair, and Chromium takes about
#: 5 ms to set each one up even with ``preload="none"`` (200 videos kept a 100-pair page's load event
#: waiting 1.0-1.6 s), so longer conditions continue on further pages.
DEFAULT_PAIRS_PER_PAGE = 20
FIGURE_WIDTH = 760


def slugify(text: str) -> str:
    """A file-name-safe lower-case slug."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "input"


@dataclass(frozen=True)
class SheetJob:
    """One contact sheet to draw: the episode file, the PNG, the render settings, and the poster PNG
    (the first frame of the episode's video, shown by its player before it plays)."""

    episode: str
    png: str
    settings: Any
    poster: str = ""


def draw_sheet(job: SheetJob) -> tuple[int, int]:
    """Draw a contact sheet of the episode's test trial; return its ``(width, height)``."""
    from bib.episode import load_episode
    from bib.render.video import contact_sheet

    ep = load_episode(job.episode)
    img = contact_sheet(ep.test, job.png, job.settings, n=SHEET_FRAMES, columns=SHEET_FRAMES)
    if job.poster:
        contact_sheet(ep.trials[0], job.poster, job.settings, n=1, columns=1, spacing=0)  # the video's first frame
    return int(img.shape[1]), int(img.shape[0])


def _png_size(path: Path) -> tuple[int, int]:
    with path.open("rb") as fh:  # the IHDR chunk's width and height: the first 24 bytes, not the whole image
        head = fh.read(24)
    return int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")


def sheet_settings(data: StimulusSet) -> Any:
    """The set's render settings (defaults for a ``--task`` set) at thumbnail size, without letterbox."""
    from bib.render.frames import RenderSettings

    base = data.spec.render.settings() if data.spec is not None else RenderSettings()
    return dataclasses.replace(base, cell_px=SHEET_CELL_PX, canvas=None)


@dataclass
class Page:
    """A page of the site: its title and file."""

    title: str
    page: str


class ReportBuilder:
    """Builds the pages of every input into a :class:`Site`."""

    def __init__(self, site: Site, inputs: list[Input], *, pairs: int, workers: int, version: str,
                 pairs_per_page: int = DEFAULT_PAIRS_PER_PAGE) -> None:
        self.site = site
        self.inputs = inputs
        self.pairs = pairs
        self.pairs_per_page = pairs_per_page
        self.workers = workers
        self.version = version
        self.nav: list[Page] = []
        self.pages: dict[int, list[Page]] = {}
        self._slugs: Counter[str] = Counter()
        self.sheet_jobs: list[tuple[SheetJob, Path | None]] = []
        self._condition_pages: list[tuple[Any, ...]] = []

    def slug(self, label: str) -> str:
        base = slugify(label)
        self._slugs[base] += 1
        return base if self._slugs[base] == 1 else f"{base}-{self._slugs[base]}"

    def _check_names(self) -> None:
        """Conditions, agents and observers that would share a page or figure name (``Pref`` and ``pref``)
        are refused before any page is written, never merged into one."""
        from bib.guard import distinct_names

        for inp in self.inputs:
            data = inp.data
            if isinstance(data, StimulusSet):
                distinct_names(dict.fromkeys(r["condition"] for r in data.rows), slugify, "conditions", str(inp.path))
            elif isinstance(data, ProfileReport) and data.is_table:
                distinct_names([a.doc["agent"]["name"] for a in data.agents], slugify, "agents", str(inp.path))
        observers = [r["observer"] for i in self.inputs if isinstance(i.data, Evaluation) for r in i.data.rows]
        distinct_names(dict.fromkeys(observers), slugify, "observers", "the evaluations")

    def render(self, rel: str, template: str, title: str, **context: Any) -> None:
        made_by = context.pop("made_by", "")
        self.site.page(rel, template, title=title, nav=self.nav, page=rel, version=self.version, made_by=made_by, **context)

    # ------------------------------------------------------------ plan

    def plan(self) -> None:
        """Decide every page (so the navigation is complete before any page is written)."""
        evaluations = [i for i in self.inputs if i.kind in ("evaluation", "audit")]
        self._check_names()
        for k, inp in enumerate(self.inputs):
            if inp.kind == "stimuli":
                slug = self.slug(inp.label)
                inp.slug = slug  # type: ignore[attr-defined]
                data = inp.data
                assert isinstance(data, StimulusSet)
                self.pages[k] = [Page(f"set {inp.label}", f"set-{slug}.html"), Page("manifest", f"set-{slug}-manifest.html")]
                if data.orders:
                    self.pages[k].append(Page("orders", f"set-{slug}-orders.html"))
            elif inp.kind == "analysis":
                slug = self.slug(inp.label)
                inp.slug = slug  # type: ignore[attr-defined]
                self.pages[k] = [Page(f"analysis {inp.label}", f"analysis-{slug}.html")]
            elif inp.kind == "profile":
                data = inp.data
                assert isinstance(data, ProfileReport)
                slug = self.slug(f"{'profiles' if data.is_table else 'profile'} {inp.label}")
                if data.is_table:
                    self.pages[k] = [Page(f"profiles {inp.label}", f"{slug}.html")]
                    self.pages[k] += [Page(a.doc["agent"]["name"], f"{slug}-{slugify(a.doc['agent']['name'])}.html")
                                      for a in data.agents]
                else:
                    self.pages[k] = [Page(f"profile {inp.label}", f"{slug}.html")]
            else:
                self.pages[k] = [Page("evaluation" if inp.kind == "evaluation" else "shortcut audit", "evaluation.html")]
        self.nav = [self.pages[k][0] for k in range(len(self.inputs))
                    if not (self.inputs[k].kind in ("evaluation", "audit") and self.inputs[k] is not evaluations[0])]

    # ------------------------------------------------------------ build

    def build(self, previous: Path | None) -> None:
        self.plan()
        self.site.copy_static(["style.css", "table.js"])
        done_eval = False
        for k, inp in enumerate(self.inputs):
            if inp.kind == "stimuli":
                with malformed(str(inp.path)):
                    self.stimulus_pages(inp, previous)
            elif inp.kind == "analysis":
                with malformed(str(inp.path)):
                    self.analysis_page(inp)
            elif inp.kind == "profile":
                with malformed(str(inp.path)):
                    self.profile_pages(k, inp)
            elif not done_eval:
                evaluations = [i for i in self.inputs if i.kind in ("evaluation", "audit")]
                with malformed(", ".join(str(i.path) for i in evaluations)[:300]):
                    self.evaluation_page([i for i in evaluations if i.kind == "evaluation"],
                                         [i for i in evaluations if i.kind == "audit"])
                done_eval = True
        self.draw_sheets()
        index = [{"kind": inp.kind, "path": str(inp.path), "pages": self.pages[k]} for k, inp in enumerate(self.inputs)]
        self.render("index.html", "index.html", "Report", inputs=index)

    # ------------------------------------------------------------ stimuli

    def stimulus_pages(self, inp: Input, previous: Path | None) -> None:
        data = inp.data
        assert isinstance(data, StimulusSet)
        slug = inp.slug  # type: ignore[attr-defined]
        root = data.root.resolve()
        settings = sheet_settings(data)
        tag = hashlib.sha256(repr(settings).encode()).hexdigest()[:8]
        made_by = f"bib generate {data.spec.name}.toml (seed {data.spec.seed})" if data.spec is not None else ""
        manifest_page = f"set-{slug}-manifest.html"
        orders_page = f"set-{slug}-orders.html" if data.orders else ""
        by_condition: dict[str, list[dict[str, str]]] = {}
        for row in data.rows:
            by_condition.setdefault(row["condition"], []).append(row)
        conditions = []
        for cond, rows in by_condition.items():
            page = f"set-{slug}-{slugify(cond)}.html"
            items = self._condition_items(rows)
            shown = items if self.pairs == 0 else items[: self.pairs]
            cards = []
            for item_id, eps in shown:
                episodes = []
                for row in eps:
                    sheet = f"sheets/{slug}/{row['episode_id']}-{row['sha256'][:12]}-{tag}.png"
                    poster = sheet[: -len(".png")] + "-poster.png" if row["video_path"] else ""
                    old = previous / sheet if previous is not None else None
                    reuse = old is not None and old.is_file() and (not poster or (previous / poster).is_file())
                    self.sheet_jobs.append((SheetJob(str(root / row["episode_path"]), str(self.site.path(sheet)), settings,
                                                     str(self.site.path(poster)) if poster else ""),
                                            old if reuse else None))
                    episodes.append({"outcome": row["outcome"], "episode_id": row["episode_id"], "n_steps": row["n_steps"],
                                     "video": str(root / row["video_path"]) if row["video_path"] else "", "poster": poster,
                                     "episode": str(root / row["episode_path"]), "sheet": sheet, "job": len(self.sheet_jobs) - 1})
                cards.append({"id": item_id, "episodes": episodes})
            n_pairs = len({r["pair_id"] for r in rows if r["pair_id"]})
            conditions.append({"condition": cond, "page": page, "n_pairs": n_pairs, "n_episodes": len(rows),
                               "shown": f"{len(shown)} {'pairs' if n_pairs else 'episodes'}", "cards": cards,
                               "total": len(items)})
        for c in conditions:
            intro = (f"{c['n_pairs']} pairs of condition {c['condition']}: each pair's expected and unexpected episodes side by "
                     f"side (the episode video, and a contact sheet of {SHEET_FRAMES} evenly spaced frames of the test trial)."
                     if c["n_pairs"] else
                     f"{c['n_episodes']} episodes of {c['condition']} (no pairs: a background task), each with a contact sheet "
                     f"of {SHEET_FRAMES} evenly spaced frames of its test trial.")
            cards, per = c["cards"], self.pairs_per_page
            chunks = [cards[k:k + per] for k in range(0, len(cards), per)] or [[]]
            pages = [c["page"]] + [c["page"].removesuffix(".html") + f"-page{k}.html" for k in range(2, len(chunks) + 1)]
            for k, (page, chunk) in enumerate(zip(pages, chunks)):
                first = k * per + 1
                pager = {"pages": pages, "current": k, "first": first, "last": first + len(chunk) - 1,
                         "shown": len(cards)} if len(pages) > 1 else None
                self._condition_pages.append((page, f"{inp.label}: {c['condition']}", chunk, intro,
                                              c["total"], manifest_page, made_by, pager))
        render = ""
        if data.spec is not None:
            r = data.spec.render
            render = (f"{r.cell_px} px cells, {r.fps} fps, {r.speed} cells/s"
                      + (f", letterboxed {r.canvas[0]} x {r.canvas[1]}" if r.canvas else "") + f", codec {r.codec}")
        from bib.stimuli.build import built_limit

        limit = built_limit(data.root)
        self.render(f"set-{slug}.html", "set.html", f"Stimulus set {inp.label}" + (f" (--limit {limit})" if limit else ""),
                    limit=limit, set_root=str(data.root),
                    spec=data.spec, n_episodes=len(data.rows), has_video=any(r["video_path"] for r in data.rows),
                    n_orders=len({o["order"] for o in data.orders}), render=render, conditions=conditions,
                    manifest_page=manifest_page, orders_page=orders_page, made_by=made_by)
        self._manifest_page(inp, manifest_page, made_by)
        if data.orders:
            self._orders_page(inp, orders_page, made_by)

    @staticmethod
    def _condition_items(rows: list[dict[str, str]]) -> list[tuple[str, list[dict[str, str]]]]:
        """Pairs (expected first) in pair order, or single episodes for unpaired tasks."""
        paired: dict[str, list[dict[str, str]]] = {}
        single: list[tuple[str, list[dict[str, str]]]] = []
        for row in rows:
            if row["pair_id"]:
                paired.setdefault(row["pair_id"], []).append(row)
            else:
                single.append((row["episode_id"], [row]))
        rank = {"expected": 0, "unexpected": 1}
        items = [(pid, sorted(eps, key=lambda r: rank.get(r["outcome"], 2))) for pid, eps in sorted(paired.items())]
        return items + sorted(single)

    def _manifest_page(self, inp: Input, rel: str, made_by: str) -> None:
        from bib.stimuli.manifest import COLUMNS

        data = inp.data
        assert isinstance(data, StimulusSet)
        root = data.root.resolve()
        links = {"episode_path", "video_path"}
        rows = [[{"text": row[c], "link": str(root / row[c]) if c in links and row[c] else ""} for c in COLUMNS if c != "sha256"]
                for row in data.rows]
        header = [c for c in COLUMNS if c != "sha256"]
        self.render(rel, "table.html", f"{inp.label}: manifest", header=header, rows=rows, made_by=made_by,
                    intro=f"Every episode of {data.root}/manifest.csv ({len(rows)} rows; the sha256 column is left out). "
                          "Type in the boxes to filter.")

    def _orders_page(self, inp: Input, rel: str, made_by: str) -> None:
        data = inp.data
        assert isinstance(data, StimulusSet)
        root = data.root.resolve()
        by_order: dict[int, list[dict[str, str]]] = {}
        for row in data.orders:
            by_order.setdefault(int(row["order"]), []).append(row)
        n = len(by_order)
        orders = []
        for o in sorted(by_order):
            rows = [{**r, "video": str(root / r["video_path"]) if r["video_path"] else "",
                     "video_name": Path(r["video_path"]).name} for r in sorted(by_order[o], key=lambda r: int(r["position"]))]
            participants = ", ".join(str(i) for i in range(o, o + 3 * n + 1, n)) + ", ..."
            orders.append({"order": o, "rows": rows, "participants": participants})
        self.render(rel, "orders.html", f"{inp.label}: presentation orders", n_orders=n, orders=orders,
                    set_root=str(data.root), made_by=made_by)

    def draw_sheets(self) -> None:
        """Draw (or reuse from the previous site) every contact sheet, then write the condition pages."""
        from bib.parallel import map_ordered
        from bib.progress import track

        sizes: dict[int, tuple[int, int]] = {}
        todo = []
        for k, (job, old) in enumerate(self.sheet_jobs):
            target = Path(job.png)
            if old is not None:
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(old, target)
                if job.poster:
                    shutil.copyfile(old.parent / Path(job.poster).name, job.poster)
                sizes[k] = _png_size(target)
            else:
                Path(job.png).parent.mkdir(parents=True, exist_ok=True)
                todo.append(k)
        if todo:
            results = map_ordered(draw_sheet, [self.sheet_jobs[k][0] for k in todo], workers=min(self.workers, len(todo)))
            for size, k in zip(track(results, total=len(todo), description="contact sheets"), todo):
                sizes[k] = size
        for page, title, cards, intro, total, manifest_page, made_by, pager in self._condition_pages:
            for card in cards:
                for ep in card["episodes"]:
                    ep["sheet_w"], ep["sheet_h"] = sizes[ep["job"]]
            shown = pager["shown"] if pager else len(cards)
            self.render(page, "condition.html", title, items=cards, intro=intro, truncated=shown < total, shown=shown,
                        total=total, manifest_page=manifest_page, made_by=made_by, pager=pager)

    # ------------------------------------------------------------ evaluation

    def evaluation_page(self, inputs: list[Input], audits: list[Input]) -> None:
        from bib.agent_table import AGENT_PUBLISHED, agent_board, read_agent_published
        from bib.evaluation import ANCHORS, few_pairs_warning, leaderboard, read_anchors
        from bib.tasks.registry import conditions, families

        rows: list[dict[str, str]] = []
        observers = []
        taken: set[str] = set()
        for inp in inputs:
            data = inp.data
            assert isinstance(data, Evaluation)
            # an observer named in two inputs is told apart by the input's label
            renamed = {n: n if n not in taken else f"{n} [{inp.label}]" for n in dict.fromkeys(r["observer"] for r in data.rows)}
            taken |= set(renamed.values())
            mine_rows = [{**r, "observer": renamed[r["observer"]]} for r in data.rows]
            rows += mine_rows
            names = list(renamed.values())
            ties = {c: v.get("n_ties", "") for c, v in (data.doc or {}).get("conditions", {}).items()}
            for name in names:
                mine = [r for r in mine_rows if r["observer"] == name]
                acc = {r["condition"]: 100 * float(r["accuracy"]) for r in mine}
                averages = [(fam, f"{sum(acc[c] for c in conds) / len(conds):.1f}") for fam, conds in families().items()
                            if all(c in acc for c in conds)]
                difficulty = self._difficulty(name, (data.doc or {}).get("difficulty"))
                observers.append({
                    "name": name, "slug": slugify(name), "source": str(inp.path), "difficulty": difficulty,
                    "stimuli": mine[0].get("stimuli", ""), "readout": mine[0].get("readout", ""),
                    "command": mine[0].get("command", ""), "averages": averages,
                    "warnings": [w for r in mine if str(r.get("n_pairs", "")).isdigit()
                                 and (w := few_pairs_warning(r["condition"], int(r["n_pairs"]))) is not None],
                    "rows": [{"condition": r["condition"], "accuracy": _pct(r["accuracy"]),
                              "ci": f"{_pct(r.get('ci_low'))}–{_pct(r.get('ci_high'))}" if r.get("ci_low") else "",
                              "n_pairs": r.get("n_pairs", ""), "n_ties": ties.get(r["condition"], "")} for r in mine],
                })
        anchors = read_anchors(ANCHORS) if ANCHORS.is_file() else []
        header, board = leaderboard(anchors, rows)
        present = [c for c in conditions() if any(r["condition"] == c for r in rows)]
        present += sorted({r["condition"] for r in rows} - set(present))
        series: dict[str, dict[str, tuple[float, float, float]]] = {}
        for r in rows:
            series.setdefault(r["observer"], {})[r["condition"]] = (
                float(r["accuracy"]), _float(r.get("ci_low")), _float(r.get("ci_high")))
        published: dict[str, dict[str, float]] = {}
        for a in anchors:
            if a["condition"] in present:
                published.setdefault(a["column"], {})[a["condition"]] = float(a["accuracy"]) / 100
        figure = "figures/evaluation.svg" if rows else ""
        if rows:
            figures.accuracy_bars(present, series, published, self.site.path(figure))
        sources = sorted({f"{a['column']}: {a['source']}" for a in anchors if a.get("source")})
        stimuli = sorted({r.get("stimuli", "") for r in rows} - {""})
        note = ("Published: original BIB v1.1 data (their tie rule gave ties full credit). Ours: "
                + ("; ".join(stimuli) or "sets generated by this package") + " (a tie counts 0.5).")
        agent_header, agent_rows, agent_note = agent_board(
            read_agent_published(AGENT_PUBLISHED) if AGENT_PUBLISHED.is_file() else [], rows)
        self.render("evaluation.html", "evaluation.html", "Evaluation", observers=observers, figure=figure,
                    figure_w=FIGURE_WIDTH, board_header=header, board_rows=board, board_note=note, sources=sources,
                    agent_header=agent_header, agent_rows=agent_rows, agent_note=agent_note,
                    audits=[self._audit(a) for a in audits])

    def _difficulty(self, name: str, doc: Any) -> dict[str, Any] | None:
        """Accuracy per difficulty bin (``bib evaluate``'s ``difficulty`` object): a table and a figure."""
        if not isinstance(doc, dict) or not doc.get("groups"):
            return None
        bins = [b for b in doc.get("bins", []) if any(b in g for g in doc["groups"].values())]
        rows = [{"group": group, "cells": [f"{_pct(g[b]['accuracy'])} ({g[b]['n_pairs']})" if b in g else "–" for b in bins]}
                for group, g in doc["groups"].items()]
        figure = f"figures/evaluation-{slugify(name)}-difficulty.svg"
        figures.difficulty_lines(bins, {group: {b: (float(v["accuracy"]), _float(v.get("ci_low")), _float(v.get("ci_high")))
                                                for b, v in g.items()} for group, g in doc["groups"].items()},
                                 self.site.path(figure))
        return {"bins": bins, "rows": rows, "figure": figure}

    def _audit(self, inp: Input) -> dict[str, Any]:
        """The shortcut audit as a table (condition x shortcut), its failures and single-feature fits."""
        data = inp.data
        assert isinstance(data, AuditReport)
        doc = data.doc
        # every column the audit measured: the listed shortcuts first, then the single-feature, learned and leak cells
        shortcuts = list(dict.fromkeys([*(doc.get("shortcuts") or []),
                                        *(s for c in doc["conditions"].values() for s in c.get("shortcuts", {}))]))
        rows = []
        for cond, c in doc["conditions"].items():
            cells = []
            for name in shortcuts:
                cell = c.get("shortcuts", {}).get(name)
                cells.append({"text": f"{_pct(cell.get('accuracy'))}" if cell else "–", "status": (cell or {}).get("status", ""),
                              "title": (cell or {}).get("reason") or ""})
            rows.append({"condition": cond, "n_pairs": c.get("n_pairs", ""), "cells": cells})
        figure = ""
        if data.figure is not None:
            figure = f"figures/audit-{slugify(inp.label)}.svg"
            shutil.copyfile(data.figure, self.site.path(figure))
        band = doc.get("band") or [0.4, 0.6]
        sets = "; ".join(f"{s.get('name')} seed {s.get('seed')}" for s in doc.get("sets", []) if isinstance(s, dict))
        fits = [{"condition": c, **{k: v for k, v in f.items()}} for c, f in (doc.get("single_feature_fit") or {}).items()]
        return {"label": inp.label, "source": str(data.path), "sets": sets or doc.get("source", ""), "passed": doc.get("passed"),
                "band": f"{_pct(band[0])}–{_pct(band[1])}%", "shortcuts": shortcuts, "rows": rows, "figure": figure,
                "failures": doc.get("failures", []), "fits": fits, "split": doc.get("split", "")}

    # ------------------------------------------------------------ analysis

    def analysis_page(self, inp: Input) -> None:
        data = inp.data
        assert isinstance(data, AnalysisReport)
        slug = inp.slug  # type: ignore[attr-defined]
        doc = data.doc
        alpha = float(doc.get("alpha", 0.05))
        tasks = []
        for task, r in doc["tasks"].items():
            model = r.get("model") if isinstance(r.get("model"), dict) else {}
            tasks.append({"task": task, "formula": r.get("formula", ""), "estimate": _num(r.get("estimate")),
                          "ci": f"[{_num(r.get('ci_low'))}, {_num(r.get('ci_high'))}]", "p": _p(r.get("p")),
                          "df": _num(r.get("df"), 1), "n_participants": r.get("n_participants", ""),
                          "n_excluded": r.get("n_excluded", ""), "converged": r.get("converged", ""),
                          "singular": r.get("singular", ""), "warnings": r.get("warnings", []),
                          "dz": (f"{_num(r.get('dz'), 2)} [{_num(r.get('dz_ci_low'), 2)}, {_num(r.get('dz_ci_high'), 2)}]"
                                 if r.get("dz") is not None else ""),
                          "inference": r.get("inference", ""), "kept_because": r.get("kept_because", ""),
                          "ladder": r.get("ladder", []), "notes": r.get("notes", []),
                          "fixed": [{**f, "estimate": _num(f.get("estimate")), "se": _num(f.get("se")), "df": _num(f.get("df"), 1),
                                     "p": _p(f.get("p")), "ci": f"[{_num(f.get('ci_low'))}, {_num(f.get('ci_high'))}]"}
                                    for f in model.get("fixed_effects", [])],
                          "random": [{**g, "variance": _num(g.get("variance"), 4), "sd": _num(g.get("sd"), 4)}
                                     for g in model.get("random_effects", [])],
                          "residual_sd": _num(model.get("residual_sd"), 4) if model else ""})
        est_fig = f"figures/analysis-{slug}-estimates.svg"
        figures.estimates_plot([(t, _float(r.get("estimate")), _float(r.get("ci_low")), _float(r.get("ci_high")))
                                for t, r in doc["tasks"].items()],
                               f"outcome effect (unexpected − expected), {doc.get('scale', '')}", self.site.path(est_fig))
        pooled = None
        if doc.get("pooled"):
            p = doc["pooled"]
            test = p.get("interaction_test", {})
            pooled = {"formula": p.get("formula", ""), "df": test.get("df", ""), "chi2": _num(test.get("chi2")),
                      "p": _p(test.get("p")), "test": test.get("test", "Wald chi-square"), "reference": p.get("reference_task", ""), "warnings": p.get("warnings", []),
                      "rows": [{"task": t, "estimate": _num(c.get("estimate")), "ci": f"[{_num(c.get('ci_low'))}, {_num(c.get('ci_high'))}]",
                                "p": _p(c.get("p"))} for t, c in p.get("interaction", {}).items()]}
        ex = doc["exclusions"]
        dropped = [*ex.get("import_dropped", []), *ex.get("excluded", []), *ex.get("capped", [])]
        for r in ex.get("import_dropped", []):
            r.setdefault("step", "import")
        for r in ex.get("capped", []):
            r.setdefault("step", "max_look (capped)")
        if isinstance(ex.get("summary"), list):  # the report's own summary by reason (bib.analysis/2)
            reasons = [{"step": r.get("step", ""), "reason": r.get("reason", ""), "count": r.get("rows", 0)} for r in ex["summary"]]
        else:
            reasons_count = Counter((str(r.get("step", "")), str(r.get("reason", ""))) for r in dropped)
            reasons = [{"step": s, "reason": why, "count": n}
                       for (s, why), n in sorted(reasons_count.items(), key=lambda x: (-x[1], x[0]))]
        ex_fig = f"figures/analysis-{slug}-exclusions.svg"
        if reasons:
            figures.count_bars([f"{r['step']}: {r['reason']}" for r in reasons], [r["count"] for r in reasons],
                               "rows excluded, dropped or capped", self.site.path(ex_fig))
        plots = []
        for src in data.plots:
            rel = f"figures/analysis-{slug}-{src.name}"
            shutil.copyfile(src, self.site.path(rel))
            plots.append({"path": rel, "name": src.name})
        params = ", ".join(f"{k} = {v}" for k, v in ex.get("parameters", {}).items())
        self.render(f"analysis-{slug}.html", "analysis.html", f"Analysis {inp.label}", doc=doc, path=str(data.path),
                    ci_level=f"{1 - alpha:.0%}", tasks=tasks, estimates_figure=est_fig, figure_w=FIGURE_WIDTH,
                    pooled=pooled, steps=ex.get("steps", []), parameters=params or "defaults",
                    n_dropped=len(ex.get("import_dropped", [])), n_excluded=len(ex.get("excluded", [])),
                    n_capped=len(ex.get("capped", [])), reasons=reasons, dropped=dropped, exclusions_figure=ex_fig,
                    plots=plots)

    # ------------------------------------------------------------ profiles

    def profile_pages(self, k: int, inp: Input) -> None:
        """One agent's profile page, or a table of agents with one page per agent found beside it."""
        data = inp.data
        assert isinstance(data, ProfileReport)
        pages = self.pages[k]
        if not data.is_table:
            self._profile_page(data, pages[0].page, pages[0].page.removesuffix(".html"))
            return
        from bib.profile.result import HEADLINE_COLUMNS, Profile, ProfileTable, fmt_summary

        agent_pages = {a.doc["agent"]["name"]: page.page for a, page in zip(data.agents, pages[1:])}
        rows = [{"agent": a["agent"], "page": agent_pages.get(a["agent"], ""),
                 "cells": [fmt_summary(a.get(key), digits, signed) for key, _, digits, signed in HEADLINE_COLUMNS]}
                for a in data.doc["agents"]]
        stem = pages[0].page.removesuffix(".html")
        figure = f"figures/{stem}.svg"
        if data.figure is not None:
            shutil.copyfile(data.figure, self.site.path(figure))
        elif len(data.agents) == len(rows):
            figures.save_svg(ProfileTable([Profile.from_json(a.doc) for a in data.agents]).plot(), self.site.path(figure))
        else:
            figure = ""
        settings = data.doc.get("settings") or {}
        self.render(pages[0].page, "profiles.html", f"Profiles {inp.label}", path=str(data.path), rows=rows,
                    header=[h for _, h, _, _ in HEADLINE_COLUMNS], figure=figure, settings=_profile_settings(settings),
                    made_by=data.doc.get("command", ""))
        for agent, page in zip(data.agents, pages[1:]):
            self._profile_page(agent, page.page, page.page.removesuffix(".html"), table=pages[0])

    def _profile_page(self, data: ProfileReport, page: str, stem: str, table: Page | None = None) -> None:
        from bib.profile.result import Profile, fmt_summary, fmt_value

        p = Profile.from_json(data.doc)
        s = p.settings
        figure = f"figures/{stem}.svg"
        if data.figure is not None:
            shutil.copyfile(data.figure, self.site.path(figure))
        else:
            figures.save_svg(p.plot(), self.site.path(figure))
        actor = [{"condition": c, "steps": fmt_value(p.actor["per_condition"].get(c, {}).get("steps"), 1),
                  "reached": fmt_value(p.actor["per_condition"].get(c, {}).get("reached_goal"), 2),
                  "optimal": fmt_value(p.actor["per_condition"].get(c, {}).get("optimal"), 2),
                  "known": fmt_value(p.meg["per_condition"].get(c, {}).get("known"), 2),
                  "unknown": fmt_value(p.meg["per_condition"].get(c, {}).get("unknown"), 2)} for c in s["conditions"]]
        actor_all = {"steps": fmt_summary(p.actor["steps"], 1), "reached": fmt_summary(p.actor["reached_goal"], 2),
                     "optimal": fmt_summary(p.actor["optimal"], 2), "known": fmt_summary(p.meg["known"], 2),
                     "unknown": fmt_summary(p.meg["unknown"], 2)}
        sr = p.self_reflection
        rules = [n for n in s["battery"] if not n.startswith("opposite(")]
        battery = [{"rule": n, **{f"{which}{'_opp' if opp else ''}": fmt_value(
            sr[which]["environments"].get(f"opposite({n})" if opp else n), 3, True)
            for which in ("plain", "reality_check") for opp in (False, True)}} for n in rules]

        def arm(d: dict[str, Any]) -> dict[str, str]:
            return {"score": fmt_summary(d["score"], 4, True), "paper": fmt_value(d.get("stderr_paper"), 4),
                    "steps": str(d.get("steps_per_environment", ""))}

        classic = sr.get("classic")
        agency_keys = ("accuracy", "success", "spl", "entropy", "jsd", "meg", "bumps", "invalid")
        surprise = [{"observer": name, "agent": fmt_summary(v["agent"], 2), "expected": fmt_summary(v["expected"], 2),
                     "unexpected": fmt_summary(v["unexpected"], 2), "below": fmt_value(v.get("below_unexpected"), 2)}
                    for name, v in p.surprise.items()]
        self.render(page, "profile.html", f"Profile of {p.agent['name']}", path=str(data.path), agent=p.agent,
                    settings=_profile_settings(s), figure=figure, actor=actor, actor_all=actor_all,
                    upper_bound=fmt_summary(p.meg.get("upper_bound"), 2), n_envs=len(s["battery"]),
                    plain=arm(sr["plain"]), rc=arm(sr["reality_check"]), battery=battery,
                    classic={"plain": arm(classic["plain"]), "rc": arm(classic["reality_check"])} if classic else None,
                    classic_steps=s.get("classic_steps", ""), agency_grids=p.agency.get("grids", ""),
                    agency=[(key, fmt_summary(p.agency.get(key), 3)) for key in agency_keys], surprise=surprise,
                    table=table, made_by=p.command)


def _profile_settings(s: dict[str, Any]) -> str:
    """One line of a profile's settings."""
    if not s:
        return ""
    agency = s.get("agency") or {}
    return (f"seeds {', '.join(map(str, s.get('seeds', [])))}; {s.get('units', '')} unit(s) per condition per seed in "
            f"{len(s.get('conditions', []))} condition(s), at most {s.get('max_moves', '')} moves per trial; "
            f"{len(s.get('battery', []))} extended environments; agency: {agency.get('navigation_grids', '')} navigation "
            f"grids and {agency.get('key_grids', '')} per key task per seed; observers: {', '.join(s.get('observers', []))}")


def _float(x: Any) -> float:
    try:
        return float(x)
    except (TypeError, ValueError):
        return math.nan


def _num(x: Any, digits: int = 3) -> str:
    v = _float(x)
    return "–" if math.isnan(v) else f"{v:.{digits}f}"


def _p(x: Any) -> str:
    """A p-value as the analysis reports print it (``< .001`` below one in a thousand)."""
    v = _float(x)
    return "–" if math.isnan(v) else ("< .001" if v < 0.001 else f"{v:.4f}")


def _pct(x: Any) -> str:
    v = _float(x)
    return "–" if math.isnan(v) else f"{100 * v:.1f}"


@dataclass
class ReportSummary:
    """What :func:`build_report` wrote."""

    out: Path
    pages: int
    sheets: int
    inputs: list[tuple[str, str]]


def build_report(paths: list[Path], out: Path, *, command: str, pairs: int = DEFAULT_PAIRS, workers: int = 1,
                 force: bool = False, pairs_per_page: int = DEFAULT_PAIRS_PER_PAGE) -> ReportSummary:
    """Read and check every input, then build the site into a temporary folder and move it to ``out``.

    Raises:
        BibInputError: an input of no known kind, a set whose videos or episodes are missing, an
            unusable ``--out``; nothing is written then.
    """
    from bib import __version__

    if pairs_per_page < 1:
        raise BibInputError(f"pairs_per_page must be at least 1, got {pairs_per_page}")
    out = Path(out)
    folder = output_folder(out, "report", force)
    inputs = read_inputs(paths)
    previous = out.resolve() if is_site(out, "report") else None
    with building(folder, command, "bib.report") as site:
        builder = ReportBuilder(site, inputs, pairs=pairs, workers=workers, version=__version__, pairs_per_page=pairs_per_page)
        builder.build(previous)
        n_pages = sum(1 for _ in site.tmp.glob("*.html"))
    return ReportSummary(out, n_pages, len(builder.sheet_jobs), [(i.kind, str(i.path)) for i in inputs])

