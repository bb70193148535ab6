"""docker-compose.yml as data for the tests that run its commands and settings without Docker."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
COMPOSE_FILE = ROOT / "docker-compose.yml"
# ${NAME}, ${NAME:-default}, ${NAME-default}, ${NAME:?message}, ${NAME?message}: compose's interpolation forms.
_VARIABLE = re.compile(r"\$\{(?P<name>\w+)(?:(?P<op>:?[-?])(?P<arg>[^}]*))?\}")


def load_compose() -> dict:
    return yaml.safe_load(COMPOSE_FILE.read_text())


def interpolate(value: str, environment: dict[str, str]) -> str:
    """``value`` as compose would pass it, with ``environment`` as the shell's; a required variable must be set."""

    def replace(match: re.Match) -> str:
        name, op, arg = match["name"], match["op"], match["arg"]
        current = environment.get(name)
        if op in (":?", "?") and (current is None or (op == ":?" and current == "")):
            raise AssertionError(f"compose requires {name}: {arg}")
        if current is None or (op == ":-" and current == ""):
            return arg if op in (":-", "-") else ""
        return current

    return _VARIABLE.sub(replace, value.replace("$$", "\0")).replace("\0", "$")


def service_environment(name: str, shell: dict[str, str]) -> dict[str, str]:
    environment = load_compose()["services"][name].get("environment") or {}
    return {key: interpolate(str(value), shell) for key, value in environment.items()}


def service_command(name: str, shell: dict[str, str] | None = None) -> list[str]:
    command = load_compose()["services"][name]["command"]
    assert isinstance(command, list), "commands are lists, so no shell re-splits them"
    return [interpolate(str(part), shell or {}) for part in command]
