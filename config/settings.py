"""errcatalog settings: one file, every value from the environment.

The defaults are the embedded setup (SQLite, debug, demo tools) so that a fresh clone runs with nothing set.
Production sets ``ERRCATALOG_DEBUG=0`` (the Docker image and docker-compose.yml do), which makes a strong
``SECRET_KEY`` mandatory and turns every HTTPS protection on unless the environment turns it off.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from config.env import (
    env_bool,
    env_choice,
    env_host_names,
    env_int,
    env_list,
    env_modules,
    env_origins,
    env_public_url,
    env_secret_key,
    env_str,
)

BASE_DIR = Path(__file__).resolve().parent.parent

# --- Core -------------------------------------------------------------------------------------------------

DEBUG = env_bool("ERRCATALOG_DEBUG", True)
# Debug runs get a fixed, obviously unsafe key so the embedded setup needs nothing; production must set a strong
# one (an empty, known or short key is refused at start-up).
SECRET_KEY = env_secret_key("SECRET_KEY", debug=DEBUG, development_key="insecure-embedded-development-key")
ALLOWED_HOSTS = env_host_names("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]", "testserver"], debug=DEBUG)
CSRF_TRUSTED_ORIGINS = env_origins("CSRF_TRUSTED_ORIGINS", [])

# Toolsets served at /mcp (MCP["TOOLSETS"] below). Read here because the demo toolset is its own app, installed only
# where it is served.
_MCP_TOOLSETS = frozenset(env_list("ERRCATALOG_MCP_TOOLSETS", ["catalog", "demo"] if DEBUG else ["catalog"]))
# Django apps of your own (dotted module paths), e.g. the one whose mcp_tools.py holds your tools: installed without
# editing this file. Each must be importable from the project's folder or the Python path.
_EXTRA_APPS = env_modules("ERRCATALOG_EXTRA_APPS")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    # Swagger UI's scripts and styles served from our static files: the docs page works without internet.
    "drf_spectacular_sidecar",
    "simple_history",
    # The OAuth 2.1 authorization server MCP clients sign in through (errcatalog.access.oauth).
    "oauth2_provider",
    "errcatalog",
    "mcpserver",
    # The demo scenarios as tools (demo/): their Document table is migrated only where they are served.
    *(["demo"] if "demo" in _MCP_TOOLSETS else []),
    # The official conformance suite's fixtures (conformance/), for ./dev conformance only.
    *(["conformance"] if "conformance" in _MCP_TOOLSETS else []),
    *_EXTRA_APPS,
]

MIDDLEWARE = [
    # Before anything reads the host: a disallowed one under /api/ gets the API's JSON 400, not Django's page.
    "errcatalog.web.api.middleware.ApiHostCheckMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "config.static_files.StaticFilesMiddleware",
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
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    # An unreachable database host must fail a request in seconds, not after the kernel's TCP timeout (minutes):
    # the MCP path then goes on without it (see errcatalog.dependencies). libpq's minimum is 2 seconds.
    DATABASES["default"].setdefault("OPTIONS", {}).setdefault(
        "connect_timeout", env_int("DATABASE_CONNECT_TIMEOUT", 5, minimum=2)
    )
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Caches -----------------------------------------------------------------------------------------------

REDIS_URL = env_str("REDIS_URL", "")
# A cache operation gives up on Redis after this long (connecting, or waiting for an answer). Redis answers in
# well under a millisecond; when it is gone, callers go on without it (errcatalog.dependencies), so a short
# bound is what keeps a Redis outage from slowing every request.
REDIS_TIMEOUT_SECONDS = env_int("ERRCATALOG_REDIS_TIMEOUT_MS", 500, minimum=10) / 1000
if REDIS_URL:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": REDIS_URL,
            "OPTIONS": {"socket_connect_timeout": REDIS_TIMEOUT_SECONDS, "socket_timeout": REDIS_TIMEOUT_SECONDS},
        }
    }
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

# Outside debug every protection is on unless the environment turns it off (`./dev up` is debug: plain HTTP on
# 127.0.0.1 keeps working). `manage.py check --deploy` is clean with these defaults (tests/config/test_deployment.py).
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", not DEBUG)
CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", not DEBUG)
# Only behind a proxy that sets X-Forwarded-Proto itself on every request (deploy/haproxy/haproxy.cfg does, and
# never passes on a client's): otherwise a client could claim HTTPS.
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https") if env_bool("BEHIND_TLS_PROXY", False) else None
# Plain-HTTP requests are redirected to HTTPS, except the health check, which load balancers and Docker call on
# the process directly over HTTP (/mcp is outside Django and never redirected: clients do not follow a POST's).
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", not DEBUG)
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^health/$"]
# Where redirects go when HTTPS is served on another host or port than the request's (e.g. errors.example.com:8443).
SECURE_SSL_HOST = env_str("SECURE_SSL_HOST", "") or None
# Browsers remember to use HTTPS only, for a year by default. Set SECURE_HSTS_SECONDS=0 before the first deployment
# on a host name that must stay reachable over plain HTTP: a browser that saw the header keeps it that long.
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0 if DEBUG else 31_536_000, minimum=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", not DEBUG)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", not DEBUG)

# --- Email -------------------------------------------------------------------------------------------------

# Django's mailers. Debug runs write each message as a file under DATA_DIR/mail instead of sending it; production
# sends over SMTP. EMAIL_BACKEND names another backend class (its options then come from nowhere but defaults).
_MAIL_BACKEND = env_str(
    "EMAIL_BACKEND",
    "django.core.mail.backends.filebased.EmailBackend" if DEBUG else "django.core.mail.backends.smtp.EmailBackend",
)
if _MAIL_BACKEND == "django.core.mail.backends.smtp.EmailBackend":
    _MAIL_OPTIONS = {
        "host": env_str("EMAIL_HOST", "localhost"),
        "port": env_int("EMAIL_PORT", 25, minimum=1),
        "username": env_str("EMAIL_HOST_USER", ""),
        "password": env_str("EMAIL_HOST_PASSWORD", ""),
        "use_tls": env_bool("EMAIL_USE_TLS", False),
        "use_ssl": env_bool("EMAIL_USE_SSL", False),
        "timeout": env_int("EMAIL_TIMEOUT", 10, minimum=1),
    }
elif _MAIL_BACKEND == "django.core.mail.backends.filebased.EmailBackend":
    _MAIL_OPTIONS = {"file_path": str(DATA_DIR / "mail")}
else:
    _MAIL_OPTIONS = {}
MAILERS = {"default": {"BACKEND": _MAIL_BACKEND, "OPTIONS": _MAIL_OPTIONS}}
# An address, not a secret: production should set its own, but the default keeps a deployment without mail working.
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "errcatalog@localhost")
SERVER_EMAIL = env_str("SERVER_EMAIL", DEFAULT_FROM_EMAIL)

# --- Demo tools -------------------------------------------------------------------------------------------

# Backends of the demo tool set (demo/mcp_tools.py). Unset values are deliberate: they produce the demo's
# failures (an unreachable weather service, an unconfigured search service).
# Port 9 (discard) serves nothing on a normal machine, so get_weather's connection is refused: NETWORK_ERROR.
DEMO_WEATHER_URL = env_str("DEMO_WEATHER_URL", "http://127.0.0.1:9/")
# Seconds get_weather and web_search wait for their upstream before the call is a timeout.
DEMO_UPSTREAM_TIMEOUT_SECONDS = env_int("DEMO_UPSTREAM_TIMEOUT_SECONDS", 5, minimum=1)
DEMO_SEARCH_URL = env_str("DEMO_SEARCH_URL", "")
DEMO_SEARCH_API_KEY = env_str("DEMO_SEARCH_API_KEY", "")
# Seconds search_documents may spend before it answers TIMEOUT with the documents found so far.
DEMO_DOCUMENT_SEARCH_SECONDS = env_int("DEMO_DOCUMENT_SEARCH_SECONDS", 2, minimum=0)

# --- HTTP -------------------------------------------------------------------------------------------------

# A request whose head (request line and headers, as sent) is larger than this is answered 431 before any route
# sees it (config.asgi). Browsers' heads stay well under it; uvicorn's --h11-max-incomplete-event-size, set to the
# same value where the web process is started (./dev up, the Dockerfile, docker-compose.yml), bounds a head that
# is still arriving.
MAX_REQUEST_HEAD_BYTES = env_int("ERRCATALOG_MAX_REQUEST_HEAD_BYTES", 16 * 1024, minimum=4096)

# --- REST API ---------------------------------------------------------------------------------------------

# Request bodies larger than this are refused (the API answers 413 in its JSON shape) before they are parsed.
# Django's own default (2.5 MiB); the largest API request, 1,000 outcome events, is about 300 KB.
DATA_UPLOAD_MAX_MEMORY_SIZE = env_int("ERRCATALOG_API_MAX_BODY_BYTES", 2_621_440, minimum=65_536)
REST_FRAMEWORK = {
    # Bearer first: its challenge makes DRF answer 401 (not 403) to requests without credentials.
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "errcatalog.web.api.authentication.ClientTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    # JSON only, with the body's size (DATA_UPLOAD_MAX_MEMORY_SIZE) and nesting depth checked before parsing.
    "DEFAULT_PARSER_CLASSES": ["errcatalog.web.api.parsers.BoundedJSONParser"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "errcatalog.web.api.exceptions.api_exception_handler",
    # List pages: limit 1-1000 (default PAGE_SIZE), offset 0 to 2**31-1; any other value is a 400 naming it.
    "DEFAULT_PAGINATION_CLASS": "errcatalog.web.api.pagination.BoundedLimitOffsetPagination",
    "PAGE_SIZE": 100,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "errcatalog API",
    "DESCRIPTION": "Read and edit the error catalog, preview rendered errors and classify failures.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    # /api/v1/docs/ loads Swagger UI from drf-spectacular-sidecar's static files, not from a CDN, so the page
    # works offline and under a strict Content-Security-Policy.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # Blank-allowed strings as anyOf, and the request bodies POST and PUT require, as the API behaves.
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "errcatalog.web.api.schema.api_schema_corrections",
    ],
    # One name per choice set, where several fields share one (the classify and render requests' transport; the
    # failure kinds of a rule and of a classify request).
    "ENUM_NAME_OVERRIDES": {
        "TransportFailureEnum": ["connection", "timeout"],
        "UpstreamFailureKindEnum": "errcatalog.vocabulary.UPSTREAM_FAILURE_KINDS",
        "RuleTransportEnum": "errcatalog.catalog.models.Transport",
    },
}

# --- errcatalog -------------------------------------------------------------------------------------------

ERRCATALOG: dict[str, Any] = {
    # Where the documentation site is published; the home page links it. Blank: the home page points to the
    # repository's docs/ folder and the command that serves it locally.
    "DOCS_URL": env_str("ERRCATALOG_DOCS_URL", ""),
    # Rendered model-facing text is cut at this many characters (a model reads a short message whole).
    "MAX_MESSAGE_CHARS": env_int("ERRCATALOG_MAX_MESSAGE_CHARS", 500, minimum=80),
    # The face a tool result takes when the caller does not pass `format` (markdown, as in the toolError:v1
    # envelope's format gating).
    "DEFAULT_FORMAT": env_choice("ERRCATALOG_DEFAULT_FORMAT", "markdown", ("markdown", "json", "both")),
    # Where input errors go: tool results (SEP-1303's recommendation) or JSON-RPC errors (the question protocol).
    "INPUT_ERROR_CHANNEL": env_choice("ERRCATALOG_INPUT_ERROR_CHANNEL", "tool_result", ("tool_result", "jsonrpc")),
    # Reproduce FastMCP's legacy -32001/-32000 codes on the JSON-RPC channel, off by default.
    "LEGACY_JSONRPC_CODES": env_bool("ERRCATALOG_LEGACY_JSONRPC_CODES", False),
    # Retry-after hints are at most this many seconds, whatever an upstream's Retry-After says (at least 1 s).
    "MAX_RETRY_AFTER_SECONDS": env_int("ERRCATALOG_MAX_RETRY_AFTER_SECONDS", 3600, minimum=1),
    # REST request bodies nesting JSON arrays/objects deeper than this are refused (400) before they are parsed:
    # no request of the API nests more than a few levels, and Python's decoder recurses once per level.
    "API_MAX_JSON_DEPTH": env_int("ERRCATALOG_API_MAX_JSON_DEPTH", 64, minimum=8),
    # Outcome reports (POST /api/v1/outcomes/, up to 1000 events each) a reporting token may send per minute,
    # counted in the cache (Redis when configured, so across processes); over it, 429 with Retry-After. 0: no limit.
    "OUTCOME_REPORTS_PER_MINUTE": env_int("ERRCATALOG_API_OUTCOME_REPORTS_PER_MINUTE", 60, minimum=0),
    # Every process reads the catalog revision this often (one single-row read) and rebuilds its snapshot when a
    # change was committed anywhere: an edit is served everywhere within about this long. 0 turns polling off
    # (a process then sees only its own edits).
    "CATALOG_POLL_SECONDS": env_int("ERRCATALOG_CATALOG_POLL_MS", 500, minimum=0) / 1000,
    # Import files: catalog documents (catalog_import, catalog_lint, the shipped defaults) and mcpServers blocks
    # (upstream_import, admin's "Import upstreams"). A larger file is refused before it is read whole (16 MiB: a
    # catalog of 2,000 codes with five variants each is about 6 MB of YAML).
    "IMPORT_MAX_BYTES": env_int("ERRCATALOG_IMPORT_MAX_BYTES", 16 * 1024 * 1024, minimum=65_536),
    # Deeper nesting is refused before the parser sees it (a catalog document nests 5 levels; libyaml and Python's
    # decoder recurse once per level and crash the process, or raise, past a few thousand). YAML anchors and
    # aliases are refused whatever this says: catalog files never need them, and they make a small file expand
    # into billions of entries.
    "IMPORT_MAX_DEPTH": env_int("ERRCATALOG_IMPORT_MAX_DEPTH", 64, minimum=8),
    # Any string of an import file (a value or a key) longer than this is refused, naming its place: the longest
    # text of the shipped catalog is under 1,000 characters, and every process holds the whole catalog in memory.
    # At least 8,192, the longest header value an upstream may have.
    "IMPORT_MAX_FIELD_CHARS": env_int("ERRCATALOG_IMPORT_MAX_FIELD_CHARS", 65_536, minimum=8192),
    # Adaptive allocation (errcatalog.catalog.allocation): for codes set to "adaptive", a periodic task sets the
    # variants' weights from their recovery rates over the window, by Thompson sampling, within these guard rails.
    "ALLOCATION": {
        "EVERY_SECONDS": env_int("ERRCATALOG_ALLOCATION_EVERY_SECONDS", 3600, minimum=10),
        "WINDOW_DAYS": env_int("ERRCATALOG_ALLOCATION_WINDOW_DAYS", 14, minimum=1),
        # Every active variant keeps at least this share (percent), so that it keeps being measured.
        "MIN_SHARE_PERCENT": env_int("ERRCATALOG_ALLOCATION_MIN_SHARE_PERCENT", 10, minimum=1),
        # Even shares until every active variant has this many retried, ended episodes in the window.
        "MIN_EPISODES": env_int("ERRCATALOG_ALLOCATION_MIN_EPISODES", 30, minimum=1),
        # One run moves a variant's share by at most this many percentage points.
        "MAX_STEP_PERCENT": env_int("ERRCATALOG_ALLOCATION_MAX_STEP_PERCENT", 20, minimum=1),
    },
}

# --- MCP endpoint ---------------------------------------------------------------------------------------

MCP: dict[str, Any] = {
    # Toolsets served at /mcp: "catalog" (explain_error, list_error_codes), "demo" (the demo scenarios, for the
    # embedded setup), "conformance" (fixtures of the official conformance suite), plus any an app declares.
    "TOOLSETS": _MCP_TOOLSETS,
    # Bearer tokens (admin "Client tokens") are required unless this is explicitly switched off.
    "AUTH": env_bool("ERRCATALOG_MCP_AUTH", True),
    # Requests per token per minute: every tools/call (out-of-scope and unknown tools too) and every initialize;
    # over it a call gets the catalog's RATE_LIMIT result, an initialize the same text as a JSON-RPC error
    # (HTTP 429). 0 turns it off.
    "RATE_LIMIT_PER_MINUTE": env_int("ERRCATALOG_MCP_RATE_LIMIT", 120, minimum=0),
    # Stateful (2025-11-25) sessions one token may hold open at once in one web process; a further initialize gets
    # a JSON-RPC error naming this limit (HTTP 429). Each session holds memory until it ends.
    "MAX_SESSIONS_PER_TOKEN": env_int("ERRCATALOG_MCP_MAX_SESSIONS_PER_TOKEN", 50, minimum=1),
    # A 2025 session with no request in flight (no call being served, no open GET stream) for this long is closed
    # and frees its place; its Mcp-Session-Id then answers 404 and the client initializes again (30 minutes).
    "SESSION_IDLE_SECONDS": env_int("ERRCATALOG_MCP_SESSION_IDLE_SECONDS", 1800, minimum=1),
    # 2025-11-25 SSE streams are resumable: each starts with a priming event and a retry interval (milliseconds), and
    # a client that lost its stream reconnects with Last-Event-ID and gets what it missed. The events are kept in the
    # web process that serves the session (mcpserver.streams): at most this many per process, none longer than this.
    # 0 events: streams are not resumable.
    "STREAM_REPLAY_EVENTS": env_int("ERRCATALOG_MCP_STREAM_REPLAY_EVENTS", 10000, minimum=0),
    "STREAM_REPLAY_SECONDS": env_int("ERRCATALOG_MCP_STREAM_REPLAY_SECONDS", 300, minimum=1),
    "STREAM_RETRY_MS": env_int("ERRCATALOG_MCP_STREAM_RETRY_MS", 1000, minimum=0),
    # While the database is unreachable, a token accepted within this many seconds before the outage is still
    # accepted (from this process's memory; nobody can revoke a token without the database). 0: never.
    "AUTH_OUTAGE_GRACE_SECONDS": env_int("ERRCATALOG_MCP_AUTH_OUTAGE_GRACE_SECONDS", 3600, minimum=0),
    # Larger request bodies are refused with 413 before they are parsed (1 MiB).
    "MAX_BODY_BYTES": env_int("ERRCATALOG_MCP_MAX_BODY_BYTES", 1024 * 1024, minimum=1024),
    # DNS-rebinding protection: Host and Origin values accepted on /mcp (":*" allows any port).
    "ALLOWED_HOSTS": env_list("ERRCATALOG_MCP_ALLOWED_HOSTS", ["127.0.0.1:*", "localhost:*", "[::1]:*"]),
    "ALLOWED_ORIGINS": env_list(
        "ERRCATALOG_MCP_ALLOWED_ORIGINS", ["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"]
    ),
    # Ask for missing input with a real MCP elicitation when the client supports it and the tool allows it.
    "ELICITATION": env_bool("ERRCATALOG_MCP_ELICITATION", True),
    # The 2026-07-28 requestState is sealed with this key, the same in every process (derived from SECRET_KEY).
    "REQUEST_STATE_KEY": env_str(
        "ERRCATALOG_MCP_REQUEST_STATE_KEY",
        hashlib.sha256(b"errcatalog-mcp-request-state:" + SECRET_KEY.encode()).hexdigest(),
    ),
    # The places that rely on the MCP SDK beyond its public API for speed (mcpserver.sdk_internals): 2026-07-28 calls
    # answered by our own middleware, the gateway's own poster, the SDK's span middleware behind a check. Off, each
    # takes the SDK's plain path: the escape hatch when an SDK upgrade breaks one (2025-11-25 sessions then hear of no
    # list changes, and their streams are not resumable).
    "SDK_FAST_PATHS": env_bool("ERRCATALOG_MCP_SDK_FAST_PATHS", True),
}

# --- OAuth (MCP authorization) ----------------------------------------------------------------------------

# Hosted MCP clients (Claude, ChatGPT) sign in with OAuth 2.1: /mcp is a protected resource (RFC 9728 metadata, the
# 401 challenge, audience-bound tokens), and errcatalog is its own authorization server on django-oauth-toolkit.
# "builtin": tokens from errcatalog's own authorization server; "external": tokens from the company's identity provider
# (errcatalog.access.external), errcatalog only checks them; "off": static client tokens only. Static tokens work in
# every mode.
_PUBLIC = env_public_url("ERRCATALOG_PUBLIC_URL")
OAUTH: dict[str, Any] = {
    "MODE": env_choice("ERRCATALOG_OAUTH", "builtin", ("builtin", "external", "off")),
    # Where clients reach this service, e.g. https://errors.example.com. Resource identifiers and the issuer are
    # built on it, and its host is one this service answers to (below); blank: from each request's scheme and Host
    # (checked: ALLOWED_HOSTS, the MCP hosts, BEHIND_TLS_PROXY).
    "PUBLIC_URL": _PUBLIC.url if _PUBLIC else "",
    # Dynamic client registrations (RFC 7591) one address may make per hour; over it, 429. 0: registration is off.
    "REGISTRATIONS_PER_HOUR": env_int("ERRCATALOG_OAUTH_REGISTRATIONS_PER_HOUR", 20, minimum=0),
    # Client ID Metadata Documents are fetched from public addresses only, over HTTPS. On: loopback and private
    # addresses too, for development and tests; never in production.
    "CIMD_ALLOW_PRIVATE": env_bool("ERRCATALOG_OAUTH_CIMD_ALLOW_PRIVATE", False),
    # Mode "external": the company's identity provider (Keycloak, Okta, Entra ID, Auth0) issues the tokens and
    # errcatalog only checks them (errcatalog.access.external; docs/guides/external-identity-provider.md).
    "EXTERNAL": {
        # The provider's issuer, exactly as its tokens' "iss" says, e.g. https://sso.example.com/realms/acme.
        # Required in this mode.
        "ISSUER": env_str("ERRCATALOG_OAUTH_EXTERNAL_ISSUER", "").strip(),
        # Where its signing keys are; blank: the jwks_uri of its OpenID configuration (or RFC 8414 metadata).
        "JWKS_URL": env_str("ERRCATALOG_OAUTH_EXTERNAL_JWKS_URL", "").strip(),
        # The audiences a token must name one of (comma-separated). A URL of this service's resources (/mcp,
        # /mcp/<name>, /api/v1) stands for itself and the servers under it; any other value (an Entra app id URI,
        # an Okta audience) for all of this service. Empty: <PUBLIC_URL>/mcp and <PUBLIC_URL>/api/v1.
        "AUDIENCES": tuple(env_list("ERRCATALOG_OAUTH_EXTERNAL_AUDIENCES", [])),
        # RFC 7662 introspection instead of signature checks, for opaque tokens: the endpoint, and the client id and
        # secret errcatalog authenticates to it with (HTTP Basic). Blank: tokens are JWTs checked against the keys.
        "INTROSPECTION_URL": env_str("ERRCATALOG_OAUTH_EXTERNAL_INTROSPECTION_URL", "").strip(),
        "INTROSPECTION_CLIENT_ID": env_str("ERRCATALOG_OAUTH_EXTERNAL_INTROSPECTION_CLIENT_ID", ""),
        "INTROSPECTION_CLIENT_SECRET": env_str("ERRCATALOG_OAUTH_EXTERNAL_INTROSPECTION_CLIENT_SECRET", ""),
        # The claim that names the Django user: "email" (or a namespaced claim ending in /email, as Auth0's custom
        # claims are) matches a user's email address, case-insensitively; any other (sub, preferred_username) a
        # username.
        "USER_CLAIM": env_str("ERRCATALOG_OAUTH_EXTERNAL_USER_CLAIM", "email").strip(),
        # Whether a token of a person with no Django user creates one (no password, no staff rights); off: refused.
        "CREATE_USERS": env_bool("ERRCATALOG_OAUTH_EXTERNAL_CREATE_USERS", False),
        # The claim holding the token's scopes: a space-separated string or a list ("scope"; Okta and Entra: "scp").
        "SCOPE_CLAIM": env_str("ERRCATALOG_OAUTH_EXTERNAL_SCOPE_CLAIM", "scope").strip(),
        # The signature algorithms accepted: asymmetric ones only (below).
        "ALGORITHMS": tuple(env_list("ERRCATALOG_OAUTH_EXTERNAL_ALGORITHMS", ["RS256", "ES256"])),
        # Clock difference tolerated between the provider and this server in exp, nbf and iat.
        "LEEWAY_SECONDS": env_int("ERRCATALOG_OAUTH_EXTERNAL_LEEWAY_SECONDS", 30, minimum=0),
        # The provider is reached over verified HTTPS only. On: plain http too, for development and tests; never in
        # production (a key set fetched in the clear can be swapped).
        "ALLOW_HTTP": env_bool("ERRCATALOG_OAUTH_EXTERNAL_ALLOW_HTTP", False),
    },
}
# The public URL is the one setting a hosted client needs: a tunnel or proxy in front forwards requests with its host
# in the Host header, so that host is one Django answers to (ALLOWED_HOSTS) and /mcp's DNS-rebinding check accepts,
# and a sign-in form posted from its origin is trusted (CSRF_TRUSTED_ORIGINS, /mcp's origins).
if _PUBLIC:
    ALLOWED_HOSTS = [*ALLOWED_HOSTS, *([_PUBLIC.host] if _PUBLIC.host not in ALLOWED_HOSTS else [])]
    CSRF_TRUSTED_ORIGINS = [
        *CSRF_TRUSTED_ORIGINS,
        *([_PUBLIC.origin] if _PUBLIC.origin not in CSRF_TRUSTED_ORIGINS else []),
    ]
    MCP["ALLOWED_HOSTS"] = [*MCP["ALLOWED_HOSTS"], *(h for h in _PUBLIC.mcp_hosts if h not in MCP["ALLOWED_HOSTS"])]
    if _PUBLIC.origin not in MCP["ALLOWED_ORIGINS"]:
        MCP["ALLOWED_ORIGINS"] = [*MCP["ALLOWED_ORIGINS"], _PUBLIC.origin]
# Asymmetric signatures only: with an HS* algorithm the provider's public key, or a secret shared with every client,
# would sign tokens.
_ASYMMETRIC_ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA")
if OAUTH["MODE"] == "external":
    _external = OAUTH["EXTERNAL"]
    if not _external["ISSUER"]:
        raise ImproperlyConfigured(
            "ERRCATALOG_OAUTH=external needs ERRCATALOG_OAUTH_EXTERNAL_ISSUER: the identity provider's issuer URL, "
            "exactly as the iss claim of its tokens says."
        )
    if not OAUTH["PUBLIC_URL"]:
        raise ImproperlyConfigured(
            "ERRCATALOG_OAUTH=external needs ERRCATALOG_PUBLIC_URL: the resource URLs tokens are issued for are on it."
        )
    for _name, _url in (
        ("ISSUER", _external["ISSUER"]),
        ("JWKS_URL", _external["JWKS_URL"]),
        ("INTROSPECTION_URL", _external["INTROSPECTION_URL"]),
    ):
        _scheme = urlsplit(_url).scheme
        if _url and _scheme != "https" and not (_scheme == "http" and _external["ALLOW_HTTP"]):
            raise ImproperlyConfigured(
                f"ERRCATALOG_OAUTH_EXTERNAL_{_name} must be an https URL (plain http only with "
                "ERRCATALOG_OAUTH_EXTERNAL_ALLOW_HTTP=1, for development)."
            )
    _refused = [name for name in _external["ALGORITHMS"] if name not in _ASYMMETRIC_ALGORITHMS]
    if _refused or not _external["ALGORITHMS"]:
        raise ImproperlyConfigured(
            f"ERRCATALOG_OAUTH_EXTERNAL_ALGORITHMS takes asymmetric algorithms only "
            f"({', '.join(_ASYMMETRIC_ALGORITHMS)}), not {', '.join(_refused) or 'an empty list'}."
        )
    if _external["INTROSPECTION_URL"] and not (
        _external["INTROSPECTION_CLIENT_ID"] and _external["INTROSPECTION_CLIENT_SECRET"]
    ):
        raise ImproperlyConfigured(
            "ERRCATALOG_OAUTH_EXTERNAL_INTROSPECTION_URL needs ERRCATALOG_OAUTH_EXTERNAL_INTROSPECTION_CLIENT_ID and "
            "ERRCATALOG_OAUTH_EXTERNAL_INTROSPECTION_CLIENT_SECRET: the provider answers only a client it knows."
        )
    if not _external["USER_CLAIM"] or not _external["SCOPE_CLAIM"]:
        raise ImproperlyConfigured(
            "ERRCATALOG_OAUTH_EXTERNAL_USER_CLAIM and ERRCATALOG_OAUTH_EXTERNAL_SCOPE_CLAIM must name a claim."
        )
LOGIN_URL = "login"
# django-oauth-toolkit warns (W008) that http redirect URIs are allowed: they are, for loopback addresses only (RFC
# 8252's native-app redirect; any other is refused at registration and, for a client made by hand in admin, at
# authorization: errcatalog.web.oauth), which `check --deploy` cannot see.
SILENCED_SYSTEM_CHECKS = ["oauth2_provider.W008"]
# django-oauth-toolkit's own models (named, since grants refer to its clients).
OAUTH2_PROVIDER_APPLICATION_MODEL = "oauth2_provider.Application"
OAUTH2_PROVIDER: dict[str, Any] = {
    "SCOPES": {  # the words the consent page shows; errcatalog.access.scopes maps each to what a token may do
        "tools": "Call MCP tools as you",
        "catalog:read": "Read the error catalog (codes, messages and questions)",
        "catalog:write": "Change the error catalog, as far as your own permissions go",
        "metrics:read": "Read outcome metrics (staff only)",
    },
    "DEFAULT_SCOPES": ["tools", "catalog:read"],
    # Authorization code with PKCE (S256 only) and refresh tokens: OAuth 2.1 and the MCP specification; the implicit
    # and password grants, "plain" PKCE and tokens in query strings are refused (RFC 9700).
    "PKCE_REQUIRED": True,
    "COMPLIANT_BCP_RFC9700_IMPLICIT_GRANT": True,
    "COMPLIANT_BCP_RFC9700_PASSWORD_GRANT": True,
    "COMPLIANT_BCP_RFC9700_PKCE_METHOD": True,
    "COMPLIANT_BCP_RFC9700_ACCESS_TOKEN_TRANSPORT": True,
    # RFC 9207: the authorization response names its issuer, against mix-up attacks.
    "COMPLIANT_BCP_RFC9700_AUTHZ_RESPONSE_ISS": True,
    # Access and refresh tokens are stored as SHA-256 hashes only, like client tokens.
    "COMPLIANT_BCP_RFC9700_TOKEN_STORAGE": True,
    "COMPLIANT_BCP_RFC9700_REFRESH_TOKEN": True,
    "COMPLIANT_BCP_RFC9700_PKCE_REQUIRED": True,
    "OAUTH2_RESPONSE_TYPES_SUPPORTED": ["code"],
    "OAUTH2_GRANT_TYPES_SUPPORTED": ["authorization_code", "refresh_token"],
    # "none": public clients (command-line tools, desktop apps, CIMD clients) prove themselves with PKCE.
    "OAUTH2_TOKEN_ENDPOINT_AUTH_METHODS_SUPPORTED": ["none", "client_secret_post", "client_secret_basic"],
    "ACCESS_TOKEN_EXPIRE_SECONDS": env_int("ERRCATALOG_OAUTH_ACCESS_TOKEN_SECONDS", 3600, minimum=60),
    "REFRESH_TOKEN_EXPIRE_SECONDS": env_int("ERRCATALOG_OAUTH_REFRESH_TOKEN_SECONDS", 30 * 86_400, minimum=3600),
    "AUTHORIZATION_CODE_EXPIRE_SECONDS": 60,
    # Each refresh returns a new refresh token; using an old one again revokes the whole family (a stolen copy).
    "ROTATE_REFRESH_TOKEN": True,
    "REFRESH_TOKEN_REUSE_PROTECTION": True,
    # Consent is asked every time (a client's approval_prompt=auto is ignored: errcatalog.web.oauth.AuthorizeView).
    "REQUEST_APPROVAL_PROMPT": "force",
    # https for hosted clients; http only to a loopback address (checked by errcatalog.access.oauth), with any port
    # (RFC 8252: a command-line client listens on a port of its choosing); the private-use schemes of desktop apps.
    "ALLOWED_REDIRECT_URI_SCHEMES": ["https", "http", "cursor", "vscode", "vscode-insiders", "windsurf"],
    "ALLOW_LOCALHOST_LOOPBACK": True,
    "DCR_ENABLED": OAUTH["REGISTRATIONS_PER_HOUR"] > 0,
    "DCR_REGISTRATION_PERMISSION_CLASSES": ("oauth2_provider.dcr.AllowAllDCRPermission",),
    "CIMD_ENABLED": True,
    "CIMD_METADATA_FETCHER": "errcatalog.access.oauth.MetadataFetcher",
    # The issuer and the endpoints the metadata names are on the public base when one is set.
    "OIDC_ISS_ENDPOINT": OAUTH["PUBLIC_URL"],
}

# --- Gateway to upstream MCP servers -------------------------------------------------------------------

GATEWAY: dict[str, Any] = {
    # stdio upstreams run a command on this server, as powerful as a shell (only superusers may define one). Off:
    # none may be created and none runs.
    "STDIO": env_bool("ERRCATALOG_GATEWAY_STDIO", True),
    # An upstream's header or variable value may be an env: reference to a variable of the web process's
    # environment, which is sent to wherever the upstream points. Superusers may name any variable; other staff
    # only those listed here (comma-separated names, or prefixes ending in *, e.g. "UPSTREAM_*"). Empty by
    # default; errcatalog's own variables (SECRET_KEY, DATABASE_URL, ERRCATALOG_*, ...) never, even if listed.
    "ENV_ALLOWLIST": tuple(
        name.strip() for name in env_str("ERRCATALOG_GATEWAY_ENV_ALLOWLIST", "").split(",") if name.strip()
    ),
    # HTTP upstreams on loopback, link-local or private addresses (the host name resolved, every address checked)
    # may be added or pointed at only by superusers, unless this is on: staff could otherwise reach this network's
    # own services through the gateway.
    "ALLOW_PRIVATE": env_bool("ERRCATALOG_GATEWAY_ALLOW_PRIVATE", False),
    # After this many transport failures in a row (timeouts, refused or dropped connections, 5xx) an upstream's
    # circuit opens: calls are answered SERVICE_UNAVAILABLE at once for BREAKER_SECONDS, then one call probes it.
    "BREAKER_FAILURES": env_int("ERRCATALOG_GATEWAY_BREAKER_FAILURES", 5, minimum=1),
    "BREAKER_SECONDS": env_int("ERRCATALOG_GATEWAY_BREAKER_SECONDS", 30, minimum=1),
    # Upstream tool lists are read again this often, besides whenever an upstream says they changed.
    "TOOLS_REFRESH_SECONDS": env_int("ERRCATALOG_GATEWAY_TOOLS_REFRESH_SECONDS", 300, minimum=1),
    # A dropped upstream is reconnected after a wait that doubles from the first to the second value.
    "RECONNECT_MIN_SECONDS": env_int("ERRCATALOG_GATEWAY_RECONNECT_MIN_MS", 500, minimum=10) / 1000,
    "RECONNECT_MAX_SECONDS": env_int("ERRCATALOG_GATEWAY_RECONNECT_MAX_SECONDS", 60, minimum=1),
    # A stdio upstream's process is replaced (between calls) after this long, so none runs forever (a day).
    "STDIO_MAX_LIFETIME_SECONDS": env_int("ERRCATALOG_GATEWAY_STDIO_LIFETIME_SECONDS", 86_400, minimum=60),
    # Hard caps on an upstream tool's metadata, which a model reads (errcatalog.gateway.screen): a field past its
    # cap is held and can never be approved, so no listing makes every tools/list megabytes long. The defaults sit
    # far above the published servers' longest fields (server-filesystem's longest description: 457 characters).
    "TOOL_DESCRIPTION_MAX_CHARS": env_int("ERRCATALOG_GATEWAY_TOOL_DESCRIPTION_MAX_CHARS", 4096, minimum=100),
    "TOOL_TITLE_MAX_CHARS": env_int("ERRCATALOG_GATEWAY_TOOL_TITLE_MAX_CHARS", 200, minimum=20),
    "TOOL_PARAMETER_DESCRIPTION_MAX_CHARS": env_int(
        "ERRCATALOG_GATEWAY_TOOL_PARAMETER_DESCRIPTION_MAX_CHARS", 1024, minimum=50
    ),
    "TOOL_SCHEMA_MAX_BYTES": env_int("ERRCATALOG_GATEWAY_TOOL_SCHEMA_MAX_BYTES", 65_536, minimum=1024),
    # The longest quote of an upstream's own words about its failure that a model reads after the catalog's text
    # (errcatalog.gateway.detail), cut at a word: a database's or a validator's error takes a sentence or two. The
    # renderer never quotes more than 1,000 characters, whatever this says.
    "FAILURE_WORDS_MAX_CHARS": env_int("ERRCATALOG_GATEWAY_FAILURE_WORDS_MAX_CHARS", 300, minimum=40),
    # The most tools of one upstream that are pinned and served (by name order); the rest are left out.
    "MAX_TOOLS_PER_UPSTREAM": env_int("ERRCATALOG_GATEWAY_MAX_TOOLS_PER_UPSTREAM", 500, minimum=1),
    # Each client session gets an upstream session of its own (HTTP upstreams; stdio ones in per_client mode: a
    # child process each), at most this many per upstream and web process: past it the least recently used idle one
    # is closed, and when all are busy a call is answered SERVICE_UNAVAILABLE (retryable) rather than share one.
    "SESSIONS_PER_UPSTREAM": env_int("ERRCATALOG_GATEWAY_SESSIONS_PER_UPSTREAM", 100, minimum=1),
    # A client's upstream session is closed with the client's session, or after this long without a call.
    "SESSION_IDLE_SECONDS": env_int("ERRCATALOG_GATEWAY_SESSION_IDLE_SECONDS", 300, minimum=1),
}

# --- Outcomes, retries and metrics ----------------------------------------------------------------------

# Celery's broker (see "Celery" below); the outcome buffer depends on it.
_BROKER_URL = env_str("CELERY_BROKER_URL", REDIS_URL or "filesystem://")
# kombu's filesystem transport reads its folders from the transport options below, never from the URL, but a URL
# without a host ("filesystem://") makes kombu log "No hostname was supplied" at every connection: the URL names one.
_FILESYSTEM_BROKER = urlsplit(_BROKER_URL).scheme == "filesystem"
if _FILESYSTEM_BROKER and not urlsplit(_BROKER_URL).hostname:
    _BROKER_URL = "filesystem://localhost/"
OUTCOMES: dict[str, Any] = {
    # Record every tool call's outcome (off: nothing is buffered, the dashboard stays empty).
    "ENABLED": env_bool("ERRCATALOG_OUTCOMES", True),
    # Events wait in process memory at most this long (or until a batch is full) before they go to the buffer.
    # Without Redis each flush is a batch file written through to disk plus a Celery message (a few milliseconds
    # each): once a second.
    "FLUSH_INTERVAL_MS": env_int("ERRCATALOG_OUTCOMES_FLUSH_MS", 100 if REDIS_URL else 1000, minimum=1),
    # The most events a web process holds unsent while its buffer is reachable, so the most a SIGKILL of that
    # process can lose: the flusher sends as soon as half of it waits, the other half covers the calls answered
    # while that send is under way (milliseconds). A polite stop (SIGTERM) sends everything held.
    "MAX_UNSENT": env_int("ERRCATALOG_OUTCOMES_MAX_UNSENT", 1000, minimum=2),
    # Events a process holds while the buffer is unreachable; older ones are dropped (and counted) beyond it.
    "LOCAL_BUFFER_MAX": env_int("ERRCATALOG_OUTCOMES_LOCAL_BUFFER", 50_000, minimum=100),
    # Without Redis, on Celery's filesystem broker: the folder where batches wait for ingestion as files (a task
    # message on that broker dies with the worker that read it; a batch file is deleted only after its commit).
    # Blank otherwise: with Redis the stream is the buffer, on another broker batches travel as tasks.
    "SPOOL_DIR": str(DATA_DIR / "outcomes" / "spool") if not REDIS_URL and _FILESYSTEM_BROKER else "",
    # The Redis streams that buffer events for ingestion (partition 0 is STREAM_KEY, partition n STREAM_KEY:n),
    # their consumer group and each one's bound (approximate).
    "STREAM_KEY": env_str("ERRCATALOG_OUTCOMES_STREAM", "errcatalog:outcomes"),
    "STREAM_GROUP": "ingest",
    "STREAM_MAXLEN": env_int("ERRCATALOG_OUTCOMES_STREAM_MAXLEN", 1_000_000, minimum=2000),
    # Streams the events are spread over by their episode key (tool, client, session): as many ingest workers as
    # partitions drain at once. A divisor of 64 (errcatalog.outcomes.partitions).
    "PARTITIONS": int(env_choice("ERRCATALOG_OUTCOMES_PARTITIONS", "4", tuple(str(2**n) for n in range(7)))),
    # Events an ingest worker takes at once.
    "BATCH_SIZE": env_int("ERRCATALOG_OUTCOMES_BATCH", 2000, minimum=1),
    # A batch a worker took but did not acknowledge for this long (the worker died) is taken over by another.
    "CLAIM_IDLE_SECONDS": env_int("ERRCATALOG_OUTCOMES_CLAIM_IDLE_SECONDS", 60, minimum=1),
    # A call of the same tool by the same client in the same session within this window after an error is a retry.
    "RETRY_WINDOW_SECONDS": env_int("ERRCATALOG_RETRY_WINDOW_SECONDS", 600, minimum=1),
    # The same for calls without a session (2026-07-28 requests, reports without one), where nothing tells two runs
    # under one token apart: a minute, the time an agent takes to read an error and call again.
    "SESSIONLESS_RETRY_WINDOW_SECONDS": env_int("ERRCATALOG_RETRY_WINDOW_WITHOUT_SESSION_SECONDS", 60, minimum=1),
    # The failed retry number MAX_ATTEMPTS ends an episode as exhausted (the question protocol's
    # MAX_RETRY_ATTEMPTS = 3).
    "MAX_ATTEMPTS": env_int("ERRCATALOG_RETRY_MAX_ATTEMPTS", 3, minimum=1),
    # Rollup bucket length; the dashboard's time series has one point per bucket.
    "BUCKET_SECONDS": env_int("ERRCATALOG_ROLLUP_BUCKET_SECONDS", 3600, minimum=60),
    # Link to a Sentry event from the dashboard: "{event_id}" is replaced (blank: no links).
    "SENTRY_EVENT_URL": env_str("ERRCATALOG_SENTRY_EVENT_URL", ""),
}

# --- Celery -----------------------------------------------------------------------------------------------

# With Redis, Redis is the broker; the embedded setup uses Celery's filesystem broker in DATA_DIR/celery.
CELERY_BROKER_URL = _BROKER_URL
if _FILESYSTEM_BROKER:
    _CELERY_QUEUE_DIR = DATA_DIR / "celery" / "queue"
    _CELERY_QUEUE_DIR.mkdir(parents=True, exist_ok=True)
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(_CELERY_QUEUE_DIR),
        "data_folder_out": str(_CELERY_QUEUE_DIR),
        "store_processed": False,
        # Broadcast state (worker pings, remote control), which would otherwise land in the working directory.
        "control_folder": str(DATA_DIR / "celery" / "control"),
        # Where a message file nobody can read goes, for a person to look at: the "filesystem" scheme is kombu's
        # transport with messages written whole and unreadable files set aside (config/filesystem_broker.py).
        "quarantine_folder": str(DATA_DIR / "celery" / "quarantine"),
    }
CELERY_TASK_IGNORE_RESULT = True
# A task is acknowledged after it ran, and given back when its worker dies (on brokers that can: kombu's filesystem
# transport deletes a message when it is read, so outcome batches wait in OUTCOMES["SPOOL_DIR"] there instead).
# Each task also states this, with its retry policy, in errcatalog/outcomes/tasks.py.
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
CELERY_BEAT_SCHEDULE_FILENAME = str(DATA_DIR / "celerybeat-schedule")
CELERY_BEAT_SCHEDULE = {
    "close-abandoned-episodes": {"task": "errcatalog.close_abandoned_episodes", "schedule": 30.0},
    "compute-rollups": {"task": "errcatalog.compute_rollups", "schedule": 30.0},
    "clear-expired-oauth-tokens": {"task": "errcatalog.clear_expired_oauth_tokens", "schedule": 86_400.0},
    "allocate-variants": {
        "task": "errcatalog.allocate_variants",
        "schedule": float(ERRCATALOG["ALLOCATION"]["EVERY_SECONDS"]),
    },
}
if REDIS_URL or OUTCOMES["SPOOL_DIR"]:
    # Read the buffer (the Redis stream, or the spool folder) into the database. The recorder also sends one after
    # each spooled batch, so this is the safety net there: a batch whose drainer died is stored again within 1 s.
    CELERY_BEAT_SCHEDULE["drain-outcomes"] = {"task": "errcatalog.drain_outcomes", "schedule": 1.0}

# --- Sentry -----------------------------------------------------------------------------------------------

SENTRY_DSN = env_str("SENTRY_DSN", "")
if SENTRY_DSN:
    import sentry_sdk
    from sentry_sdk.integrations.celery import CeleryIntegration
    from sentry_sdk.integrations.mcp import MCPIntegration

    sentry_sdk.init(
        dsn=SENTRY_DSN,
        environment=env_str("SENTRY_ENVIRONMENT", "development" if DEBUG else "production"),
        # No personal data: no user details, no request bodies (send_default_pii's successor), no task arguments
        # (outcome batches name clients and sessions), no variables of a traceback's frames (they hold a tool's
        # arguments, and in the gateway the upstream's answer before its text is cut and redacted).
        data_collection={"user_info": False, "http_bodies": [], "queues": False, "stack_frame_variables": False},
        traces_sample_rate=0.0,
        # A Celery task that fails for good is captured, named (config/celery.py adds a ``task`` tag); a retry is
        # not (errcatalog/outcomes/tasks.py). Beat's check-ins are off: beat sends a task a second.
        integrations=[CeleryIntegration(monitor_beat_tasks=False)],
        # The automatic MCP integration records spans, not our 4xx/5xx rule: the pipeline decides what is
        # captured (system errors only), so the integration stays off.
        disabled_integrations=[MCPIntegration()],
    )

# --- Logging ----------------------------------------------------------------------------------------------

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    "loggers": {
        # Django's default configuration gives its "django" logger a console handler of its own (in debug), and
        # the logger also propagates to ours: every 404 or 500 was printed twice. One handler, the root's.
        "django": {"handlers": [], "level": "INFO", "propagate": True},
        # The SDK's session managers each log "session manager started", and we run two (mcpserver.server);
        # they also log every 2025-11-25 session at INFO. McpApp.run logs the endpoint's start once instead.
        "mcp.server.streamable_http_manager": {"level": "WARNING"},
        # The gateway's HTTP client would log every request to an upstream at INFO; the gateway logs what matters.
        "httpx2": {"level": "WARNING"},
        # django-oauth-toolkit and oauthlib log authorization codes, redirect URLs and requests at DEBUG; no code or
        # token is ever logged, whatever LOG_LEVEL says (errcatalog.web.oauth logs each refusal by its error code).
        "oauthlib": {"level": "INFO"},
        "oauth2_provider": {"level": "INFO"},
    },
}
