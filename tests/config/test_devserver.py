"""``./dev up``'s web process (config/devserver.py): static files are collected again only when they changed."""

from __future__ import annotations

import os

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
