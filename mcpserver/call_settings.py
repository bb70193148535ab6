"""The settings a tool call reads, copied from Django's settings on first read and dropped when they change.

A read of ``django.conf.settings.X`` goes through ``LazyObject.__getattribute__`` (about half a microsecond), and a
call read half a dozen: a tenth of the pipeline's own time. ``call_settings.X`` is a plain attribute once read.
Django reports every change (``override_settings``, pytest-django's ``settings`` fixture: ``setting_changed``),
and the copy of that setting is dropped then, so the next read sees the new value. A setting's value is the same
object as Django's (the ``MCP`` dict itself), so a change made inside it is seen at once too.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.signals import setting_changed


class _CallSettings:
    def __getattr__(self, name: str) -> Any:  # only for a setting not copied yet
        value = getattr(settings, name)
        self.__dict__[name] = value
        return value

    def forget(self, *, setting: str, **kwargs: Any) -> None:
        self.__dict__.pop(setting, None)


call_settings = _CallSettings()
setting_changed.connect(call_settings.forget, dispatch_uid="mcpserver.call_settings")
