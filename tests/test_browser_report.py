"""`bib report` in headless Chromium: no console errors, every video loads and plays, every figure
loads, every link resolves."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest
from test_report import TABLE, build
from test_report import inputs as inputs  # noqa: F401 (the fixture)

from bib.report import browser
from bib.report.browser import wait_for

pytestmark = pytest.mark.skipif(browser.missing() is not None, reason=f"no browser: {browser.missing()}")


@pytest.fixture(scope="module")
def site(inputs: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:  # noqa: F811
    out = tmp_path_factory.mktemp("browser-site") / "site"
    build(inputs, out)
    return out


def test_every_page_loads_its_videos_figures_and_links(site: Path) -> None:
    assert TABLE.is_file()
    with browser.chromium(1200, 900) as driver:
        for page in sorted(site.glob("*.html")):
            driver.get(page.as_uri())
            assert wait_for(driver, "return document.readyState === 'complete'"), page.name
            # figures and contact sheets: loaded and decoded
            images = wait_for(driver, "var im = Array.from(document.images);"
                                  "return im.every(i => i.complete) ? im.map(i => [i.src, i.naturalWidth]) : null")
            assert images is not None, page.name
            assert all(w > 0 for _, w in images), (page.name, images)
            # videos: metadata loaded, a duration, and they play
            n_videos = driver.execute_script("return document.querySelectorAll('video').length")
            if n_videos:
                # preload="none" (a page of 200 videos must load in < 1 s): load them now
                driver.execute_script("document.querySelectorAll('video').forEach(v => v.load())")
                ready = wait_for(driver, "var v = Array.from(document.querySelectorAll('video'));"
                                     "return v.every(x => x.readyState >= 1 || x.error) ? v.map(x => [x.readyState, x.duration, !!x.error]) : null")
                assert ready is not None and all(r >= 1 and d > 0 and not e for r, d, e in ready), (page.name, ready)
                driver.execute_script("document.querySelectorAll('video').forEach(v => { v.muted = true; v.play(); })")
                played = wait_for(driver, "var v = Array.from(document.querySelectorAll('video'));"
                                      "return v.every(x => x.currentTime > 0) ? v.map(x => x.currentTime) : null")
                assert played is not None, page.name
            # links: every local target exists
            hrefs = driver.execute_script("return Array.from(document.querySelectorAll('a[href], link[href], script[src]'))"
                                          ".map(a => a.href || a.src)")
            for href in hrefs:
                url = urlparse(href)
                assert url.scheme == "file", (page.name, href)
                assert Path(unquote(url.path)).exists(), (page.name, href)
            assert browser.console_errors(driver) == [], page.name


def test_manifest_filter(site: Path) -> None:
    from selenium.webdriver.common.by import By

    with browser.chromium() as driver:
        driver.get((site / "set-tiny-study-manifest.html").as_uri())
        visible = "return Array.from(document.querySelectorAll('#t tbody tr')).filter(r => r.style.display !== 'none').length"
        assert driver.execute_script(visible) == 4
        driver.find_element(By.CSS_SELECTOR, "input.column-filter[data-column='4']").send_keys("unexpected")
        assert driver.execute_script(visible) == 2
        driver.find_element(By.CSS_SELECTOR, "input.table-filter").send_keys("efficiency")
        assert driver.execute_script(visible) == 1
        assert driver.find_element(By.CSS_SELECTOR, "span.count").text == "1 of 4 rows"
        assert browser.console_errors(driver) == []
