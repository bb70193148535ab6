"""errcatalog settings: one file, every value from the environment.

The defaults are the embedded setup (SQLite, debug, demo tools) so that a fresh clone runs with nothing set.
Production sets ``ERRCATALOG_DEBUG=0``, which makes ``SECRET_KEY`` mandatory.
"""

from __future__ import annotations

from pathlib import Path

import dj_database_url

from config.env import env_bool, env_choice, env_int, env_list, env_str

BASE_DIR = Path(__file__).resolve().parent.parent

# --- Core -------------------------------------------------------------------------------------------------

DEBUG = env_bool("ERRCATALOG_DEBUG", True)
# Debug runs get a fixed, obviously unsafe key so the embedded setup needs nothing; production must set one.
SECRET_KEY = env_str("SECRET_KEY", "insecure-embedded-development-key" if DEBUG else None)
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "simple_history",
    "errcatalog",
    "mcpserver",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "simple_history.middleware.HistoryRequestMiddleware",
]

ROOT_URLCONF = "config.urls"
ASGI_APPLICATION = "config.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# --- Database ---------------------------------------------------------------------------------------------

# Local state of the embedded setup (SQLite file, Celery's filesystem broker, collected static files).
DATA_DIR = Path(env_str("ERRCATALOG_DATA_DIR", str(BASE_DIR / "var")))
DATA_DIR.mkdir(parents=True, exist_ok=True)
DATABASES = {
    "default": dj_database_url.parse(
        env_str("DATABASE_URL", f"sqlite:///{DATA_DIR / 'errcatalog.sqlite3'}"),
        conn_max_age=env_int("DATABASE_CONN_MAX_AGE", 60, minimum=0),
    )
}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Caches -----------------------------------------------------------------------------------------------

REDIS_URL = env_str("REDIS_URL", "")
if REDIS_URL:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL}}
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

# --- Internationalisation and static files ----------------------------------------------------------------

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True
STATIC_URL = "static/"
STATIC_ROOT = DATA_DIR / "static"
STATIC_ROOT.mkdir(exist_ok=True)  # WhiteNoise warns on every request when the folder is missing
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}

# --- Security (production) --------------------------------------------------------------------------------

SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", not DEBUG)
CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", not DEBUG)
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https") if env_bool("BEHIND_TLS_PROXY", False) else None

# --- REST API ---------------------------------------------------------------------------------------------

REST_FRAMEWORK = {
    # Bearer first: its challenge makes DRF answer 401 (not 403) to requests without credentials.
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "errcatalog.api.authentication.ClientTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PARSER_CLASSES": ["rest_framework.parsers.JSONParser"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "errcatalog.api.exceptions.api_exception_handler",
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.LimitOffsetPagination",
    "PAGE_SIZE": 100,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "errcatalog API",
    "DESCRIPTION": "Read and edit the error catalog, preview rendered errors and classify failures.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    # One name per choice set, where several fields share one (the classify and render requests' transport).
    "ENUM_NAME_OVERRIDES": {
        "TransportFailureEnum": ["connection", "timeout"],
        "RuleTransportEnum": "errcatalog.models.Transport",
    },
}

# --- errcatalog -------------------------------------------------------------------------------------------

ERRCATALOG = {
    # Rendered model-facing text is cut at this many characters (seed 002: keep messages under 500).
    "MAX_MESSAGE_CHARS": env_int("ERRCATALOG_MAX_MESSAGE_CHARS", 500, minimum=80),
    # The face a tool result takes when the caller does not pass `format` (seed 000 default: markdown).
    "DEFAULT_FORMAT": env_choice("ERRCATALOG_DEFAULT_FORMAT", "markdown", ("markdown", "json", "both")),
    # Where input errors go: tool results (SEP-1303's recommendation) or JSON-RPC errors (seed 003 style).
    "INPUT_ERROR_CHANNEL": env_choice("ERRCATALOG_INPUT_ERROR_CHANNEL", "tool_result", ("tool_result", "jsonrpc")),
    # Reproduce FastMCP's legacy -32001/-32000 codes on the JSON-RPC channel (seed 004), off by default.
    "LEGACY_JSONRPC_CODES": env_bool("ERRCATALOG_LEGACY_JSONRPC_CODES", False),
}

# --- Logging ----------------------------------------------------------------------------------------------

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
}
