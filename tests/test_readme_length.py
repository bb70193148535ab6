"""README.md stays a front page: what errcatalog is, the quickstart, the tour and links into the documentation site.

Everything longer belongs in docs/. Words are counted as ``wc -w`` counts them: runs of characters between
whitespace.
"""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"
MOST_WORDS = 1500


def test_readme_has_at_most_1500_words():
    words = len(README.read_bytes().split())
    assert words <= MOST_WORDS, f"README.md has {words} words (at most {MOST_WORDS}): move material into docs/"


def test_readme_keeps_the_two_quickstart_commands():
    text = README.read_text(encoding="utf-8")
    quickstart = text.split("## Quickstart", 1)[1].split("\n## ", 1)[0]
    assert "```\n./dev up\n```" in quickstart and "```\n./dev test\n```" in quickstart


def test_every_relative_link_of_the_readme_exists():
    """README links into docs/ by relative path (GitHub renders them); the docs site's own links are checked by
    `mkdocs build --strict`."""
    text = README.read_text(encoding="utf-8")
    targets = {target.split("#", 1)[0] for target in re.findall(r"\]\(([^)\s]+)\)", text)}
    relative = {target for target in targets if target and "://" not in target}
    assert relative, "README links to nothing in the repository"
    missing = sorted(target for target in relative if not (README.parent / target).is_file())
    assert missing == []
