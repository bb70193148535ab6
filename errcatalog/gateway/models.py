"""Upstream MCP servers, as operators register them."""

from __future__ import annotations

import re
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from simple_history.models import HistoricalRecords

from errcatalog.gateway.secrets import is_secret_reference, upstream_binding
from errcatalog.vocabulary import RESERVED_SERVER_NAMES, SERVER_NAME_PATTERN, TOOL_NAME_RULE, is_tool_name

# A tool of upstream `git` named `status` is served as `git__status`: both parts stay within MCP's tool-name
# characters, and two underscores rarely occur inside a tool's own name.
TOOL_SEPARATOR = "__"
_PREFIX = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$")
# Also the path of the server that serves the upstream alone (``/mcp/<name>``): the vocabulary's rule.
_NAME = re.compile(SERVER_NAME_PATTERN)
# Environment variable names a record may refer to or hand to a child process.
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
# HTTP header names (RFC 9110 tokens); hop-by-hop and transport headers are ours to set.
_HEADER_NAME = re.compile(r"^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,128}$")
RESERVED_HEADERS = frozenset(
    {
        "host",
        "content-length",
        "content-type",
        "accept",
        "connection",
        "transfer-encoding",
        "mcp-session-id",
        "mcp-protocol-version",
        "mcp-method",
        "mcp-name",
        "last-event-id",
    }
)


class Transport(models.TextChoices):
    HTTP = "http", "Streamable HTTP"
    STDIO = "stdio", "stdio (a command run on this server)"


class SessionMode(models.TextChoices):
    """How a stdio upstream's child processes are shared (an HTTP upstream gives each client session its own
    upstream session whatever this says)."""

    SHARED = "shared", "One child process for every client"
    PER_CLIENT = "per_client", "One child process per client session"


class FailureWords(models.TextChoices):
    """What a model reads of an upstream's own words when one of its tools fails, beside the catalog's answer."""

    QUOTED = "quoted", "Quoted, after the screen (credentials, markup, tracebacks and instructions to the model out)"
    FACTS = "facts", "Only the facts rules take from them (the parameter, identifiers and values), never the words"
    WITHHELD = "withheld", "Nothing: the words only choose the catalog's code"


class Upstream(models.Model):
    """One upstream MCP server whose tools ``/mcp`` serves under ``prefix``.

    Header and environment values are stored as references (``env:NAME``, read from our environment when the
    upstream is connected) or sealed with a key derived from ``SECRET_KEY`` and the upstream's name and URL (or
    command) (``errcatalog.gateway.secrets``); neither is ever shown back.
    """

    name = models.CharField(
        max_length=64,
        unique=True,
        help_text="Lower-case letters, digits, '-' and '_'. Names the upstream in outcomes, metrics and rules.",
    )
    prefix = models.CharField(
        max_length=32,
        unique=True,
        help_text=f"Tools are served as <prefix>{TOOL_SEPARATOR}<tool>: letters, digits, '-' and '_'.",
    )
    enabled = models.BooleanField(default=True)
    trusted = models.BooleanField(
        default=False,
        help_text="Serve its tools' changed or new metadata without review, once the screen finds nothing in it.",
    )
    transport = models.CharField(max_length=8, choices=Transport.choices, default=Transport.HTTP)
    # Streamable HTTP
    url = models.URLField(max_length=2000, blank=True, help_text="The upstream's MCP endpoint (Streamable HTTP).")
    headers = models.JSONField(
        default=dict, blank=True, help_text="Header name → env:VARIABLE or a sealed value. Never shown back."
    )
    # stdio
    command = models.CharField(max_length=500, blank=True, help_text="The program to run (stdio), e.g. npx.")
    args = models.JSONField(default=list, blank=True, help_text="Its arguments, as a list of strings.")
    cwd = models.CharField(max_length=1000, blank=True, help_text="Its working folder (blank: the server's).")
    env = models.JSONField(
        default=dict,
        blank=True,
        help_text="Variables the process gets: name → env:VARIABLE or a sealed value. Nothing else of ours.",
    )
    # Limits
    timeout_seconds = models.FloatField(
        default=30.0, validators=[MinValueValidator(0.1), MaxValueValidator(600)], help_text="Per call."
    )
    max_concurrency = models.PositiveIntegerField(
        default=8,
        validators=[MinValueValidator(1), MaxValueValidator(1000)],
        help_text="Calls in flight to this upstream at once, per web process; more wait their turn.",
    )
    tools = models.JSONField(
        default=list, blank=True, help_text="The upstream tools exposed, by their own names; empty exposes all."
    )
    # What the gateway relays from this upstream to the client of a call, when that client declared it (the
    # spec's sampling and roots); off, the gateway does not declare the capability to this upstream, so its tools
    # that need it are not listed, as for a client without it. Both are on by default: a sampling request is relayed
    # to the one call it belongs to, and the client's own user approves it; roots are declared only over an upstream
    # session of one client (an upstream keeps them as state of its session), never to the stdio child that every
    # client shares (``session_mode`` shared), where one client's folders could be answered to another's call.
    relay_sampling = models.BooleanField(
        default=True,
        help_text="Relay its sampling requests (it asks the client's model, named as the asker, with the client's "
        "user approving) to the clients that declared sampling.",
    )
    relay_roots = models.BooleanField(
        default=True,
        help_text="Relay its requests for the client's roots (folders the client shares) to the clients that declared "
        "roots, over each client's own upstream session; never to a stdio child that every client shares.",
    )
    # An upstream's failure text is written for the model (by the MCP specification, a tool's error result is) and
    # often holds the one fact it needs (which table, which field, which values are accepted); the screen
    # (``errcatalog.gateway.detail``) takes out what could harm it, and withholds the whole text when it speaks to
    # the model. Staff may keep an upstream's words from the model altogether.
    failure_words = models.CharField(
        max_length=10,
        choices=FailureWords.choices,
        default=FailureWords.QUOTED,
        help_text="What the model reads of this upstream's own words when its tool fails, after the catalog's code, "
        "cause and instruction.",
    )
    session_mode = models.CharField(
        max_length=10,
        choices=SessionMode.choices,
        default=SessionMode.SHARED,
        help_text=(
            "stdio: whether every client session gets a child process of its own (bounded by "
            "ERRCATALOG_GATEWAY_SESSIONS_PER_UPSTREAM per web process) or all share one. HTTP upstreams always "
            "give each client session its own upstream session."
        ),
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    history = HistoricalRecords()

    class Meta:
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(transport__in=[t.value for t in Transport]), name="upstream_transport_known"
            ),
            models.CheckConstraint(
                condition=models.Q(timeout_seconds__gte=0.1, timeout_seconds__lte=600), name="upstream_timeout_range"
            ),
            models.CheckConstraint(
                condition=models.Q(max_concurrency__gte=1, max_concurrency__lte=1000),
                name="upstream_concurrency_range",
            ),
            models.CheckConstraint(
                condition=models.Q(session_mode__in=[m.value for m in SessionMode]), name="upstream_session_mode_known"
            ),
            models.CheckConstraint(
                condition=models.Q(failure_words__in=[m.value for m in FailureWords]),
                name="upstream_failure_words_known",
            ),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def binding(self) -> str:
        """What its sealed values are bound to (``secrets.upstream_binding``)."""
        return upstream_binding(transport=self.transport, name=self.name, url=self.url, command=self.command)

    def clean(self) -> None:
        problems = upstream_problems(self.__dict__)
        if "name" not in problems and NamedServer.objects.filter(name=self.name).exists():
            problems["name"] = NAME_TAKEN_BY_NAMED_SERVER
        if problems:
            raise ValidationError(problems)


# A server's path is its name (``/mcp/<name>``): an upstream and a named server never share one.
NAME_TAKEN_BY_NAMED_SERVER = "A named server has this name: it is the path /mcp/<name> of that server. Choose another."
NAME_TAKEN_BY_UPSTREAM = "An upstream has this name: it is the path /mcp/<name> of that upstream. Choose another."


def upstream_problems(row: dict[str, Any], *, clear_values: bool = False) -> dict[str, str]:
    """What is wrong with an upstream's fields, by field: the rules no database constraint expresses.

    ``clear_values`` accepts header and variable values in the clear, as a document may give them before the
    services seal them.
    """
    problems: dict[str, str] = {}
    if not _NAME.fullmatch(str(row.get("name") or "")):
        problems["name"] = "Use 1-64 lower-case letters, digits, '-' or '_', starting with a letter or digit."
    prefix = str(row.get("prefix") or "")
    if not _PREFIX.fullmatch(prefix) or TOOL_SEPARATOR in prefix:
        problems["prefix"] = (
            f"Use 1-32 letters, digits, '-' or '_', starting with a letter or digit, without '{TOOL_SEPARATOR}'."
        )
    transport = row.get("transport")
    if transport == Transport.HTTP:
        if not row.get("url"):
            problems["url"] = "A Streamable HTTP upstream needs its endpoint URL."
        elif not str(row["url"]).startswith(("http://", "https://")):
            problems["url"] = "Use an http:// or https:// URL."
    elif transport == Transport.STDIO and not str(row.get("command") or "").strip():
        problems["command"] = "A stdio upstream needs the command that starts it."
    args = row.get("args")
    if not isinstance(args, list) or not all(isinstance(a, str) and "\0" not in a for a in args):
        problems["args"] = "Give the arguments as a list of strings."
    for field, name_rule, what in (("headers", _HEADER_NAME, "header"), ("env", _ENV_NAME, "variable")):
        value = row.get(field)
        if not isinstance(value, dict):
            problems[field] = f"Give the {what}s as an object of name → value."
            continue
        for key, stored in value.items():
            if not isinstance(key, str) or not name_rule.fullmatch(key):
                problems[field] = f"{key!s:.40} is not a valid {what} name."
            elif field == "headers" and key.lower() in RESERVED_HEADERS:
                problems[field] = f"The {key} header is set by the gateway itself."
            elif not (is_secret_reference(stored) or (clear_values and isinstance(stored, str))):
                problems[field] = f"The value of {key} must be an env: reference or a sealed value."
    tools = row.get("tools")
    if not isinstance(tools, list) or not all(isinstance(t, str) and t for t in tools):
        problems["tools"] = "Give the exposed tools as a list of tool names (empty: all)."
    elif any(not is_tool_name(f"{prefix}{TOOL_SEPARATOR}{t}") for t in tools):
        problems["tools"] = f"Each exposed tool must make a valid MCP tool name after '{prefix}{TOOL_SEPARATOR}'."
    return problems


class UpstreamHealth(models.Model):
    """What one serving process's connection to an upstream looks like, as that process last reported it.

    Each process writes its own rows (``errcatalog.gateway.services.upstream_health_report``) when a connection's
    state changes and at least every ``HEALTH_REPORT_SECONDS``, so admin and ``manage.py upstreams`` show every
    process's view, whichever process serves them. A row not refreshed for a while is a process that stopped.
    ``last_failure`` says what failed in fixed words (the gateway's ``failure_for_staff``), never the upstream's
    text. These rows are not catalog data: writing them raises no catalog revision.
    """

    upstream = models.ForeignKey(Upstream, on_delete=models.CASCADE, related_name="health")
    process = models.CharField(max_length=128, help_text="host:pid of the serving process.")
    state = models.CharField(max_length=16)
    protocol_version = models.CharField(max_length=32, blank=True)
    tool_count = models.PositiveIntegerField(default=0)
    circuit = models.CharField(max_length=16)
    last_failure = models.CharField(max_length=300, blank=True)
    last_failure_at = models.DateTimeField(null=True, blank=True)
    reported_at = models.DateTimeField()

    class Meta:
        ordering = ["upstream", "process"]
        constraints = [models.UniqueConstraint(fields=["upstream", "process"], name="upstream_health_one_per_process")]

    def __str__(self) -> str:
        return f"{self.upstream_id} in {self.process}: {self.state}"


class UpstreamTool(models.Model):
    """One upstream tool's metadata, pinned: what was approved is what ``/mcp`` serves, whatever the upstream lists.

    ``approved`` (with its hash) is served; ``pending`` is what the upstream lists now when it differs, waiting for
    review (``status`` review) or held by the screen (held; ``flags`` say why, ``errcatalog.gateway.screen``).
    Written by the serving processes when a listing changes and by staff approving or rejecting
    (``errcatalog.gateway.services``); every change raises the catalog revision, so an approval reaches every
    process. ``kind`` leaves room for an upstream's resources and prompts, which are not served yet.
    """

    class Kind(models.TextChoices):
        TOOL = "tool", "tool"

    class Status(models.TextChoices):
        APPROVED = "approved", "approved"
        REVIEW = "review", "waiting for review"
        HELD = "held", "held by the screen"
        REJECTED = "rejected", "rejected"

    upstream = models.ForeignKey(Upstream, on_delete=models.CASCADE, related_name="pins")
    kind = models.CharField(max_length=16, choices=Kind.choices, default=Kind.TOOL)
    name = models.CharField(max_length=128, help_text="The tool's own name at the upstream.")
    status = models.CharField(max_length=16, choices=Status.choices)
    approved = models.JSONField(null=True, blank=True, help_text="The metadata served.")
    approved_hash = models.CharField(max_length=64, blank=True)
    approved_at = models.DateTimeField(null=True, blank=True)
    approved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    approved_how = models.CharField(max_length=16, blank=True, help_text="first listing, trusted upstream or staff")
    pending = models.JSONField(null=True, blank=True, help_text="What the upstream lists now, cut to the caps.")
    pending_hash = models.CharField(max_length=64, blank=True)
    flags = models.JSONField(default=list, blank=True, help_text="What the screen found in the pending metadata.")
    listed_at = models.DateTimeField(help_text="When the pending metadata (or the approved) was last seen new.")
    history = HistoricalRecords()

    class Meta:
        ordering = ["upstream", "kind", "name"]
        constraints = [
            models.UniqueConstraint(fields=["upstream", "kind", "name"], name="upstream_tool_one_per_name"),
            models.CheckConstraint(
                condition=models.Q(status__in=["approved", "review", "held", "rejected"]),
                name="upstream_tool_status_known",
            ),
        ]
        permissions = [("approve_upstreamtool", "Can approve an upstream tool's metadata")]

    def __str__(self) -> str:
        return f"{self.upstream_id}: {self.name}"


class UpstreamFailureGroup(models.Model):
    """Upstream failures that no specific rule classified, or whose text was withheld from the model because it spoke
    to it, grouped by upstream, tool, kind and text signature.

    Written by the serving processes (``errcatalog.gateway.inbox``) when a failure falls to a fallback code; staff
    read them as an inbox and make a rule from a group. ``signature`` is the failure text with its values masked
    (``errcatalog.gateway.signatures``); the samples keep a few recent texts, cut and with credentials redacted, for
    staff only: nothing here ever reaches a model. These rows are not catalog data: writing them raises no catalog
    revision.
    """

    key = models.CharField(max_length=64, unique=True, help_text="sha256 of upstream, tool, kind and signature.")
    upstream = models.CharField(max_length=64)
    tool = models.CharField(max_length=128, help_text="As /mcp serves it.")
    kind = models.CharField(max_length=16, help_text="How the call failed (errcatalog.vocabulary).")
    signature = models.CharField(
        max_length=300, help_text="The failure text with numbers, values, paths and ids masked."
    )
    count = models.PositiveBigIntegerField(default=0)
    withheld = models.PositiveBigIntegerField(
        default=0,
        help_text="Of these, the failures whose text spoke to the model (instructions, role markers): withheld from "
        "it whole, whatever the upstream's failure words say.",
    )
    first_seen = models.DateTimeField()
    last_seen = models.DateTimeField()

    class Meta:
        ordering = ["-last_seen"]
        verbose_name = "unclassified upstream failure"
        indexes = [models.Index(fields=["last_seen"], name="failure_group_last_seen")]

    def __str__(self) -> str:
        return f"{self.upstream}: {self.signature[:60]}"


class UpstreamFailureSample(models.Model):
    """One recent failure text of a group (cut to 2,000 characters, credentials redacted), for staff and previews."""

    group = models.ForeignKey(UpstreamFailureGroup, on_delete=models.CASCADE, related_name="samples")
    text = models.TextField()
    seen_at = models.DateTimeField()

    class Meta:
        ordering = ["-seen_at", "-id"]

    def __str__(self) -> str:
        return f"sample of {self.group_id} at {self.seen_at:%Y-%m-%d %H:%M:%S}"


class UpstreamFailureTally(models.Model):
    """Upstream failures per hour and upstream, by whether a specific rule classified them: the dashboard's share."""

    hour = models.DateTimeField()
    upstream = models.CharField(max_length=64)
    classified = models.BooleanField()
    count = models.PositiveBigIntegerField(default=0)

    class Meta:
        ordering = ["-hour", "upstream"]
        constraints = [
            models.UniqueConstraint(fields=["hour", "upstream", "classified"], name="failure_tally_one_per_cell")
        ]

    def __str__(self) -> str:
        return (
            f"{self.upstream} at {self.hour:%Y-%m-%d %H:00}: {self.count} {'' if self.classified else 'un'}classified"
        )


# What a named server's description may hold: it is served as the server's instructions to the client's model.
NAMED_SERVER_DESCRIPTION_MAX_CHARS = 2000


class NamedServer(models.Model):
    """A server staff compose for one team or agent, served at ``/mcp/<name>``: some of our own tools and some
    upstreams (``NamedServerUpstream``), behind the same guard, pipeline and outcomes as ``/mcp``.

    Its name follows the server-name rule, is never an upstream's (each side's ``clean`` refuses the other's) and
    never a reserved one. Its rows raise the catalog revision, so every serving process follows a change within a
    poll (``mcpserver.gateway``).
    """

    name = models.CharField(
        max_length=64,
        unique=True,
        help_text="Its path, /mcp/<name>: lower-case letters, digits, '-' and '_'. Never an upstream's name.",
    )
    description = models.TextField(
        blank=True,
        max_length=NAMED_SERVER_DESCRIPTION_MAX_CHARS,
        help_text="Who it is for and what it does: served as the server's instructions to the client's model.",
    )
    enabled = models.BooleanField(default=True, help_text="Off, its path answers as an unknown server's (404).")
    tools = models.JSONField(
        default=list, blank=True, help_text="Our own tools it serves, by name (as /mcp serves them)."
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    history = HistoricalRecords()

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        problems = named_server_problems(self.__dict__)
        if "name" not in problems and Upstream.objects.filter(name=self.name).exists():
            problems["name"] = NAME_TAKEN_BY_UPSTREAM
        if problems:
            raise ValidationError(problems)


def named_server_problems(row: dict[str, Any]) -> dict[str, str]:
    """What is wrong with a named server's own fields, by field (its upstreams are checked as its rows)."""
    problems: dict[str, str] = {}
    name = str(row.get("name") or "")
    if not _NAME.fullmatch(name):
        problems["name"] = "Use 1-64 lower-case letters, digits, '-' or '_', starting with a letter or digit."
    elif name in RESERVED_SERVER_NAMES:
        problems["name"] = f"{name} is reserved: clients reach /mcp/{name} by mistake. Choose another."
    description = row.get("description")
    if not isinstance(description, str) or len(description) > NAMED_SERVER_DESCRIPTION_MAX_CHARS:
        problems["description"] = f"Use at most {NAMED_SERVER_DESCRIPTION_MAX_CHARS} characters."
    elif "\0" in description:
        problems["description"] = "Remove the NUL character."
    problems.update(_tool_list_problems(row.get("tools"), "tools", "our own tools it serves"))
    return problems


def named_server_upstream_problems(row: dict[str, Any]) -> dict[str, str]:
    """What is wrong with one of a named server's upstreams, by field (the upstream's existence is the services')."""
    return _tool_list_problems(row.get("tools"), "tools", "its tools served")


def _tool_list_problems(tools: Any, field: str, what: str) -> dict[str, str]:
    if not isinstance(tools, list) or not all(is_tool_name(tool) for tool in tools):
        return {field: f"Give {what} as a list of tool names ({TOOL_NAME_RULE})."}
    if len(set(tools)) != len(tools):
        return {field: "Name each tool once."}
    return {}


class NamedServerUpstream(models.Model):
    """One upstream a named server serves: all the tools it publishes, or those ``tools`` names (by their own names
    at the upstream), under the names ``/mcp`` serves them by (``<prefix>__<tool>``)."""

    server = models.ForeignKey(NamedServer, on_delete=models.CASCADE, related_name="members")
    upstream = models.ForeignKey(Upstream, on_delete=models.CASCADE, related_name="named_servers")
    tools = models.JSONField(
        default=list,
        blank=True,
        help_text="Its tools served, by their own names at the upstream; empty serves every tool /mcp serves of it.",
    )
    history = HistoricalRecords()

    class Meta:
        ordering = ["server", "upstream"]
        verbose_name = "upstream of a named server"
        constraints = [models.UniqueConstraint(fields=["server", "upstream"], name="named_server_upstream_once")]

    def __str__(self) -> str:
        return f"{self.server_id}: {self.upstream_id}"

    def clean(self) -> None:
        problems = named_server_upstream_problems(self.__dict__)
        if problems:
            raise ValidationError(problems)
