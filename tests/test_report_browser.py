"""The report in a real browser: headless Chromium opens the page from disk (issue #10).

Needs Debian's ``chromium`` and ``chromium-driver`` (``.ci/run`` installs
them) and selenium; skipped when either is missing. The screenshot is saved
under ``$OCP_ARTIFACTS`` (default: ``<tmp>/ocp-analytics-artifacts``) and its
path printed in the log, for CI to keep.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest

from tests.test_report import fleet_report

pytest.importorskip("altair")
webdriver = pytest.importorskip("selenium.webdriver")

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
CHARTS = {
    "headline",
    "rates_by_period",
    "rates_by_group",
    "flips",
    "sweep",  # the generated rules of seed 3 hold one with a runtime score
    "attempts_distribution",
    "tier_mix",
    "provisional",
    "quality",
}

pytestmark = pytest.mark.skipif(
    not (os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER)),
    reason="needs Debian's chromium and chromium-driver (apt-get install chromium chromium-driver)",
)


def _artifacts() -> Path:
    default = Path(tempfile.gettempdir()) / "ocp-analytics-artifacts"
    folder = Path(os.environ.get("OCP_ARTIFACTS", default))
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A report over 3,000 generated runs of eight teams, the last 90 days by week."""
    root = tmp_path_factory.mktemp("browser")
    title = "Acceptance report: generated fleet"
    _, _, files = fleet_report(root, 3000, 3, since="90d", out=root / "report.html", title=title)
    return files.html


@pytest.fixture(scope="module")
def driver(tmp_path_factory: pytest.TempPathFactory) -> Any:
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    opts = Options()
    opts.binary_location = CHROMIUM
    for flag in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
        "--hide-scrollbars",
        "--window-size=1100,900",
        f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}",
    ):
        opts.add_argument(flag)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    drv = webdriver.Chrome(options=opts, service=Service(executable_path=CHROMEDRIVER))
    try:
        yield drv
    finally:
        drv.quit()


def test_report_renders_in_chromium(
    page: Path, driver: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    from selenium.webdriver.common.by import By

    driver.get(page.as_uri())
    assert driver.title == "Acceptance report: generated fleet"
    errors = [e for e in driver.get_log("browser") if e["level"] in ("SEVERE", "ERROR")]
    assert errors == [], f"console errors: {errors}"

    drawn = {}
    for fig in driver.find_elements(By.CSS_SELECTOR, "figure.chart"):
        svg = fig.find_element(By.TAG_NAME, "svg")
        size = svg.size
        marks = svg.find_elements(By.CSS_SELECTOR, "path, rect, line, circle, text")
        drawn[fig.get_attribute("data-figure")] = (size["width"], size["height"], len(marks))
    assert set(drawn) == CHARTS, f"charts drawn: {sorted(drawn)}; empty notes instead of charts"
    for name, (w, h, marks) in drawn.items():
        assert w > 100 and h > 40 and marks > 5, f"chart {name} is {w}x{h} with {marks} marks"
    assert driver.find_elements(By.CSS_SELECTOR, "p.empty") == []

    height = driver.execute_script("return document.documentElement.scrollHeight")
    driver.set_window_size(1100, height + 40)
    shot = _artifacts() / "report-screenshot.png"
    assert driver.save_screenshot(str(shot))
    assert shot.stat().st_size > 10_000
    with capsys.disabled():
        print(f"\nreport screenshot (CI artifact): {shot}\nreport page: {page}")
