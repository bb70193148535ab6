"""``./dev up``'s web process (config/devserver.py): static files collected again only when they changed; the banner."""

from __future__ import annotations

import os

from config import devserver
from config.devserver import collect_static_when_changed


def test_static_files_are_collected_again_only_when_a_file_changed(settings, tmp_path):
    settings.STATIC_ROOT = tmp_path / "static"
    extra = tmp_path / "extra"
    extra.mkdir()
    (extra / "page.css").write_text("body { color: black; }")
    settings.STATICFILES_DIRS = [extra]

    assert collect_static_when_changed() is True
    assert (tmp_path / "static" / "page.css").is_file() and (tmp_path / "static.collected").is_file()
    assert collect_static_when_changed() is False  # nothing changed

    (extra / "page.css").write_text("body { color: navy; }")
    os.utime(extra / "page.css", ns=(1, 1))  # a file replaced by an older copy changes too
    assert collect_static_when_changed() is True
    assert (tmp_path / "static" / "page.css").read_text() == "body { color: navy; }"
    assert collect_static_when_changed() is False

    (extra / "new.js").write_text("'use strict';")
    assert collect_static_when_changed() is True
    (tmp_path / "static.collected").write_text("interrupted")  # a collection that did not finish
    assert collect_static_when_changed() is True


def test_the_banner_names_the_public_url_for_hosted_clients_only_when_there_is_one(settings):
    settings.OAUTH = {**settings.OAUTH, "PUBLIC_URL": ""}
    local = devserver.banner("http://127.0.0.1:8000", "var/log")
    assert "errcatalog is starting on http://127.0.0.1:8000" in local
    assert "public:" not in local
    settings.OAUTH = {**settings.OAUTH, "PUBLIC_URL": "https://errors.example.com"}
    public = devserver.banner("http://127.0.0.1:8000", "var/log")
    assert "  public:    https://errors.example.com/mcp  (hosted clients;" in public
    assert public.replace(public.splitlines()[6] + "\n", "") == local  # the one line more
