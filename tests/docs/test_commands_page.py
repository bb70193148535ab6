"""docs/reference/commands.md documents every ``./dev`` command and every option of every ``manage.py`` command of
errcatalog's own apps, and nothing that does not exist."""

from __future__ import annotations

import re

from django.core.management import BaseCommand, get_commands, load_command_class

from tests.docs.reference_pages import REFERENCE_DIR, REPO_ROOT

PAGE = REFERENCE_DIR / "commands.md"
OWN_APPS = ("errcatalog", "mcpserver", "demo", "conformance")


def dev_commands() -> set[str]:
    """The commands of ./dev's ``case`` (``help|*`` is the fallback)."""
    text = (REPO_ROOT / "dev").read_text(encoding="utf-8")
    names = set()
    for pattern in re.findall(r"^  ([a-z|*-]+)\)$", text, flags=re.MULTILINE):
        names.update(name for name in pattern.split("|") if name != "*")
    return names


def own_commands() -> dict[str, str]:
    """Our apps' management commands: name -> app."""
    return {name: app for name, app in get_commands().items() if app.split(".")[0] in OWN_APPS}


def sections() -> dict[str, str]:
    """The text of each ``### `command` `` section of the page."""
    parts = re.split(r"^### `([a-z_]+)`$", PAGE.read_text(encoding="utf-8"), flags=re.MULTILINE)
    return {parts[i]: parts[i + 1].split("\n## ", 1)[0] for i in range(1, len(parts), 2)}


def options(name: str, app: str) -> set[str]:
    """The option strings and positional names a command adds to Django's own."""
    common = {s for action in BaseCommand().create_parser("manage.py", "x")._actions for s in action.option_strings}
    parser = load_command_class(app, name).create_parser("manage.py", name)
    found = set()
    for action in parser._actions:
        if action.option_strings:
            found.update(s for s in action.option_strings if s not in common)
        elif action.dest != "args":
            found.add(action.metavar or action.dest)
    return found


def test_every_dev_command_is_documented():
    page = PAGE.read_text(encoding="utf-8")
    table = page.split("## `manage.py`", 1)[0]
    documented = set(re.findall(r"^\| `\./dev ([a-z-]+)", table, flags=re.MULTILINE))
    assert documented == dev_commands(), f"./dev has {sorted(dev_commands())}, the page {sorted(documented)}"


def test_every_management_command_of_ours_has_a_section_and_no_other_does():
    assert set(sections()) == set(own_commands())


def test_every_option_of_each_command_is_documented_in_its_section():
    documented = sections()
    for name, app in own_commands().items():
        section = documented[name]
        for option in options(name, app):
            assert re.search(rf"`{re.escape(option)}[ `]", section), f"{name}: {option} is not documented"
        for used in set(re.findall(r"`(--?[a-z][a-z-]*)", section)):
            assert used in options(name, app), f"{name}: the page documents {used}, which the command lacks"
