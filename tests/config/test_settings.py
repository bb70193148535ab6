"""Settings come from the environment through strict readers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from config.env import env_bool, env_choice, env_int

ROOT = Path(__file__).resolve().parents[2]


def _load_settings(**env: str) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if k not in ("SECRET_KEY", "ERRCATALOG_DEBUG")} | env
    return subprocess.run(
        [sys.executable, "-c", "import config.settings"], cwd=ROOT, env=environ, capture_output=True, text=True
    )


def test_production_refuses_to_start_without_a_secret_key():
    result = _load_settings(ERRCATALOG_DEBUG="0")
    assert result.returncode != 0
    assert "Set the SECRET_KEY environment variable." in result.stderr


STRONG_KEY = "k3y-" + "0123456789abcdef" * 4


def test_production_starts_with_a_strong_secret_key():
    assert _load_settings(ERRCATALOG_DEBUG="0", SECRET_KEY=STRONG_KEY).returncode == 0


@pytest.mark.parametrize(
    "key",
    [
        "",  # set but empty
        "insecure-embedded-development-key",  # the debug default
        "collectstatic-only",  # the key the Dockerfile used to build with
        "django-insecure-" + "0123456789abcdef" * 4,  # startproject's marker
        "s3cret-for-test",  # short
        "ab" * 40,  # long but two characters
    ],
)
def test_production_refuses_an_empty_known_or_weak_secret_key(key):
    result = _load_settings(ERRCATALOG_DEBUG="0", SECRET_KEY=key)
    assert result.returncode != 0
    assert "SECRET_KEY" in result.stderr and "Traceback" in result.stderr


def test_debug_needs_no_secret_key():
    assert _load_settings(ERRCATALOG_DEBUG="1").returncode == 0


def _settings_values(names: str, **env: str) -> dict:
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("SECRET_KEY", "ERRCATALOG_DEBUG", "SECURE_"))}
    script = f"import json, config.settings as s; print(json.dumps({{n: getattr(s, n) for n in {names.split()!r}}}))"
    result = subprocess.run(  # noqa: S603 (our own interpreter and a fixed script)
        [sys.executable, "-c", script], cwd=ROOT, env=environ | env, capture_output=True, text=True, check=True
    )
    return json.loads(result.stdout)


HTTPS_SETTINGS = (
    "SECURE_SSL_REDIRECT SECURE_HSTS_SECONDS SECURE_HSTS_INCLUDE_SUBDOMAINS SECURE_HSTS_PRELOAD "
    "SESSION_COOKIE_SECURE CSRF_COOKIE_SECURE"
)


def test_production_turns_every_https_protection_on_by_default():
    values = _settings_values(HTTPS_SETTINGS, ERRCATALOG_DEBUG="0", SECRET_KEY=STRONG_KEY)
    assert values == {
        "SECURE_SSL_REDIRECT": True,
        "SECURE_HSTS_SECONDS": 31_536_000,
        "SECURE_HSTS_INCLUDE_SUBDOMAINS": True,
        "SECURE_HSTS_PRELOAD": True,
        "SESSION_COOKIE_SECURE": True,
        "CSRF_COOKIE_SECURE": True,
    }


def test_debug_keeps_plain_http_on_127_0_0_1_working():
    # ./dev up serves http://127.0.0.1:8000: no redirect to HTTPS, no HSTS, cookies over HTTP.
    values = _settings_values(HTTPS_SETTINGS, ERRCATALOG_DEBUG="1")
    assert not any(values.values()), values


@pytest.mark.parametrize("hosts", ["*", "errors.example.com,*", "errors.example.com:443", "https://errors.example.com"])
def test_production_allowed_hosts_are_whole_host_names(hosts):
    result = _load_settings(ERRCATALOG_DEBUG="0", SECRET_KEY=STRONG_KEY, ALLOWED_HOSTS=hosts)
    assert result.returncode != 0
    assert "ALLOWED_HOSTS" in result.stderr


@pytest.mark.parametrize("hosts", ["errors.example.com", ".example.com,127.0.0.1", "[::1],localhost"])
def test_production_accepts_host_names_and_subdomain_patterns(hosts):
    assert _load_settings(ERRCATALOG_DEBUG="0", SECRET_KEY=STRONG_KEY, ALLOWED_HOSTS=hosts).returncode == 0


@pytest.mark.parametrize("raw", ["yes", "no", "enabled", "2"])
def test_env_bool_refuses_values_it_does_not_understand(monkeypatch, raw):
    monkeypatch.setenv("SOME_FLAG", raw)
    with pytest.raises(ImproperlyConfigured, match="SOME_FLAG must be one of"):
        env_bool("SOME_FLAG", False)


@pytest.mark.parametrize(("raw", "value"), [("1", True), ("TRUE", True), ("on", True), ("0", False), ("off", False)])
def test_env_bool_reads_the_usual_spellings(monkeypatch, raw, value):
    monkeypatch.setenv("SOME_FLAG", raw)
    assert env_bool("SOME_FLAG", not value) is value


def test_env_int_and_choice_name_the_variable(monkeypatch):
    monkeypatch.setenv("SOME_INT", "ten")
    with pytest.raises(ImproperlyConfigured, match="SOME_INT must be a whole number"):
        env_int("SOME_INT", 1)
    monkeypatch.setenv("SOME_INT", "5")
    with pytest.raises(ImproperlyConfigured, match="at least 80"):
        env_int("SOME_INT", 100, minimum=80)
    monkeypatch.setenv("SOME_CHOICE", "html")
    with pytest.raises(ImproperlyConfigured, match="SOME_CHOICE must be one of markdown, json"):
        env_choice("SOME_CHOICE", "markdown", ("markdown", "json"))


@pytest.mark.parametrize("origins", ["errors.example.com", "*", "https://*", "https://errors.example.com/admin"])
def test_csrf_trusted_origins_are_whole_origins(origins):
    result = _load_settings(ERRCATALOG_DEBUG="0", SECRET_KEY=STRONG_KEY, CSRF_TRUSTED_ORIGINS=origins)
    assert result.returncode != 0
    assert "CSRF_TRUSTED_ORIGINS" in result.stderr


def test_csrf_trusted_origins_accept_origins_and_django_subdomain_patterns():
    origins = "https://errors.example.com,https://*.example.com,http://127.0.0.1:8000"
    assert _load_settings(ERRCATALOG_DEBUG="0", SECRET_KEY=STRONG_KEY, CSRF_TRUSTED_ORIGINS=origins).returncode == 0


def test_the_ingest_partition_count_is_a_divisor_of_64():
    result = _load_settings(ERRCATALOG_DEBUG="1", ERRCATALOG_OUTCOMES_PARTITIONS="3")
    assert result.returncode != 0
    assert "ERRCATALOG_OUTCOMES_PARTITIONS must be one of 1, 2, 4, 8, 16, 32, 64, not '3'." in result.stderr
    outcomes = _settings_values("OUTCOMES", ERRCATALOG_DEBUG="1", ERRCATALOG_OUTCOMES_PARTITIONS="16")["OUTCOMES"]
    assert outcomes["PARTITIONS"] == 16


def test_a_partition_count_set_in_code_that_does_not_divide_64_stops_the_recorder_with_a_clear_error(settings):
    from errcatalog.outcomes import recorder

    settings.OUTCOMES = {**settings.OUTCOMES, "PARTITIONS": 6}
    with pytest.raises(ImproperlyConfigured, match=r"OUTCOMES\['PARTITIONS'\]: .* must be one of 1, 2, 4"):
        recorder._destination()


def test_the_embedded_brokers_connection_names_a_host_so_kombu_warns_of_none(tmp_path):
    # The Celery app connects as the worker, beat and the web process of ./dev up do (no Redis, no broker URL);
    # kombu logs "No hostname was supplied" (a WARNING at every start) when the broker's URL has no host.
    script = (
        "import logging, django; logging.basicConfig(level=logging.INFO); django.setup()\n"
        "from config.celery import app\n"
        "with app.connection_for_write() as connection:\n"
        "    print(connection.as_uri()); connection.default_channel\n"
    )
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("REDIS_", "CELERY_", "DATABASE_"))}
    environ |= {"DJANGO_SETTINGS_MODULE": "config.settings", "ERRCATALOG_DATA_DIR": str(tmp_path)}
    result = subprocess.run(  # noqa: S603 (our own interpreter and a fixed script)
        [sys.executable, "-c", script], cwd=ROOT, env=environ, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("filesystem://")
    assert "No hostname" not in result.stderr
    assert (tmp_path / "celery" / "queue").is_dir()


EXTERNAL_OAUTH = {
    "ERRCATALOG_OAUTH": "external",
    "ERRCATALOG_PUBLIC_URL": "https://errors.example.com",
    "ERRCATALOG_OAUTH_EXTERNAL_ISSUER": "https://sso.example.com/realms/acme",
}


@pytest.mark.parametrize(
    ("env", "named"),
    [
        ({"ERRCATALOG_OAUTH_EXTERNAL_ISSUER": ""}, "needs ERRCATALOG_OAUTH_EXTERNAL_ISSUER"),
        ({"ERRCATALOG_PUBLIC_URL": ""}, "needs ERRCATALOG_PUBLIC_URL"),
        ({"ERRCATALOG_OAUTH_EXTERNAL_ALGORITHMS": "RS256,HS256"}, "asymmetric algorithms only"),
        ({"ERRCATALOG_OAUTH_EXTERNAL_ALGORITHMS": "none"}, "not none"),
        ({"ERRCATALOG_OAUTH_EXTERNAL_ISSUER": "http://sso.example.com/realms/acme"}, "ISSUER must be an https URL"),
        ({"ERRCATALOG_OAUTH_EXTERNAL_JWKS_URL": "http://sso.example.com/certs"}, "JWKS_URL must be an https URL"),
        (
            {"ERRCATALOG_OAUTH_EXTERNAL_INTROSPECTION_URL": "https://sso.example.com/introspect"},
            "needs ERRCATALOG_OAUTH_EXTERNAL_INTROSPECTION_CLIENT_ID",
        ),
    ],
)
def test_external_oauth_mode_refuses_to_start_without_what_it_needs(env, named):
    result = _load_settings(**{**EXTERNAL_OAUTH, **env})
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr and named in result.stderr


def test_external_oauth_mode_starts_with_an_issuer_and_a_public_url():
    assert _load_settings(**EXTERNAL_OAUTH).returncode == 0
    plain = {"ERRCATALOG_OAUTH_EXTERNAL_ISSUER": "http://127.0.0.1:8080/realms/dev"}
    assert _load_settings(**{**EXTERNAL_OAUTH, **plain}, ERRCATALOG_OAUTH_EXTERNAL_ALLOW_HTTP="1").returncode == 0
