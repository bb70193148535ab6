"""The ErrorCode change page in a real headless Chromium at 1366 by 768, the commonest laptop screen.

A writer opens MISSING_PARAMETER: the text they edit and the preview of what the model reads sit side by side in the
first screen, without a sideways scroll; the preview shows the text a client shows (not JSON) and says that the
model gets the question only and that parameter hints' questions replace the variant's. Typing into the question
re-renders the preview from the unsaved draft. Fixtures and helpers are the first-hour browser test's (Playwright
driving Debian's Chromium, requests to other hosts blocked); every database fixture is set up before the browser
starts, as Playwright's event loop makes Django refuse ORM calls in the test's thread.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, sync_playwright

from tests.errcatalog.test_first_hour_browser import CHROMIUM, CHROMIUM_ARGS, LAPTOP, Offline, sign_in

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def code_page(staff_user) -> dict:
    from errcatalog.catalog.defaults import catalog_load_defaults
    from errcatalog.catalog.models import ErrorCode, TemplateVariant
    from mcpserver.admin import served_sample_tools

    catalog_load_defaults(reset=False)
    code = ErrorCode.objects.get(code="MISSING_PARAMETER")
    variant = TemplateVariant.objects.get(error_code=code, name="default", locale="")
    # The tools served in this process (the demo's and any a test module registered) and their required parameters.
    served = {t.name: [p.name for p in t.required] for t in served_sample_tools()}
    return {"code": code.pk, "variant": variant.pk, "served": served}


@pytest.fixture
def browser(code_page, live_server) -> Iterator[Browser]:
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


def test_the_preview_sits_beside_the_text_and_says_which_text_wins(browser, live_server, code_page, tmp_path):
    page = browser.new_page(viewport=LAPTOP)
    offline = Offline(page, live_server.url)
    sign_in(page, live_server.url)
    page.goto(f"{live_server.url}/admin/errcatalog/errorcode/{code_page['code']}/change/")
    screenshots = Path(os.environ.get("ERRCATALOG_SCREENSHOT_DIR") or tmp_path)
    page.screenshot(path=screenshots / "admin-errorcode-missing-parameter.png")

    panel = page.locator(f".errcatalog-preview-panel[data-variant-id='{code_page['variant']}']")
    row = panel.locator("xpath=..")
    question = row.locator("textarea[name$='-question']")
    text_box, panel_box, question_box = question.bounding_box(), panel.bounding_box(), None
    question_box = text_box
    # Side by side: the preview starts right of the question field, at a height that overlaps it.
    assert panel_box["x"] >= question_box["x"] + question_box["width"]
    assert panel_box["y"] < question_box["y"] + question_box["height"]
    # Both in the first screen, or a short scroll away (the question field is the last of the wording).
    assert question_box["y"] + question_box["height"] < 2 * LAPTOP["height"]
    assert panel.locator(".errcatalog-client").bounding_box()["y"] < LAPTOP["height"]
    widths = page.evaluate("() => ({page: document.documentElement.scrollWidth, window: window.innerWidth})")
    assert widths["page"] <= widths["window"], widths

    # What a client shows: the question as text, not the JSON envelope (that is in a closed section).
    client_text = panel.locator(".errcatalog-client").inner_text()
    assert client_text.startswith("Question:")
    assert "needsInput:v1" not in client_text
    assert not panel.locator(".errcatalog-structured").evaluate("(d) => d.open")
    notices = " ".join(panel.locator(".errcatalog-notice").all_inner_texts())
    assert "the model gets the question only" in notices
    assert "a parameter hint's question replaces this variant's question" in notices
    assert "send_email · to" in notices
    # The sample call is a served tool missing one of its own required parameters.
    call = re.search(r"Sample call: (\S+) with (\S+) missing", panel.locator(".errcatalog-sample-call").inner_text())
    assert call is not None
    tool, parameter = call.groups()
    assert parameter in code_page["served"][tool]

    # Typing a new question re-renders the text a client shows from the draft.
    question.fill("Question: Which {parameter} should {tool_name} use?")
    page.wait_for_function(
        "([id, expected]) => document.querySelector("
        "`.errcatalog-preview-panel[data-variant-id='${id}'] .errcatalog-client`).textContent.startsWith(expected)",
        arg=[code_page["variant"], f"Question: Which {parameter} should {tool} use?"],
    )
    assert offline.blocked == [] and offline.errors == [] and offline.failed == []


def test_the_code_pages_other_sections_are_collapsed(browser, live_server, code_page):
    page = browser.new_page(viewport=LAPTOP)
    sign_in(page, live_server.url)
    page.goto(f"{live_server.url}/admin/errcatalog/errorcode/{code_page['code']}/change/")
    closed = page.eval_on_selector_all("fieldset details", "(all) => all.filter((d) => !d.open).length")
    assert closed >= 5  # behaviour, shares, explanation, data for clients, classification rules
    # The first variant's message field is in the first screen.
    message = page.locator("textarea[name='variants-0-message']")
    assert message.bounding_box()["y"] < LAPTOP["height"]
