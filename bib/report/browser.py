"""Headless Chromium for the browser tests, the page-load benchmark and the docs' screenshots.

Uses the system's Chromium and chromedriver (Debian's ``chromium`` and ``chromium-driver``) through
selenium (the ``test`` extra). Chromium is started with flags that keep it off the network (no
background networking, component updates, sync or QUIC) and a fresh profile folder.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

CHROMIUM_CANDIDATES = ("/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome")
DRIVER_CANDIDATES = ("/usr/bin/chromedriver", "/usr/lib/chromium/chromedriver")
FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-dev-shm-usage", "--autoplay-policy=no-user-gesture-required", "--mute-audio",
)


def _first(paths: tuple[str, ...], env: str) -> str | None:
    given = os.environ.get(env)
    if given:
        return given if Path(given).exists() else None
    return next((p for p in paths if Path(p).exists()), None)


def missing() -> str | None:
    """Why a browser cannot be started here (None when it can)."""
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install -e '.[test]')"
    if _first(CHROMIUM_CANDIDATES, "BIB_CHROMIUM") is None:
        return "Chromium is not installed (apt-get install chromium chromium-driver)"
    if _first(DRIVER_CANDIDATES, "BIB_CHROMEDRIVER") is None:
        return "chromedriver is not installed (apt-get install chromium-driver)"
    return None


@contextmanager
def chromium(width: int = 1280, height: int = 900, downloads: str | os.PathLike[str] | None = None,
             flags: tuple[str, ...] = ()) -> Iterator[Any]:
    """A selenium Chrome driver on headless Chromium with a fresh profile; quit and cleaned up on exit.

    Args:
        width, height: window size.
        downloads: a folder that receives downloads without asking.
        flags: more command-line flags (e.g. a fake webcam for the recording tests).
    """
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    reason = missing()
    if reason:
        raise RuntimeError(reason)
    profile = tempfile.mkdtemp(prefix="bib-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = _first(CHROMIUM_CANDIDATES, "BIB_CHROMIUM")  # type: ignore[assignment]
    for flag in (*FLAGS, *flags):
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={profile}")
    options.add_argument(f"--window-size={width},{height}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    if downloads is not None:
        options.add_experimental_option("prefs", {
            "download.default_directory": str(downloads), "download.prompt_for_download": False,
            "profile.default_content_setting_values.automatic_downloads": 1,
        })
    driver = webdriver.Chrome(options=options, service=Service(_first(DRIVER_CANDIDATES, "BIB_CHROMEDRIVER")))
    try:
        if downloads is not None:
            driver.execute_cdp_cmd("Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": str(downloads)})
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def wait_for(driver: Any, script: str, timeout: float = 20.0, every: float = 0.1) -> Any:
    """Run ``script`` in the page every ``every`` seconds until it returns something truthy (returned),
    or ``timeout`` seconds have passed (its last value is returned)."""
    import time

    deadline = time.monotonic() + timeout
    value = None
    while time.monotonic() < deadline:
        value = driver.execute_script(script)
        if value:
            return value
        time.sleep(every)
    return value


def console_errors(driver: Any) -> list[str]:
    """Console messages of level SEVERE since the last call (Chromium's JS errors, failed loads)."""
    return [e["message"] for e in driver.get_log("browser") if e.get("level") == "SEVERE"]


def screenshot(driver: Any, url: str, path: str | os.PathLike[str], full_height: bool = False) -> None:
    """Open ``url`` and save a PNG of the window (or of the whole page height)."""
    driver.get(url)
    if full_height:
        height = driver.execute_script("return document.documentElement.scrollHeight")
        driver.set_window_size(driver.get_window_size()["width"], min(int(height) + 100, 4000))
    driver.save_screenshot(str(path))
