"""ASGI entry point. The MCP endpoint joins here in a later step; for now everything is Django."""

from __future__ import annotations

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

application = get_asgi_application()
