"""Page tests in a real browser: Debian's chromium, headless, driven by Playwright against
pytest-django's live server (and, where a run must happen, real Celery workers)."""
from __future__ import annotations

import os
import shutil
from pathlib import Path
from unittest import mock

import pytest
from playwright.sync_api import Page

from tests.executions.conftest import workers  # noqa: F401 - real worker processes on the test database
from tests.replay import load_demo

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = ROOT / "docs" / "screenshots"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking"]


@pytest.fixture
def no_tasks(settings):
    """Nothing sent to a worker: the test runs the nodes (drain) and the evaluation itself."""
    settings.NODE_RETRY_BACKOFF_SECONDS = 0
    with mock.patch("executions.tasks.run_node.apply_async"), mock.patch("quality.tasks.evaluate.apply_async"), \
            mock.patch("quality.derive_requests.tasks.raise_derive_requests.apply_async"):
        yield


@pytest.fixture
def demo_with_workers(workers, settings, tmp_path):  # noqa: F811 - `workers` is the fixture imported above
    """The demo loaded, and real workers that write in a workspace of the test's own."""
    settings.WORKSPACE_ROOT = tmp_path
    workers.env["WORKSPACE_ROOT"] = str(tmp_path)
    load_demo(tmp_path)
    return workers


@pytest.fixture(scope="session")
def browser():
    from playwright.sync_api import sync_playwright

    executable = shutil.which("chromium")
    if executable is None:
        pytest.fail("Debian's chromium is not installed: run bin/chromium-ensure (bin/test does)")
    # Playwright's sync API keeps an event loop in the test's thread; Django's ORM refuses to
    # run where a loop is running unless told that this is safe (it is: the loop is idle).
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, headless=True, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def page_for(browser, live_server, settings):
    """`page_for(user)`: a new browser page signed in as `user` (through a real session)."""
    from django.test import Client

    contexts = []

    def open_page(user):
        client = Client()
        client.force_login(user)
        context = browser.new_context(base_url=live_server.url, viewport={"width": 1440, "height": 900})
        context.add_cookies([{"name": settings.SESSION_COOKIE_NAME, "url": live_server.url,
                              "value": client.cookies[settings.SESSION_COOKIE_NAME].value}])
        context.set_default_timeout(15_000)
        contexts.append(context)
        return context.new_page()

    yield open_page
    for context in contexts:
        context.close()


def screenshot(page, name: str) -> None:
    """Save the page (or a part of it, a locator) as docs/screenshots/<name>.png (docs/pages.md
    shows them, two in the README) when SWITCHYARD_SCREENSHOTS=1 asks for them
    (`SWITCHYARD_SCREENSHOTS=1 bin/test tests/pages` draws them anew): a test run otherwise
    leaves the pictures as they are and spends no time encoding them."""
    if os.environ.get("SWITCHYARD_SCREENSHOTS") != "1":
        return
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    whole = {"full_page": True} if isinstance(page, Page) else {}
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), **whole)


@pytest.fixture
def demo(tmp_path, settings):
    """The demo's agents, workflows, knowledge rows and workspace files."""
    settings.WORKSPACE_ROOT = tmp_path
    load_demo(tmp_path)


def signed_in(user):
    """A Django test client signed in as `user`."""
    from django.test import Client

    client = Client()
    client.force_login(user)
    return client
