"""Settings come from the environment through strict readers."""

from __future__ import annotations

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


def test_production_starts_with_a_secret_key():
    assert _load_settings(ERRCATALOG_DEBUG="0", SECRET_KEY="s3cret-for-test").returncode == 0


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
