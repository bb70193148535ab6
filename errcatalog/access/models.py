"""Client tokens: the bearer keys of the REST API and the MCP endpoint."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q


class ClientToken(models.Model):
    """A bearer key for the REST API and the MCP endpoint, acting as its user. Only a hash of the key is kept.

    Keys are created by ``errcatalog.access.tokens.client_token_create``, which returns the raw key exactly once.
    """

    name = models.CharField(max_length=100, help_text="What the key is for, e.g. the client or machine using it.")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="client_tokens")
    key_prefix = models.CharField(max_length=8, editable=False, help_text="The key's first characters.")
    key_hash = models.CharField(max_length=64, unique=True, editable=False)
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
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.key_prefix}…)"

    @property
    def revoked(self) -> bool:
        return self.revoked_at is not None

    def allows_tool(self, tool_name: str) -> bool:
        return not self.tool_scope or tool_name in self.tool_scope

    def allows_server(self, server: str) -> bool:
        return not self.servers or server in self.servers
