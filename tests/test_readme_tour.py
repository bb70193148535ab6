"""README's five-minute tour, followed exactly as written, against ``./dev up`` run as a new user runs it.

The admin password and the MCP key are the ones ``./dev up`` printed; the text is edited in admin through a real
headless Chromium (Debian's, driven by Playwright), clicking what the tour names; the call is README's own Python
block, run as a reader runs it (the SDK's real client over HTTP), with only the port changed; the dashboard must
then count the call, computed by the worker and beat ``./dev up`` started (rollups every 30 seconds).

Playwright's sync API runs an event loop in the test's thread; this test touches no database, only the served app.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
import urllib.request
from pathlib import Path

from playwright.sync_api import Page, sync_playwright

from tests import devup
from tests.devup import REPO_ROOT

README = REPO_ROOT / "README.md"
CHROMIUM = os.environ.get("ERRCATALOG_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
LAPTOP = {"width": 1366, "height": 768}
README_URL = "http://127.0.0.1:8000"


def tour() -> str:
    text = README.read_text(encoding="utf-8")
    return text.split("## A five-minute tour", 1)[1].split("\n## ", 1)[0]


def tour_call_block() -> str:
    """The tour's one bash block: the call a reader pastes into a terminal."""
    (block,) = re.findall(r"```bash\n(.*?)```", tour(), flags=re.DOTALL)
    return block


def printed(pattern: str, output: str) -> str:
    found = re.search(pattern, output)
    assert found, f"./dev up did not print {pattern!r}:\n{output}"
    return found.group(1)


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
    assert page.locator("ul.messagelist .success").count() == 1, page.inner_text("#content")[:500]


def served_revision(base_url: str) -> int:
    """The catalog revision the served process holds, as ``/health/`` reports it."""
    with urllib.request.urlopen(f"{base_url}/health/", timeout=10) as response:  # noqa: S310 (http://127.0.0.1)
        return json.load(response)["catalog"]["revision"]


def wait_for_a_revision_after(base_url: str, revision: int, *, seconds: float = 60.0) -> None:
    """The edit is served: the process rebuilt its snapshot after the commit (within a second on an idle machine;
    a loaded one may take longer, and a test asserts no timing)."""
    deadline = time.monotonic() + seconds
    while served_revision(base_url) <= revision:
        assert time.monotonic() < deadline, "the edit was never served"
        time.sleep(0.2)


def the_call(base_url: str, key: str) -> str:
    """Step 3: README's block, run by bash in the repository with TOKEN exported, as a reader runs it."""
    block = tour_call_block()
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


def counted_on_the_dashboard(page: Page, base_url: str, *, seconds: float = 75.0) -> None:
    """Step 4: reload the dashboard until the call is counted under its tool and code (beat's rollups: 30 s)."""
    deadline = time.monotonic() + seconds
    while True:
        page.goto(f"{base_url}/dashboard/")
        tool = page.locator("#ed-breakdown-tool tbody tr[data-key='get_document']")
        if tool.count() == 1:
            break
        assert time.monotonic() < deadline, page.inner_text("body")[:1000]
        page.wait_for_timeout(2000)
    # One call, one error, under the tool and under the code (other tests may share this ./dev up, never this tool).
    assert cells(page, "tool", "get_document") == {"calls": "1", "errors": "1"}
    assert cells(page, "code", "NOT_FOUND") == {"calls": "1", "errors": "1"}


def cells(page: Page, dimension: str, key: str) -> dict[str, str]:
    """The calls and errors cells of a breakdown table's row, by the columns' data-column names."""
    return page.evaluate(
        """([dimension, key]) => {
            const table = document.getElementById(`ed-breakdown-${dimension}`);
            const columns = [...table.querySelectorAll("thead th")].map((th) => th.dataset.column);
            const row = [...table.querySelectorAll("tbody tr")].find((tr) => tr.dataset.key === key);
            const text = (column) => row.children[columns.indexOf(column)].textContent.trim();
            return {calls: text("calls"), errors: text("errors")};
        }""",
        [dimension, key],
    )


def test_the_readme_tour_works_as_written(dev_up, tmp_path):
    text = tour()
    section_name = printed(r"Under\s+\*([^*]+)\*,\s+open\s+\*Template\s+variants\*", text)
    message = printed(r"Replace\s+the\s+text\s+of\s+\*Message\*\s+with\s+`([^`]+)`", text)
    output = dev_up.printed()
    # Step 1: the two lines the tour says ./dev up prints.
    # tests/devup.py chooses the password (ERRCATALOG_ADMIN_PASSWORD), so ./dev up names the variable instead.
    assert "Admin user: admin (password from ERRCATALOG_ADMIN_PASSWORD)" in output, output
    password = devup.ADMIN_PASSWORD
    key = printed(r"MCP client token 'quickstart' for admin \(shown once\): (ec_\S+)", output)

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = chromium.new_page(viewport=LAPTOP)
        before = served_revision(dev_up.base_url)
        edit_the_message(page, dev_up.base_url, password, section_name, message)
        wait_for_a_revision_after(dev_up.base_url, before)

        # Step 3: the next call shows the new text, where the tour's expected output shows it.
        answer = the_call(dev_up.base_url, key)
        assert answer.startswith("**Input Error**\n\nAPI error (404): " + message), answer
        shown = re.search(r"```\n(\*\*Input Error\*\*.*?)…\n```", text, flags=re.DOTALL).group(1)
        assert answer.startswith(shown), (shown, answer)

        counted_on_the_dashboard(page, dev_up.base_url)
        page.screenshot(path=Path(os.environ.get("ERRCATALOG_SCREENSHOT_DIR") or tmp_path) / "tour-dashboard.png")
        chromium.close()
