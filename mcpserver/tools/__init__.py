"""The built-in toolset ``catalog`` (always on); the ``demo`` and ``conformance`` toolsets are apps of their own.

Every module in this package registers its tools on import; settings decide which toolsets are served.
"""

from __future__ import annotations

import importlib
import pkgutil

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")
