"""The error catalog: codes, their template variants, parameter hints and classification rules.

Models hold data and the constraints that keep it valid, and the catalog's row rules that a constraint cannot say
(each written once, as a pure function, and run by the models' ``clean()``, the REST serializers and the catalog
document's checks); rendering works on a frozen snapshot of these rows (see ``errcatalog.catalog.snapshot``),
never on the models themselves.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, TypeGuard

from django.core.exceptions import NON_FIELD_ERRORS, ValidationError
from django.core.validators import RegexValidator
from django.db import models
from django.db.models import F, Q
from simple_history.models import HistoricalRecords

from errcatalog.render.patterns import PATTERN_MAX_CHARS, captured_fact_names, pattern_problems
from errcatalog.safety import FACT_PLACEHOLDERS, REDACTED, safe_identifier, template_errors, template_placeholders
from errcatalog.vocabulary import (
    CODE_PATTERN,
    JSONRPC_DEFINED_CODES,
    JSONRPC_LEGACY_CODES,
    JSONRPC_RESERVED_MAX,
    JSONRPC_RESERVED_MIN,
    TOOL_NAME_RULE,
    UPSTREAM_FAILURE_KINDS,
    is_reserved_jsonrpc_code,
    is_secret_name,
    is_tool_name,
)


class Category(models.TextChoices):
    NETWORK = "network", "Network"
    SERVER = "server", "Server"
    CLIENT = "client", "Client request"
    NOT_FOUND = "not_found", "Not found"
    AUTHENTICATION = "authentication", "Authentication / permission"
    VALIDATION = "validation", "Validation"
    RATE_LIMIT = "rate_limit", "Rate limit"
    USER_INPUT = "user_input", "User input"
    CONFIGURATION = "configuration", "Configuration"
    PROVIDER = "provider", "LLM provider"
    TOOL = "tool", "Tool call"
    PROTOCOL = "protocol", "Protocol (JSON-RPC)"
    UNKNOWN = "unknown", "Unknown"


class Kind(models.TextChoices):
    ERROR = "error", "Error (toolError:v1)"
    NEEDS_INPUT = "needs_input", "Needs input (needsInput:v1)"


class Header(models.TextChoices):
    # No header: the text alone, as the toolError:v1 envelope's messages are shown.
    NONE = "", "No header"
    INPUT_ERROR = "Input Error", "Input Error"
    ERROR = "Error", "Error"
    PROVIDER_ERROR = "AI Provider Error", "AI Provider Error"


class Allocation(models.TextChoices):
    FIXED = "fixed", "Fixed weights"
    ADAPTIVE = "adaptive", "Adaptive (from recovery rates)"


class Transport(models.TextChoices):
    ANY = "", "Any"
    TIMEOUT = "timeout", "Timeout"
    CONNECTION = "connection", "Connection failure"


# How an upstream's call failed, as a rule's ``kind`` names it; the labels are the words admin shows.
UPSTREAM_FAILURE_KIND_CHOICES = [
    ("", "Any"),
    *((kind, said[0].upper() + said[1:]) for kind, said in UPSTREAM_FAILURE_KINDS.items()),
]


# --- The catalog's rules, written once ---------------------------------------------------------------------
#
# Each rule is a pure function from a row's values to the problems it finds, in the sentences every writer shows.
# The models' ``clean()`` runs them, so the admin's forms show them at their fields and the services
# (``errcatalog.catalog.services``, which the REST API and import write through) refuse a row that breaks them;
# the catalog document's checks (``errcatalog.catalog.document``) run them too, to list every problem of a file
# at once. Rules that are database constraints stay constraints; these are the ones a constraint cannot say, or
# cannot say in words a writer understands.

# Python class names, as classification rules and the classify endpoint compare them (no module path).
EXCEPTION_NAME_PATTERN = r"[A-Za-z_][A-Za-z0-9_]{0,127}"
# The conditions of a classification rule; a rule must set one, or it never matches.
RULE_CONDITIONS = (
    "exception",
    "status_min",
    "status_max",
    "jsonrpc_code",
    "upstream",
    "tool",
    "transport",
    "kind",
    "pattern",
)
# A rule's sentence is one sentence about one fact.
RULE_SENTENCE_MAX_CHARS = 300
# Problems about a row as a whole, not one of its fields.
WHOLE_ROW = ""

Problems = dict[str, list[str]]


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


# The ranges of the catalog's integer fields, one place for every writer: the rules below (so the admin, the services
# and a catalog file's checks), the REST serializers' min/max, and the catalog file's JSON Schema, which states the
# same numbers (a test compares them). 32-bit signed where the column is an ``integer`` in PostgreSQL, so that what
# the REST API or the admin accepts on SQLite is what PostgreSQL stores and what an import of the export takes back.
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
INTEGER_RANGES: Mapping[str, tuple[int, int]] = {
    "jsonrpc_code": (INT32_MIN, INT32_MAX),
    # A day: a retry-after hint beyond that is advice to give up, not to wait.
    "retry_after_seconds": (0, 86400),
    "http_status": (100, 599),
    "status_min": (100, 599),
    "status_max": (100, 599),
    # Relative shares: 1000 against 1 already serves the smaller one once in a thousand renders.
    "weight": (0, 1000),
    "position": (0, INT32_MAX),
}


def integer_range_problems(name: str, value: object) -> list[str]:
    """An integer field outside its range in ``INTEGER_RANGES``; other types are the field's own check."""
    low, high = INTEGER_RANGES[name]
    if _is_int(value) and not low <= value <= high:
        return [f"Give a whole number from {low} to {high}."]
    return []


def jsonrpc_code_problems(value: object) -> list[str]:
    """A code's JSON-RPC code must lie outside the range JSON-RPC reserves, or be one JSON-RPC or MCP defines, and
    within ``INTEGER_RANGES``."""
    if out_of_range := integer_range_problems("jsonrpc_code", value):
        return out_of_range
    if not _is_int(value) or not is_reserved_jsonrpc_code(value):
        return []
    allowed = JSONRPC_DEFINED_CODES + JSONRPC_LEGACY_CODES
    return [
        f"{value} is in the range JSON-RPC reserves ({JSONRPC_RESERVED_MIN}..{JSONRPC_RESERVED_MAX}) but is not a "
        f"code JSON-RPC or MCP defines ({', '.join(map(str, allowed))}); choose a code outside the range, e.g. -31xxx."
    ]


def error_code_problems(values: Mapping[str, Any]) -> Problems:
    """What is wrong with an error code's own fields (its variants are rows of their own)."""
    problems: Problems = {}
    code = values.get("code")
    if isinstance(code, str) and not re.fullmatch(CODE_PATTERN, code):
        problems["code"] = ["Use UPPER_SNAKE_CASE, e.g. MISSING_PARAMETER."]
    statuses = values.get("http_statuses", [])
    low, high = INTEGER_RANGES["http_status"]
    if not isinstance(statuses, list) or not all(_is_int(s) and low <= s <= high for s in statuses):
        problems["http_statuses"] = [f"Give a list of HTTP status codes between {low} and {high}."]
    if jsonrpc := jsonrpc_code_problems(values.get("jsonrpc_code")):
        problems["jsonrpc_code"] = jsonrpc
    if retry := integer_range_problems("retry_after_seconds", values.get("retry_after_seconds")):
        problems["retry_after_seconds"] = retry
    return problems


def identifier_problems(value: object) -> list[str]:
    """A tool, parameter or upstream name as a catalog row names it: as registered, or empty."""
    if isinstance(value, str) and value and safe_identifier(value) == REDACTED:
        return [f"Use a name as registered: {TOOL_NAME_RULE}."]
    return []


def parameter_hint_problems(values: Mapping[str, Any]) -> Problems:
    problems: Problems = {}
    for name in ("tool", "parameter"):
        if found := identifier_problems(values.get(name)):
            problems[name] = found
    parameter, question = values.get("parameter"), values.get("question")
    if isinstance(parameter, str) and is_secret_name(parameter) and question:
        problems["question"] = [
            f"{parameter} holds a secret: no question may ask for it, since the answer would stay in the conversation "
            "and the model's logs. Leave the question empty; the user sets the secret up where the tool keeps it."
        ]
    return problems


def classification_rule_problems(values: Mapping[str, Any]) -> Problems:
    """What is wrong with a classification rule's conditions; ``WHOLE_ROW`` for the rule as a whole."""
    problems: Problems = {}
    exception = values.get("exception")
    if isinstance(exception, str) and exception and not re.fullmatch(EXCEPTION_NAME_PATTERN, exception):
        problems["exception"] = ["Give a class name without its module, e.g. TimeoutError."]
    for name in ("position", "status_min", "status_max"):
        if found := integer_range_problems(name, values.get(name)):
            problems[name] = found
    if jsonrpc := integer_range_problems("jsonrpc_code", values.get("jsonrpc_code")):
        problems["jsonrpc_code"] = jsonrpc
    low, high = values.get("status_min"), values.get("status_max")
    if _is_int(low) and _is_int(high) and low > high and "status_min" not in problems:
        problems["status_max"] = [f"{high} is below status_min ({low})."]
    for name in ("upstream", "tool"):
        if found := identifier_problems(values.get(name)):
            problems[name] = found
    kind = values.get("kind")
    if isinstance(kind, str) and kind and kind not in UPSTREAM_FAILURE_KINDS:
        problems["kind"] = [f"Use one of: {', '.join(UPSTREAM_FAILURE_KINDS)}."]
    pattern = values.get("pattern")
    if isinstance(pattern, str) and pattern and (found := pattern_problems(pattern)):
        problems["pattern"] = found
    says = values.get("says")
    if isinstance(says, str) and says and (found := rule_sentence_problems(says, pattern)):
        problems["says"] = found
    if all(values.get(name) in (None, "") for name in RULE_CONDITIONS):
        problems[WHOLE_ROW] = [
            "Set at least one condition (exception, status, JSON-RPC code, upstream, tool, transport, kind or "
            "pattern); a rule without one never matches."
        ]
    return problems


def rule_sentence_problems(says: str, pattern: object) -> list[str]:
    """What is wrong with a rule's sentence: its template, and a captured fact it places that its pattern does not
    capture (the sentence would never be said)."""
    if problems := template_errors(says):
        return problems
    captures = captured_fact_names(pattern) if isinstance(pattern, str) else frozenset()
    missing = [name for name in template_placeholders(says) if name in FACT_PLACEHOLDERS and name not in captures]
    if missing:
        return [
            f"{{{missing[0]}}} places what the pattern captures, but the pattern has no (?P<{missing[0]}>…) group: "
            "add one, or the sentence is never said."
        ]
    return []


def _raise_problems(problems: Problems) -> None:
    if problems:
        raise ValidationError({name or NON_FIELD_ERRORS: messages for name, messages in problems.items()})


def _values(row: models.Model, names: tuple[str, ...]) -> dict[str, Any]:
    return {name: getattr(row, name) for name in names}


def _validate_template(value: str) -> None:
    problems = template_errors(value)
    if problems:
        raise ValidationError(problems)


# The question protocol's setup_url: a path on the client's side ("/integrations/gmail") or an https URL; it may use
# placeholders ("/integrations/{service}"), whose values are identifier-shaped.
SETUP_URL_PATTERN = r"^((/|https://)\S*)?$"
# The question protocol's action_required: a machine-readable action name ("reconfigure_credentials").
ACTION_REQUIRED_PATTERN = r"^([a-z][a-z0-9_]*)?$"


def _validate_parameter_names(value: object) -> None:
    if not isinstance(value, list) or not all(isinstance(n, str) and is_tool_name(n) for n in value):
        raise ValidationError("Give a list of parameter names (letters, digits, _ - . only).")
    if len(set(value)) != len(value):
        raise ValidationError("Each parameter name may appear once.")


class ErrorCode(models.Model):
    code = models.CharField(max_length=64, unique=True, help_text="Stable identifier, UPPER_SNAKE_CASE.")
    category = models.CharField(max_length=32, choices=Category.choices)
    kind = models.CharField(max_length=16, choices=Kind.choices, default=Kind.ERROR)
    retryable = models.BooleanField(default=False)
    retry_after_seconds = models.PositiveIntegerField(
        null=True, blank=True, help_text="Suggested wait before retrying, when the failure does not say."
    )
    http_statuses = models.JSONField(default=list, blank=True, help_text="HTTP statuses this code stands for.")
    jsonrpc_code = models.IntegerField(
        null=True,
        blank=True,
        help_text="JSON-RPC error code used when this failure goes out as a JSON-RPC error.",
    )
    system = models.BooleanField(
        default=False,
        help_text="System errors are captured in Sentry; user-correctable ones are only logged.",
    )
    doc_url = models.URLField(blank=True)
    explanation = models.TextField(blank=True, help_text="The long explanation: causes and fixes.")
    # The question protocol's data fields: catalog text only, never filled from a tool's or upstream's text.
    setup_url = models.CharField(
        max_length=200,
        blank=True,
        validators=[
            RegexValidator(SETUP_URL_PATTERN, "Use a path such as /integrations/gmail or an https URL."),
            _validate_template,
        ],
        help_text='Where the user sets the service up (data.setup_url), e.g. "/integrations/{service}".',
    )
    action_required = models.CharField(
        max_length=64,
        blank=True,
        validators=[RegexValidator(ACTION_REQUIRED_PATTERN, "Use lower_snake_case, e.g. reconfigure_credentials.")],
        help_text='What the user has to do (data.action_required), e.g. "reconfigure_credentials".',
    )
    optional_parameters = models.JSONField(
        default=list,
        blank=True,
        validators=[_validate_parameter_names],
        help_text="For missing input: parameters the model may also give (data.optional_parameters).",
    )
    guidance = models.TextField(
        blank=True,
        validators=[_validate_template],
        help_text="For missing input: a sentence on what the tool needs (data.guidance).",
    )
    active = models.BooleanField(default=True)
    # Who sets the variants' weights: the writer (fixed), or the allocator from each variant's recovery rate
    # (errcatalog.catalog.allocation), unless frozen.
    allocation = models.CharField(
        max_length=16,
        choices=Allocation.choices,
        default=Allocation.FIXED,
        help_text="Adaptive: a periodic task sets the variants' weights from how often each one recovers.",
    )
    allocation_frozen = models.BooleanField(
        default=False, help_text="Adaptive: keep the current weights (the allocator leaves this code alone)."
    )
    updated_at = models.DateTimeField(auto_now=True)

    history = HistoricalRecords()

    class Meta:
        ordering = ["code"]
        constraints = [
            models.CheckConstraint(condition=Q(code__regex=CODE_PATTERN), name="errorcode_code_upper_snake"),
            models.CheckConstraint(
                condition=Q(jsonrpc_code__isnull=True)
                | Q(jsonrpc_code__lt=JSONRPC_RESERVED_MIN)
                | Q(jsonrpc_code__gt=JSONRPC_RESERVED_MAX)
                | Q(jsonrpc_code__in=JSONRPC_DEFINED_CODES + JSONRPC_LEGACY_CODES),
                name="errorcode_jsonrpc_outside_reserved",
            ),
            models.CheckConstraint(
                condition=Q(retry_after_seconds__isnull=True) | Q(retry_after_seconds__lte=86400),
                name="errorcode_retry_after_at_most_a_day",
            ),
        ]

    def __str__(self) -> str:
        return self.code

    def clean(self) -> None:
        names = ("code", "http_statuses", "jsonrpc_code", "retry_after_seconds")
        _raise_problems(error_code_problems(_values(self, names)))


class TemplateVariant(models.Model):
    """One wording of a code's message; several weighted variants of one code are A/B-tested."""

    error_code = models.ForeignKey(ErrorCode, on_delete=models.CASCADE, related_name="variants")
    name = models.SlugField(max_length=40, default="default")
    locale = models.CharField(max_length=16, blank=True, help_text="Blank: used for every locale.")
    weight = models.PositiveSmallIntegerField(default=100, help_text="Relative share of renders (0 = paused).")
    header = models.CharField(max_length=32, choices=Header.choices, default=Header.ERROR, blank=True)
    message = models.TextField(validators=[_validate_template], help_text="What happened.")
    cause = models.TextField(blank=True, validators=[_validate_template], help_text="Why it happened.")
    # Blank only to reproduce a one-sentence toolError:v1 message; otherwise every error says what to do next,
    # or the model guesses.
    instruction = models.TextField(
        blank=True,
        validators=[_validate_template],
        help_text="What to do next (leave empty only for a one-line message).",
    )
    question = models.TextField(
        blank=True, validators=[_validate_template], help_text="For interactive codes: the question to ask."
    )
    active = models.BooleanField(default=True)
    updated_at = models.DateTimeField(auto_now=True)

    history = HistoricalRecords()

    class Meta:
        ordering = ["error_code__code", "locale", "name"]
        constraints = [
            models.UniqueConstraint(fields=["error_code", "locale", "name"], name="variant_unique_name"),
            models.CheckConstraint(condition=Q(weight__lte=1000), name="variant_weight_at_most_1000"),
        ]

    def __str__(self) -> str:
        suffix = f" [{self.locale}]" if self.locale else ""
        return f"{self.error_code_id and self.error_code.code}/{self.name}{suffix}"


class ParameterHint(models.Model):
    """How to ask for one tool parameter: wording that the tool's schema alone does not give."""

    tool = models.CharField(max_length=128)
    parameter = models.CharField(max_length=128)
    description = models.CharField(max_length=200, blank=True, help_text='E.g. "the recipient email address".')
    parameter_type = models.CharField(max_length=64, blank=True, help_text='E.g. "email_address".')
    example = models.CharField(max_length=200, blank=True, help_text='The expected format, e.g. "user@domain.com".')
    question = models.TextField(blank=True, validators=[_validate_template], help_text="Overrides the code's question.")
    updated_at = models.DateTimeField(auto_now=True)

    history = HistoricalRecords()

    class Meta:
        ordering = ["tool", "parameter"]
        constraints = [models.UniqueConstraint(fields=["tool", "parameter"], name="hint_unique_tool_parameter")]

    def __str__(self) -> str:
        return f"{self.tool}.{self.parameter}"

    def clean(self) -> None:
        _raise_problems(parameter_hint_problems(_values(self, ("tool", "parameter", "question"))))


class ClassificationRule(models.Model):
    """Maps a raw failure to a code. Rules are tried by ascending position; every set condition must hold."""

    position = models.PositiveIntegerField(unique=True)
    error_code = models.ForeignKey(ErrorCode, on_delete=models.PROTECT, related_name="rules")
    exception = models.CharField(
        max_length=128,
        blank=True,
        help_text="Exception class name of our own tools' failures; subclasses match too (e.g. TimeoutError). "
        "Upstream servers' failures are told apart by kind and pattern.",
    )
    status_min = models.PositiveSmallIntegerField(null=True, blank=True)
    status_max = models.PositiveSmallIntegerField(null=True, blank=True)
    jsonrpc_code = models.IntegerField(null=True, blank=True)
    upstream = models.CharField(max_length=64, blank=True, help_text="Only for this upstream server (blank: any).")
    tool = models.CharField(
        max_length=128, blank=True, help_text="Only for this tool, by the name /mcp serves it under (blank: any)."
    )
    transport = models.CharField(max_length=16, choices=Transport.choices, blank=True)
    kind = models.CharField(
        max_length=16,
        choices=UPSTREAM_FAILURE_KIND_CHOICES,
        blank=True,
        help_text="Only for an upstream server's failures of this kind (blank: any failure).",
    )
    pattern = models.CharField(
        max_length=PATTERN_MAX_CHARS,
        blank=True,
        help_text="Only when the upstream's failure text contains this pattern: case-insensitive, RE2 syntax (no "
        "look-around or back-references), read over the text's first 2,000 characters; ^ anchors at its start. "
        "Named groups capture facts for the sentence below: (?P<name>…), (?P<path>…), (?P<expected>…).",
    )
    # Checked with the rule's pattern in ``clean()`` (``rule_sentence_problems``), as every writer checks it.
    says = models.CharField(
        max_length=RULE_SENTENCE_MAX_CHARS,
        blank=True,
        help_text="A sentence the answer adds after the code's text when this rule chose the code, e.g. "
        "'Column {name} does not exist.' It may place what the pattern captures by name: (?P<name>…) an "
        "identifier, (?P<path>…) a parameter or JSON path, (?P<expected>…) the type or values accepted; each is "
        "kept only in its own strict shape. Left out when a placeholder it uses has no value.",
    )
    generic = models.BooleanField(
        default=False,
        help_text="The rule guesses from common words rather than knowing a wording: the failures it answers still "
        "count as unclassified and stay in the inbox, so a rule that knows them can be written.",
    )
    active = models.BooleanField(default=True)
    note = models.CharField(max_length=200, blank=True)

    history = HistoricalRecords()

    class Meta:
        ordering = ["position"]
        constraints = [
            models.CheckConstraint(
                condition=(Q(status_min__isnull=True) | Q(status_min__gte=100, status_min__lte=599))
                & (Q(status_max__isnull=True) | Q(status_max__gte=100, status_max__lte=599)),
                name="rule_status_in_http_range",
            ),
            models.CheckConstraint(
                condition=Q(status_min__isnull=True) | Q(status_max__isnull=True) | Q(status_min__lte=F("status_max")),
                name="rule_status_min_le_max",
            ),
        ]

    def __str__(self) -> str:
        return f"#{self.position} → {self.error_code_id and self.error_code.code}"

    def clean(self) -> None:
        _raise_problems(classification_rule_problems(_values(self, (*RULE_CONDITIONS, "position", "says"))))


class CatalogRevision(models.Model):
    """The catalog's revision: one row whose number every committed change to a catalog table raises.

    Database triggers raise it (``errcatalog.catalog.revision``), so every writer is counted, whatever it uses:
    the admin, the REST API, an import, a shell's ``QuerySet.update()``, SQL typed into ``psql``. Each serving
    process polls it and rebuilds its snapshot when it moves (``errcatalog.catalog.snapshot``).
    """

    number = models.BigIntegerField(default=0)
    # When the number last moved, in the database's clock: with the number, a revision no other can repeat (a
    # test database flushed to an empty table counts from 0 again, at another time).
    changed_at = models.DateTimeField(null=True)

    class Meta:
        db_table = "errcatalog_catalogrevision"

    def __str__(self) -> str:
        return f"catalog revision {self.number}"
