"""The shipped rules as each data migration found them: today's defaults, with the later migrations' layouts undone
newest first, for the tests of an older migration."""

from __future__ import annotations

import importlib

from django.apps import apps
from django.core.management import call_command

from errcatalog.catalog.models import ClassificationRule

GENERIC = importlib.import_module("errcatalog.migrations.0034_generic_rules_and_room_before_fallbacks")
COMMON_WORDS = importlib.import_module("errcatalog.migrations.0033_generic_rules_before_tool_fallback")
# The default rules shipped with each: created by the next start where their positions are free.
GENERIC_RULES = tuple(range(310, 319))
COMMON_WORDS_RULES = (265, 266, 267, 268, 269, 270, 306, 307)


def forget(positions: tuple[int, ...]) -> None:
    """The rules at ``positions`` gone, with no record of an editor deleting them (which would keep the next start
    from creating them)."""
    ClassificationRule.objects.filter(position__in=positions).delete()
    ClassificationRule.history.filter(position__in=positions).delete()


def forget_generic_rules() -> None:
    """What today's defaults add that an older start did not: the generic rules, and the fallbacks at their new
    positions where the old ones stayed."""
    forget(tuple(ClassificationRule.objects.filter(generic=True).values_list("position", flat=True)))
    kept = set(ClassificationRule.objects.filter(position__in=(309, 310)).values_list("position", flat=True))
    forget(tuple(old + 10 for old in kept))


def before_generic_rules() -> None:
    """The default catalog as an installation had it before generic rules: the fallbacks at 309 and 310."""
    call_command("catalog_load_defaults", verbosity=0)
    forget_generic_rules()
    GENERIC.backward(apps, None)


def before_common_words() -> None:
    """... and before the rules on common words: the fallback for a failed tool at 300, none of those rules."""
    before_generic_rules()
    COMMON_WORDS.backward(apps, None)
    forget(COMMON_WORDS_RULES)
