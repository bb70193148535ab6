"""README's five-minute tour, followed as written, against a ``./dev up`` of its own.

``./dev up`` runs as a new user runs it (tests/support/devup.py: a throwaway data folder, a free port) and without
``ERRCATALOG_ADMIN_PASSWORD``, so it makes the admin's password and prints it: step 1's two lines are read from what
it printed. The text is edited in admin through a real headless Chromium (Debian's, driven by Playwright), clicking
what the tour names; the call is README's own bash block, run as a reader runs it (the MCP SDK's real client over
HTTP), with only the base URL changed; the dashboard must then count the call. Only ``./dev up``'s Celery beat and
worker make that happen (beat asks every second for the recorded calls to be stored, the worker stores them, and a
new installation's dashboard reads the stored calls): the test reloads the page until it does, as the tour tells the
reader to.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect, sync_playwright

from tests.support import devup

REPO_ROOT = Path(__file__).resolve().parent.parent
README = REPO_ROOT / "README.md"
CHROMIUM = os.environ.get("ERRCATALOG_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
LAPTOP = {"width": 1366, "height": 768}
README_URL = "http://127.0.0.1:8000"
# The tour promises the count within a few seconds of the call, once the worker and beat are up; they start once the
# server answers, and on a busy two-core machine take up to about 20 seconds more to be ready.
DASHBOARD_SECONDS = 60.0


def tour() -> str:
    text = README.read_text(encoding="utf-8")
    return text.split("## A five-minute tour", 1)[1].split("\n## ", 1)[0]


def found(pattern: str, text: str, flags: int = 0) -> str:
    match = re.search(pattern, text, flags)
    assert match, f"{pattern!r} not in:\n{text}"
    return match.group(1)


@pytest.fixture
def served(tmp_path) -> Iterator[devup.DevUp]:
    """A ``./dev up`` of the test's own, as a new user starts it: no admin password given; stopped afterwards,
    whatever the test's outcome."""
    served = devup.start(tmp_path, admin_password=None)
    try:
        yield served
    finally:
        devup.stop(served)


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


def cells(page: Page, dimension: str, key: str) -> dict[str, str] | None:
    """The calls and errors cells of a breakdown table's row, by the columns' data-column names; None without the
    table or the row."""
    return page.evaluate(
        """([dimension, key]) => {
            const table = document.getElementById(`ed-breakdown-${dimension}`);
            if (!table) return null;
            const columns = [...table.querySelectorAll("thead th")].map((th) => th.dataset.column);
            const row = [...table.querySelectorAll("tbody tr")].find((tr) => tr.dataset.key === key);
            if (!row) return null;
            const text = (column) => row.children[columns.indexOf(column)].textContent.trim();
            return {calls: text("calls"), errors: text("errors")};
        }""",
        [dimension, key],
    )


def wait_for_the_count(page: Page, served: devup.DevUp, url: str) -> None:
    """Step 4: reload the dashboard until both rows show one call and one error; on timeout, fail with the page's
    text and the tails of the worker's and beat's logs."""
    counted = {"calls": "1", "errors": "1"}
    deadline = time.monotonic() + DASHBOARD_SECONDS
    while True:
        page.goto(url)
        shown = {"tool": cells(page, "tool", "get_document"), "code": cells(page, "code", "NOT_FOUND")}
        if shown == {"tool": counted, "code": counted}:
            return
        if time.monotonic() > deadline:
            pytest.fail(
                f"the dashboard did not count the call within {DASHBOARD_SECONDS:.0f} s: {shown}\n"
                f"--- page ---\n{page.inner_text('body')[:3000]}\n"
                f"--- worker.log ---\n{served.log_tail('worker.log')}\n"
                f"--- beat.log ---\n{served.log_tail('beat.log')}\n"
                f"--- ./dev up's stderr ---\n{served.stderr()[-3000:]}"
            )
        time.sleep(2)


def test_the_readme_tour_works_as_written(served, tmp_path):
    text = tour()
    section_name = found(r"Under\s+\*([^*]+)\*,\s+open\s+\*Template\s+variants\*", text)
    message = found(r"Replace\s+the\s+text\s+of\s+\*Message\*\s+with\s+`([^`]+)`", text)
    # Step 1: the two lines the tour says ./dev up prints, in the form it shows them.
    printed = served.printed()
    assert "Admin user: admin / <password> (shown once; change it in admin)" in text
    password = found(r"^Admin user: admin / (\S+) \(shown once; change it in admin\)$", printed, re.MULTILINE)
    assert "MCP client token 'quickstart' for admin (shown once): ec_…" in text
    key = found(r"^MCP client token 'quickstart' for admin \(shown once\): (ec_\S+)$", printed, re.MULTILINE)

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = chromium.new_page(viewport=LAPTOP)
            # ./dev up serves admin and /mcp from one process, which builds its catalog snapshot again in the
            # request that commits an edit: the next call is rendered from the new text.
            edit_the_message(page, served.base_url, password, section_name, message)

            # Step 3: the next call shows the new text, where the tour's expected output shows it.
            answer = the_call(served.base_url, key)
            assert answer.startswith("**Input Error**\n\nAPI error (404): " + message), answer
            shown = found(r"```\n(\*\*Input Error\*\*.*?)…\n```", text, re.DOTALL)
            assert answer.startswith(shown), (shown, answer)

            # Step 4: the dashboard, in the same admin session, counts the call under its tool and its code once
            # ./dev up's worker has stored it.
            wait_for_the_count(page, served, f"{served.base_url}/dashboard/")
            screenshots = Path(os.environ.get("ERRCATALOG_SCREENSHOT_DIR") or tmp_path)
            page.screenshot(path=screenshots / "tour-dashboard.png")
        finally:
            chromium.close()


def test_the_docs_tour_makes_the_readmes_call():
    """The documentation site's tour page repeats README's steps: its call is README's, which the test above runs."""
    page = (REPO_ROOT / "docs" / "get-started" / "tour.md").read_text(encoding="utf-8")
    assert re.findall(r"```bash\n(.*?)```", page, flags=re.DOTALL) == re.findall(
        r"```bash\n(.*?)```", tour(), flags=re.DOTALL
    )
    message = found(r"Replace\s+the\s+text\s+of\s+\*Message\*\s+with\s+`([^`]+)`", tour())
    assert f"with `{message}`" in page
