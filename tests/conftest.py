"""Shared fixtures: a CLI runner, the samples, and one headless Chromium per test module for the
pages' browser tests (skipped, saying why, where Chromium, chromedriver or Selenium is missing)."""

import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner

REPO = Path(__file__).resolve().parent.parent
SAMPLES = REPO / "samples"

# Test modules import helpers of other folders by folder: `from properties.test_tensor_random
# import Gen`.  The tests folder goes on the path, not the repository: there, `autodiff_cli` would
# be the checkout's rather than the installed package (whose engine is the compiled one).
sys.path.insert(0, str(Path(__file__).resolve().parent))


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


@pytest.fixture
def samples() -> Path:
    return SAMPLES


CHROMIUM_FLAGS = [
    "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run", "--window-size=1400,860",
]


def _find(*names: str) -> str | None:
    for name in names:
        found = shutil.which(name) or (name if os.path.isabs(name) and os.access(name, os.X_OK) else None)
        if found:
            return found
    return None


@pytest.fixture(scope="module")
def browser():
    webdriver = pytest.importorskip("selenium.webdriver",
                                    reason="Selenium is not installed (pip install '.[test]')")
    from selenium.webdriver.chrome.service import Service

    chromium = _find("chromium", "chromium-browser", "/usr/lib/chromium/chromium")
    driver_program = _find("chromedriver", "/usr/lib/chromium/chromedriver")
    if chromium is None or driver_program is None:
        pytest.skip("Chromium or chromedriver is not installed (Debian: apt-get install chromium "
                    "chromium-driver), so the page is not tested in a browser")
    profile = tempfile.mkdtemp(prefix="autodiff-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in [*CHROMIUM_FLAGS, f"--user-data-dir={profile}"]:
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(driver_program))
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)
