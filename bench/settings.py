"""Settings for ``bench/mcp_bench.py``: the project's settings plus the benchmark's tool app.

The benchmark serves our endpoint with ``DJANGO_SETTINGS_MODULE=bench.settings`` (``config.asgi`` and
``manage.py`` only set a default), so its three tools are declared the way any app declares tools (an
``mcp_tools`` module, autodiscovered) without touching ``config/settings.py``. Everything else, including every
``ERRCATALOG_*`` variable, is read exactly as in production.
"""

from config.settings import *  # noqa: F403
from config.settings import INSTALLED_APPS

INSTALLED_APPS = [*INSTALLED_APPS, "bench.benchtools"]
