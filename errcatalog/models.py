"""The app's models, defined with their domains; Django finds them here.

Code imports a model from its domain (``errcatalog.catalog.models``, ``errcatalog.access.models``,
``errcatalog.outcomes.models``, ``errcatalog.gateway.models``), never from this module, so that the import
contracts can see which domain uses which.
"""

from errcatalog.access.models import ClientToken
from errcatalog.catalog.models import CatalogRevision, ClassificationRule, ErrorCode, ParameterHint, TemplateVariant
from errcatalog.gateway.models import Upstream, UpstreamHealth
from errcatalog.outcomes.models import (
    DailyRollup,
    Episode,
    Outcome,
    OutcomeRecord,
    Rollup,
    RollupState,
    RollupSummary,
)

__all__ = [
    "CatalogRevision",
    "ClassificationRule",
    "ClientToken",
    "DailyRollup",
    "Episode",
    "ErrorCode",
    "Outcome",
    "OutcomeRecord",
    "ParameterHint",
    "Rollup",
    "RollupState",
    "RollupSummary",
    "TemplateVariant",
    "Upstream",
    "UpstreamHealth",
]
