"""docker-compose.yml and the Dockerfile: the services, health checks, secrets and safe defaults the deployment
promises, and the same commands as ``./dev up`` (no Docker engine runs here, so the files are checked as data;
tests/mcpserver/test_load_balancer.py runs the web command and the HAProxy configuration)."""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.config.compose import load_compose, service_command, service_environment

ROOT = Path(__file__).resolve().parents[2]
LONG_RUNNING = ("postgres", "redis", "web", "worker", "beat", "haproxy")
# The web processes' limits (README, "Safe defaults"): the same in compose, the image and ./dev up.
# --http=h11: the head size flag is h11's (httptools, uvicorn's choice when installed, would ignore it).
UVICORN_LIMITS = ("--http=h11", "--timeout-keep-alive=", "--h11-max-incomplete-event-size=", "--limit-concurrency=")


@pytest.fixture(scope="module")
def compose() -> dict:
    return load_compose()


def _command(service: dict) -> str:
    command = service["command"]
    return command if isinstance(command, str) else " ".join(command)


def test_runs_every_part_of_the_service(compose):
    assert set(compose["services"]) == {"postgres", "redis", "migrate", "web", "worker", "beat", "haproxy"}


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
    assert ".venv/bin/uvicorn config.asgi:application" in dev
    # ./dev up's worker and beat are started by its supervisor, with the venv's celery and the same arguments.
    supervisor = (ROOT / "config" / "supervisor.py").read_text()
    assert "python -m config.supervisor" in dev
    for name, command in (("worker", "celery -A config worker"), ("beat", "celery -A config beat")):
        assert _command(compose["services"][name]).startswith(command)
        assert json.dumps(command.split()[1:])[1:-1] in supervisor


def test_each_web_container_runs_one_process_behind_haproxy(compose):
    # A 2025-11-25 session lives in one process; several uvicorn workers in one container cannot be told apart.
    web, haproxy = compose["services"]["web"], compose["services"]["haproxy"]
    assert not any(arg.startswith("--workers") for arg in service_command("web"))
    assert "ports" not in web, "only haproxy is published: the web processes trust its forwarded headers"
    assert "--forwarded-allow-ips=*" in service_command("web")
    assert any(port.endswith(":8000") for port in haproxy["ports"])
    assert "./deploy/haproxy/haproxy.cfg:/usr/local/etc/haproxy/haproxy.cfg:ro" in haproxy["volumes"]
    assert haproxy["depends_on"]["web"]["condition"] == "service_healthy"
    environment = service_environment("haproxy", {})
    assert environment["HAPROXY_WEB_SERVICE"] == "web"
    assert environment["HAPROXY_DNS"] == "127.0.0.11:53"  # Docker's embedded DNS: `--scale web=N` is discovered
    cfg = (ROOT / "deploy" / "haproxy" / "haproxy.cfg").read_text()
    for name in environment:
        assert f"${{{name}" in cfg, f"{name} is not used by haproxy.cfg"


@pytest.mark.haproxy
def test_haproxy_accepts_the_configuration_as_compose_runs_it():
    haproxy = shutil.which("haproxy")
    assert haproxy, "Debian's haproxy package is required (./dev test installs it): apt-get install haproxy"
    environment = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **service_environment("haproxy", {})}
    result = subprocess.run(  # noqa: S603 (the system's haproxy and the repository's file)
        [haproxy, "-c", "-f", str(ROOT / "deploy" / "haproxy" / "haproxy.cfg")],
        env=environment,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "WARNING" not in result.stdout + result.stderr


def test_web_processes_run_with_header_and_keep_alive_limits(compose):
    # ./dev up serves from config/devserver.py, which starts uvicorn with these options in its own process.
    devserver = (ROOT / "config" / "devserver.py").read_text()
    dockerfile = (ROOT / "Dockerfile").read_text()
    web = service_command("web")
    for limit in UVICORN_LIMITS:
        assert any(arg.startswith(limit) for arg in web), limit
        assert limit in dockerfile, limit
        assert limit in devserver, limit


def test_the_image_runs_in_production_mode_by_default():
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert re.search(r"^\s+ERRCATALOG_DEBUG=0\b", dockerfile, re.MULTILINE)
    assert "collectstatic-only" not in dockerfile  # a known key, refused in production


def test_check_deploy_is_clean_for_the_compose_configuration(tmp_path):
    # The web service's environment exactly as compose builds it from a shell that sets only the secrets.
    shell = {
        "SECRET_KEY": secrets.token_urlsafe(50),
        "POSTGRES_PASSWORD": secrets.token_urlsafe(16),
        "ALLOWED_HOSTS": "errors.example.com",
    }
    environment = service_environment("web", shell)
    assert environment["ERRCATALOG_DEBUG"] == "0"
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        # The image's own variables (Dockerfile ENV) are those of this machine: only the data folder is needed.
        env={"PATH": os.environ.get("PATH", ""), "ERRCATALOG_DATA_DIR": str(tmp_path), **environment},
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues" in result.stdout, result.stdout + result.stderr
