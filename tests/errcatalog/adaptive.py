"""A catalog code under adaptive allocation with two wordings, for the tests of allocation and of what outcome
reports may steer."""

from __future__ import annotations

from typing import Any

from errcatalog.catalog.models import ErrorCode, TemplateVariant

# The allocator's settings for these tests: hourly, over two weeks, every wording kept at 10% at least.
ALLOCATION = {"EVERY_SECONDS": 3600, "WINDOW_DAYS": 14, "MIN_SHARE_PERCENT": 10, "MIN_EPISODES": 30,
              "MAX_STEP_PERCENT": 20}  # fmt: skip


def adaptive_two_wordings(code_name: str, settings: Any) -> ErrorCode:
    """``code_name`` (in the database already) with its shipped wording named "clear" and a "vague" one beside it,
    at even weights, under adaptive allocation with ``ALLOCATION`` (set on pytest-django's ``settings``)."""
    code = ErrorCode.objects.get(code=code_name)
    code.allocation = "adaptive"
    code.save()
    code.variants.filter(locale="").update(name="clear")
    TemplateVariant.objects.create(
        error_code=code, name="vague", message="The tool {tool_name} failed.", instruction="Try something else."
    )
    settings.ERRCATALOG = {**settings.ERRCATALOG, "ALLOCATION": ALLOCATION}
    return code
