"""docker-compose.yml: the services, health checks and secrets the deployment promises, and the same commands
as ``./dev up`` (no Docker engine runs here, so the file is checked as data)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
LONG_RUNNING = ("postgres", "redis", "web", "worker", "beat")


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def _command(service: dict) -> str:
    command = service["command"]
    return command if isinstance(command, str) else " ".join(command)


def test_runs_every_part_of_the_service(compose):
    assert set(compose["services"]) == {"postgres", "redis", "migrate", "web", "worker", "beat"}


@pytest.mark.parametrize("name", LONG_RUNNING)
def test_every_long_running_service_has_a_health_check(compose, name):
    check = compose["services"][name]["healthcheck"]
    assert check["test"] and check["interval"]


@pytest.mark.parametrize("name", ["web", "worker", "beat"])
def test_app_services_wait_for_healthy_dependencies_and_migrations(compose, name):
    depends = compose["services"][name]["depends_on"]
    assert depends["postgres"]["condition"] == "service_healthy"
    assert depends["redis"]["condition"] == "service_healthy"
    assert depends["migrate"]["condition"] == "service_completed_successfully"


def test_secrets_have_no_defaults():
    text = (ROOT / "docker-compose.yml").read_text()
    for secret in ("SECRET_KEY", "POSTGRES_PASSWORD"):
        uses = re.findall(r"\$\{" + secret + r"([^}]*)\}", text)
        assert uses, secret
        assert all(use.startswith(":?") for use in uses), f"{secret} must be required, not defaulted"


def test_production_settings_come_from_the_environment(compose):
    environment = compose["services"]["web"]["environment"]
    assert environment["ERRCATALOG_DEBUG"] == "0"
    assert environment["DATABASE_URL"].startswith("postgres://")
    assert environment["REDIS_URL"].startswith("redis://")


def test_commands_are_those_of_the_serve_command(compose):
    dev = (ROOT / "dev").read_text()
    web = _command(compose["services"]["web"])
    assert web.startswith("uvicorn config.asgi:application")
    assert "--workers" in web
    assert ".venv/bin/uvicorn config.asgi:application" in dev
    for name, command in (("worker", "celery -A config worker"), ("beat", "celery -A config beat")):
        assert _command(compose["services"][name]).startswith(command)
        assert f".venv/bin/{command}" in dev
