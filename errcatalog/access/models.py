"""Client tokens: the bearer keys of the REST API and the MCP endpoint."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q


class ClientToken(models.Model):
    """What a client may do as its user: a static bearer key, or an app the user connected with OAuth.

    A static key is created by ``errcatalog.access.tokens.client_token_create``, which returns the raw key exactly
    once; only its hash is kept. An OAuth grant (``application`` set, no key) is made when the user consents to a
    client (``errcatalog.access.oauth``); its access tokens come and go with refreshes, the grant stays, so rate
    limits, session caps, outcomes and revocation are per grant, under the client's name. Both kinds are one list
    in admin, and revoking either stops it at the next request.
    """

    name = models.CharField(max_length=100, help_text="What the key is for, e.g. the client or machine using it.")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="client_tokens")
    key_prefix = models.CharField(max_length=8, blank=True, editable=False, help_text="The key's first characters.")
    # Null for an OAuth grant, which has no key of its own (NULLs never collide in the unique index; "" would).
    key_hash = models.CharField(max_length=64, unique=True, null=True, editable=False)  # noqa: DJ001
    application = models.ForeignKey(
        settings.OAUTH2_PROVIDER_APPLICATION_MODEL,
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        editable=False,
        related_name="grants",
        help_text="The OAuth client this grant was given to; empty for a static key.",
    )
    can_call_tools = models.BooleanField(default=True, help_text="May call MCP tools (those of its tool scope).")
    tool_scope = models.JSONField(
        default=list, blank=True, help_text="MCP tools this key may call; empty allows every tool."
    )
    servers = models.JSONField(
        default=list,
        blank=True,
        help_text="MCP servers this key may use, by name: \"\" for /mcp itself, an upstream's or a named server's name "
        "for /mcp/<name>; empty allows every server.",
    )
    can_write_catalog = models.BooleanField(default=False, help_text="May create, change and delete catalog rows.")
    can_read_metrics = models.BooleanField(
        default=False,
        help_text="May read outcome metrics (GET /api/v1/metrics/). Tokens of staff users may read them anyway.",
    )
    can_read_catalog = models.BooleanField(
        default=True,
        help_text="May read the error catalog over MCP: each code as a resource (errcatalog://codes/…) and each "
        "interactive code's question as a prompt.",
    )
    can_report_outcomes = models.BooleanField(
        default=False,
        help_text="May report outcomes of calls to tools it may call (POST /api/v1/outcomes/), rate-limited.",
    )
    outcomes_count_for_allocation = models.BooleanField(
        default=False,
        help_text="Its reported outcomes count towards adaptive allocation's variant weights, as errcatalog's own "
        "calls do. Only people who may change variant weights may set it.",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(condition=Q(key_hash__regex=r"^[0-9a-f]{64}$"), name="clienttoken_hash_sha256_hex"),
            # A static key or an OAuth grant, never both nor neither.
            models.CheckConstraint(
                condition=Q(key_hash__isnull=True, application__isnull=False)
                | Q(key_hash__isnull=False, application__isnull=True),
                name="clienttoken_key_or_grant",
            ),
            # One live grant per user and client: consenting again updates it.
            models.UniqueConstraint(
                fields=["user", "application"],
                condition=Q(application__isnull=False, revoked_at__isnull=True),
                name="clienttoken_one_live_grant",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} (OAuth)" if self.is_grant else f"{self.name} ({self.key_prefix}…)"

    @property
    def is_grant(self) -> bool:
        return self.application_id is not None

    @property
    def revoked(self) -> bool:
        return self.revoked_at is not None

    def allows_tool(self, tool_name: str) -> bool:
        return self.can_call_tools and (not self.tool_scope or tool_name in self.tool_scope)

    def allows_server(self, server: str) -> bool:
        return not self.servers or server in self.servers
