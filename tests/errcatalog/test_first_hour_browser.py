"""The first hour in a real headless Chromium (Debian's, driven by Playwright) against a live server.

Every request to a host other than the live server is blocked, as on a machine without internet: the API docs page
must still render the operations (Swagger UI from drf-spectacular-sidecar's static files). Every admin list page
linked from the admin index must fit a 1366 by 768 screen, the commonest laptop size, without a sideways scroll; each
page is saved as a screenshot for a person to look at. No page may log a console error, the favicon's request
included.

Playwright's sync API runs an event loop in the test's thread, where Django refuses ORM calls, so every fixture that
touches the database is set up before the browser starts.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import Browser, ConsoleMessage, Page, Route, sync_playwright

pytestmark = pytest.mark.django_db(transaction=True)

CHROMIUM = os.environ.get("ERRCATALOG_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
LAPTOP = {"width": 1366, "height": 768}


@pytest.fixture
def admin_data(staff_user) -> None:
    """The default catalog, a few tokens and users, an upstream: list pages with the rows an installation has."""
    from django.contrib.auth.models import Group

    from errcatalog.access.tokens import client_token_create
    from errcatalog.catalog.defaults import catalog_load_defaults
    from errcatalog.gateway import inbox
    from errcatalog.gateway.named_servers import named_server_create
    from errcatalog.gateway.services import upstream_tools_record, upstreams_import

    catalog_load_defaults(reset=False)
    Group.objects.create(name="catalog writers")
    client_token_create(user=staff_user, name="quickstart")
    client_token_create(user=staff_user, name="a token for the nightly continuous-integration reporter")
    # An upstream nothing answers for: its list row has every column filled.
    upstreams_import(
        {"mcpServers": {"github-enterprise": {"type": "http", "url": "http://127.0.0.1:9/mcp",
                                              "headers": {"Authorization": "Bearer x"}}}},
        actor=None,
    )  # fmt: skip
    # Its tools pinned, one of them changed since and waiting for review.
    schema = {"type": "object"}
    listing = [{"name": "search_issues", "description": "Search the issues of a repository.", "inputSchema": schema},
               {"name": "create_issue", "description": "Open an issue.", "inputSchema": schema}]  # fmt: skip
    upstream_tools_record(upstream="github-enterprise", listing=listing)
    # A failure of one of them that no rule knows, in the inbox, with a long text.
    inbox.reset()
    failure = "Search backend 'es-cluster-7' rejected the query: " + "clause too complex; " * 40
    inbox.note("github-enterprise", "ghe__search_issues", "tool_error", failure, classified=False)
    assert inbox.flush()
    listing[1] = {**listing[1], "description": "Open an issue in a repository, with labels."}
    upstream_tools_record(upstream="github-enterprise", listing=listing)
    # A named server composed of our tools and the upstream, with a long description.
    named_server_create(
        actor=None,
        name="support-engineering-triage",
        description="Triage of customer escalations by the support engineering team, with the catalog at hand. " * 3,
        tools=["explain_error", "list_error_codes"],
        upstreams={"github-enterprise": ["search_issues"]},
    )
    # An OAuth client that registered itself, and the grant its user's consent made.
    from oauth2_provider.models import Application

    from errcatalog.access.oauth import grant_consented

    claude = Application.objects.create(
        name="Claude",
        client_type=Application.CLIENT_PUBLIC,
        authorization_grant_type=Application.GRANT_AUTHORIZATION_CODE,
        redirect_uris="https://claude.ai/api/mcp/auth_callback",
        registration_source=Application.RegistrationSource.DCR,
    )
    grant_consented(user=staff_user, application=claude, scopes=["tools", "catalog:read"])


@pytest.fixture
def browser(admin_data, live_server) -> Iterator[Browser]:
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


class Offline:
    """A page whose requests leave only for the live server; the others are blocked and listed."""

    def __init__(self, page: Page, live_server_url: str) -> None:
        self.page = page
        self.host = urlsplit(live_server_url).netloc
        self.blocked: list[str] = []
        self.errors: list[str] = []
        self.failed: list[str] = []
        page.route("**/*", self._route)
        page.on("console", self._console)
        page.on("pageerror", lambda error: self.errors.append(str(error)))
        page.on("response", lambda response: response.status >= 400 and self.failed.append(response.url))

    def _route(self, route: Route) -> None:
        if urlsplit(route.request.url).netloc == self.host:
            route.continue_()
        else:
            self.blocked.append(route.request.url)
            route.abort("internetdisconnected")

    def _console(self, message: ConsoleMessage) -> None:
        if message.type == "error":
            self.errors.append(f"{message.text} ({message.location.get('url')})")


def sign_in(page: Page, base_url: str) -> None:
    page.goto(f"{base_url}/admin/login/?next=/admin/")
    page.fill("#id_username", "writer")
    page.fill("#id_password", "pw-writer")
    page.click("input[type=submit]")
    page.wait_for_url(f"{base_url}/admin/")


def test_api_docs_render_the_operations_without_internet(browser, live_server):
    page = browser.new_page(viewport=LAPTOP)
    offline = Offline(page, live_server.url)
    page.goto(f"{live_server.url}/api/v1/docs/")
    page.wait_for_selector(".opblock", timeout=20_000)
    paths = page.eval_on_selector_all(".opblock-summary-path", "(nodes) => nodes.map((n) => n.dataset.path)")
    assert {"/api/v1/codes/", "/api/v1/render/", "/api/v1/classify/", "/api/v1/metrics/"} <= set(paths)
    assert page.inner_text(".info .title").startswith("errcatalog API")
    # Opening an operation shows its parameters and responses: Swagger UI's scripts work, not just its markup.
    page.click(".opblock-summary-path[data-path='/api/v1/codes/']")
    page.wait_for_selector(".opblock.is-open .responses-table")
    assert offline.blocked == []
    assert offline.errors == [] and offline.failed == []


def test_the_api_root_and_the_favicon_work_without_internet(browser, live_server):
    page = browser.new_page(viewport=LAPTOP)
    offline = Offline(page, live_server.url)
    page.goto(f"{live_server.url}/api/v1/")
    assert "/api/v1/codes/" in page.inner_text("body")
    # The browsable API links no icon, so the browser asks for /favicon.ico itself: it must not 404.
    icon = page.request.get(f"{live_server.url}/favicon.ico")
    assert icon.ok and icon.headers["content-type"].startswith("image/svg+xml")
    assert offline.blocked == [] and offline.errors == [] and offline.failed == []


def admin_changelists(page: Page) -> list[str]:
    """The list page of every model on the admin index, as a signed-in superuser sees it."""
    return page.eval_on_selector_all(
        "#content-main tr[class^=model-] th[scope=row] a", "(links) => links.map((a) => a.getAttribute('href'))"
    )


def test_every_admin_list_page_fits_a_1366_pixel_screen(browser, live_server, tmp_path):
    page = browser.new_page(viewport=LAPTOP)
    offline = Offline(page, live_server.url)
    sign_in(page, live_server.url)
    assert page.get_attribute("#user-tools a[href='/dashboard/']", "href") == "/dashboard/"  # View site
    changelists = admin_changelists(page)
    assert len(changelists) >= 8, changelists  # six errcatalog models, users and groups
    overflowing = {}
    screenshots = Path(os.environ.get("ERRCATALOG_SCREENSHOT_DIR") or tmp_path)
    for path in changelists:
        page.goto(f"{live_server.url}{path}")
        assert page.locator("#result_list tbody tr").count() > 0, path
        page.screenshot(path=screenshots / f"admin{path.replace('/', '-').rstrip('-')}.png", full_page=True)
        widths = page.evaluate(
            """() => {
                const table = document.getElementById('result_list');
                const box = table ? table.closest('.results') : null;
                return {
                    page: document.documentElement.scrollWidth, window: window.innerWidth,
                    table: table ? table.scrollWidth : 0, box: box ? box.clientWidth : 0,
                };
            }"""
        )
        if widths["page"] > widths["window"] or widths["table"] > widths["box"]:
            overflowing[path] = widths
    assert overflowing == {}, f"list pages wider than 1366 px (screenshots in {screenshots}): {overflowing}"
    assert offline.blocked == [] and offline.errors == [] and offline.failed == []
