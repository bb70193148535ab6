"""README's five-minute tour, followed as written, against the application served over HTTP.

The server is ``config.asgi.application`` under uvicorn (tests/mcpserver/conftest.py's ``mcp_url``): one process
serving admin, the dashboard and ``/mcp``, as ``./dev up`` does. Step 1's two lines come from the two commands
``./dev up`` runs to print them (``bootstrap_admin``, ``bootstrap_mcp_token``); the text is edited in admin through
a real headless Chromium (Debian's, driven by Playwright), clicking what the tour names; the call is README's own
bash block, run as a reader runs it (the MCP SDK's real client over HTTP), with only the port changed; the dashboard
must then count the call. Between the call and the dashboard the test does what ``./dev up``'s worker and beat do
(store the spooled events, compute the rollups), since beat would take up to 30 seconds.

Playwright's sync API runs an event loop in the test's thread, where Django refuses ORM calls: the database work
after the browser starts runs in a thread of its own.
"""

from __future__ import annotations

import io
import os
import re
import subprocess
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest
from django.core.management import call_command
from playwright.sync_api import Page, expect, sync_playwright

from tests.errcatalog.outcomes.recorder_support import celery_filesystem_broker
from tests.mcpserver.conftest import SERVED_TOOLSETS, catalog, mcp_url  # noqa: F401 (fixtures)

pytestmark = pytest.mark.django_db(transaction=True)

REPO_ROOT = Path(__file__).resolve().parent.parent
README = REPO_ROOT / "README.md"
CHROMIUM = os.environ.get("ERRCATALOG_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
LAPTOP = {"width": 1366, "height": 768}
README_URL = "http://127.0.0.1:8000"


def tour() -> str:
    text = README.read_text(encoding="utf-8")
    return text.split("## A five-minute tour", 1)[1].split("\n## ", 1)[0]


def found(pattern: str, text: str, flags: int = 0) -> str:
    match = re.search(pattern, text, flags)
    assert match, f"{pattern!r} not in:\n{text}"
    return match.group(1)


@dataclass
class Served:
    base_url: str
    printed: str  # what bootstrap_admin and bootstrap_mcp_token printed


@pytest.fixture
def served(mcp_url, catalog, settings, tmp_path, monkeypatch) -> Iterator[Served]:  # noqa: F811 (fixtures imported above)
    """The app as ``./dev up`` leaves it: the default catalog, the demo tools, an admin and the quickstart token,
    every call's outcome recorded into a spool folder (and the drain request to a broker folder of the test's)."""
    from errcatalog.outcomes import recorder

    settings.MCP = {**settings.MCP, "TOOLSETS": SERVED_TOOLSETS}
    settings.OUTCOMES = {**settings.OUTCOMES, "ENABLED": True, "SPOOL_DIR": str(tmp_path / "spool")}
    recorder.reset()
    base_url = mcp_url.removesuffix("/mcp")
    out = io.StringIO()
    monkeypatch.delenv("ERRCATALOG_ADMIN_PASSWORD", raising=False)  # a new user sets none: one is made and printed
    call_command("bootstrap_admin", stdout=out)
    call_command("bootstrap_mcp_token", url=mcp_url, stdout=out)
    with celery_filesystem_broker(tmp_path / "celery" / "queue", control_folder=tmp_path / "celery" / "control"):
        yield Served(base_url, out.getvalue())
    recorder.reset()


def edit_the_message(page: Page, base_url: str, password: str, section_name: str, message: str) -> None:
    """Step 2 as README words it: sign in as admin, the admin index's section, Template variants, search, open the
    code's row, Message, Save."""
    page.goto(f"{base_url}/admin/")
    page.fill("#id_username", "admin")
    page.fill("#id_password", password)
    page.click("input[type=submit]")
    page.wait_for_url(f"{base_url}/admin/")
    section = page.locator("#content-main .module").filter(
        has=page.get_by_role("caption").filter(has_text=section_name)
    )
    section.get_by_role("link", name="Template variants", exact=True).click()
    page.fill("#searchbar", "NOT_FOUND")
    page.press("#searchbar", "Enter")
    page.wait_for_url(re.compile(r"\?q=NOT_FOUND"))
    page.locator("#result_list tbody tr").get_by_role("link", name="NOT_FOUND", exact=True).click()
    assert page.input_value("#id_name") == "default"
    page.fill("#id_message", message)
    page.click("input[name=_save]")
    expect(page.locator("ul.messagelist .success")).to_have_count(1)


def the_call(base_url: str, key: str) -> str:
    """Step 3: README's one bash block, run by bash in the repository with TOKEN exported, as a reader runs it."""
    (block,) = re.findall(r"```bash\n(.*?)```", tour(), flags=re.DOTALL)
    assert README_URL in block
    result = subprocess.run(  # noqa: S603 (README's own block, the repository's .venv)
        ["/bin/bash", "-c", block.replace(README_URL, base_url)],
        cwd=REPO_ROOT,
        env={**os.environ, "TOKEN": key},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def worker_and_beat() -> None:
    """What ``./dev up``'s worker and beat do next: store the spooled events, recompute the rollups."""
    from django.db import connection

    from errcatalog.outcomes import ingest, recorder, rollups

    try:
        assert recorder.flush(timeout=10) is True
        assert ingest.drain() >= 1
        rollups.compute_due()
    finally:
        connection.close()


def cells(page: Page, dimension: str, key: str) -> dict[str, str] | None:
    """The calls and errors cells of a breakdown table's row, by the columns' data-column names; None without it."""
    return page.evaluate(
        """([dimension, key]) => {
            const table = document.getElementById(`ed-breakdown-${dimension}`);
            const columns = [...table.querySelectorAll("thead th")].map((th) => th.dataset.column);
            const row = [...table.querySelectorAll("tbody tr")].find((tr) => tr.dataset.key === key);
            if (!row) return null;
            const text = (column) => row.children[columns.indexOf(column)].textContent.trim();
            return {calls: text("calls"), errors: text("errors")};
        }""",
        [dimension, key],
    )


def test_the_readme_tour_works_as_written(served, tmp_path):
    text = tour()
    section_name = found(r"Under\s+\*([^*]+)\*,\s+open\s+\*Template\s+variants\*", text)
    message = found(r"Replace\s+the\s+text\s+of\s+\*Message\*\s+with\s+`([^`]+)`", text)
    # Step 1: the two lines the tour says ./dev up prints, in the form it shows them.
    assert "Admin user: admin / <password> (shown once; change it in admin)" in text
    password = found(r"Admin user: admin / (\S+) \(shown once; change it in admin\)", served.printed)
    assert "MCP client token 'quickstart' for admin (shown once): ec_…" in text
    key = found(r"MCP client token 'quickstart' for admin \(shown once\): (ec_\S+)", served.printed)

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = chromium.new_page(viewport=LAPTOP)
        # The one serving process builds its catalog snapshot again in the request that commits an edit.
        edit_the_message(page, served.base_url, password, section_name, message)

        # Step 3: the next call shows the new text, where the tour's expected output shows it.
        answer = the_call(served.base_url, key)
        assert answer.startswith("**Input Error**\n\nAPI error (404): " + message), answer
        shown = found(r"```\n(\*\*Input Error\*\*.*?)…\n```", text, re.DOTALL)
        assert answer.startswith(shown), (shown, answer)

        # Step 4: the dashboard, in the same admin session, counts the call under its tool and its code.
        with ThreadPoolExecutor(1) as thread:
            thread.submit(worker_and_beat).result()
        page.goto(f"{served.base_url}/dashboard/")
        assert cells(page, "tool", "get_document") == {"calls": "1", "errors": "1"}, page.inner_text("body")[:1000]
        assert cells(page, "code", "NOT_FOUND") == {"calls": "1", "errors": "1"}
        page.screenshot(path=Path(os.environ.get("ERRCATALOG_SCREENSHOT_DIR") or tmp_path) / "tour-dashboard.png")
        chromium.close()


def test_the_docs_tour_makes_the_readmes_call():
    """The documentation site's tour page repeats README's steps: its call is README's, which the test above runs."""
    page = (REPO_ROOT / "docs" / "get-started" / "tour.md").read_text(encoding="utf-8")
    assert re.findall(r"```bash\n(.*?)```", page, flags=re.DOTALL) == re.findall(
        r"```bash\n(.*?)```", tour(), flags=re.DOTALL
    )
    message = found(r"Replace\s+the\s+text\s+of\s+\*Message\*\s+with\s+`([^`]+)`", tour())
    assert f"with `{message}`" in page
