"""The names an upstream's resources and templates get at /mcp: reversible, valid URIs, and nothing else parses."""

from __future__ import annotations

import re

import pytest

from mcpserver.gateway.offerings import (
    MAX_URI_CHARS,
    is_namespaced,
    namespaced_uri,
    split_uri,
    template_matches,
)

# RFC 3986, appendix B's reading plus the characters a URI may hold at all.
_URI_CHARS = re.compile(r"[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=%]*")
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*")


@pytest.mark.parametrize(
    "uri",
    [
        "demo://resource/static/document/architecture.md",
        "file:///home/ana/notes.txt",
        "urn:isbn:0451450523",
        "https://example.com/a?b=c&d=e#f",
        "test://template/{id}/data",
    ],
)
@pytest.mark.parametrize("upstream", ["everything", "everything-http", "my_server", "a"])
def test_a_namespaced_uri_is_a_valid_uri_that_gives_back_its_upstream_and_uri(upstream, uri):
    namespaced = namespaced_uri(upstream, uri)
    assert split_uri(namespaced) == (upstream, uri)
    assert is_namespaced(namespaced)
    scheme, _, rest = namespaced.partition(":")
    assert _SCHEME.fullmatch(scheme) and rest.startswith(f"//{upstream}/")
    if "{" not in uri:  # a template is not a URI until expanded
        assert _URI_CHARS.fullmatch(namespaced)


@pytest.mark.parametrize(
    "uri",
    [
        "errcatalog-upstream://",
        "errcatalog-upstream://everything",
        "errcatalog-upstream://everything/",
        "errcatalog-upstream:///demo://x",
        "errcatalog-upstream://Everything/demo://x",
        "errcatalog-upstream://every thing/demo://x",
        "errcatalog-upstream://../demo://x",
        "errcatalog-upstream://" + "a" * 65 + "/demo://x",
        "errcatalog-upstream://everything/" + "x" * MAX_URI_CHARS,
        "errcatalog-upstream:everything/demo://x",
        "demo://resource/static/document/architecture.md",
        "errcatalog://codes/RATE_LIMIT",
        "",
    ],
)
def test_anything_else_names_no_upstream(uri):
    assert split_uri(uri) is None


@pytest.mark.parametrize(
    ("template", "uri", "matches"),
    [
        ("demo://resource/dynamic/text/{resourceId}", "demo://resource/dynamic/text/2", True),
        ("demo://resource/dynamic/text/{resourceId}", "demo://resource/dynamic/text/2/x", False),
        ("demo://resource/dynamic/text/{resourceId}", "demo://resource/dynamic/blob/2", False),
        ("test://template/{id}/data", "test://template/7/data", True),
        ("file:///{+path}", "file:///a/b/c.txt", True),
        ("search://q{?term,page}", "search://q?term=x&page=2", True),
        ("a.b://c{/x}", "a.b://c/1/2", True),
        ("demo://x.y/{id}", "demo://xzy/1", False),  # a template's literal dot is a dot
    ],
)
def test_a_template_claims_its_expansions_only(template, uri, matches):
    assert template_matches(template, uri) is matches
