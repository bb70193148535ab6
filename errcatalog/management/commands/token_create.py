"""``manage.py token_create --user U --name N [--write] [--metrics] [--no-catalog] [--no-tools] [--report-outcomes
[--count-for-allocation]] [--tool T ...] [--server S ...]``: a client token.

Its key is printed once, alone on stdout (so ``KEY=$(manage.py token_create ...)`` works); the explanation goes
to stderr. The command is run by an operator at the server's shell, who may create a token for any user.
"""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from errcatalog.access.models import ClientToken
from errcatalog.access.tokens import client_token_create
from errcatalog.safety import REDACTED, safe_identifier
from errcatalog.vocabulary import SERVER_NAME_RULE, is_server_name


class Command(BaseCommand):
    help = "Create a client token for the REST API and the MCP endpoint and print its key, which is shown only once."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--user", required=True, help="Username the token acts as.")
        parser.add_argument("--name", required=True, help="What the token is for, e.g. 'claude-desktop'.")
        parser.add_argument(
            "--write",
            action="store_true",
            help="Allow creating, changing and deleting catalog rows (as far as the user's model permissions go).",
        )
        parser.add_argument(
            "--metrics", action="store_true", help="Allow reading outcome metrics (GET /api/v1/metrics/)."
        )
        parser.add_argument(
            "--no-catalog",
            dest="catalog",
            action="store_false",
            help="Hide the catalog's MCP resources and prompts from this token (they are readable by default).",
        )
        parser.add_argument(
            "--no-tools",
            dest="tools",
            action="store_false",
            help="Refuse this token's MCP tool calls (403): for a key that only reads the catalog or metrics, or "
            "reports outcomes. Tools are callable by default.",
        )
        parser.add_argument(
            "--report-outcomes",
            action="store_true",
            help="Allow reporting outcomes of calls to the tools it may call (POST /api/v1/outcomes/), rate-limited.",
        )
        parser.add_argument(
            "--count-for-allocation",
            action="store_true",
            help="Count the outcomes this token reports towards adaptive allocation (with --report-outcomes); "
            "without it they show in metrics but never move variant weights.",
        )
        parser.add_argument(
            "--tool",
            action="append",
            default=[],
            metavar="TOOL",
            help="Limit MCP calls to this tool; repeat for several. Without --tool every tool is allowed.",
        )
        parser.add_argument(
            "--server",
            action="append",
            default=[],
            metavar="SERVER",
            help="Limit the token to this MCP server: an upstream's or a named server's name (/mcp/<name>), or '' for "
            "/mcp itself; repeat for several. Without --server every server is allowed.",
        )

    def handle(
        self,
        *args,
        user: str,
        name: str,
        write: bool,
        metrics: bool,
        catalog: bool,
        tools: bool,
        report_outcomes: bool,
        count_for_allocation: bool,
        tool: list[str],
        server: list[str],
        **options,
    ) -> None:
        user_model = get_user_model()
        try:
            owner = user_model.objects.get(**{user_model.USERNAME_FIELD: user})
        except user_model.DoesNotExist:
            raise CommandError(f"There is no user {user!r}; create one first (manage.py createsuperuser).") from None
        name = name.strip()
        max_length = ClientToken._meta.get_field("name").max_length
        if not name or (max_length is not None and len(name) > max_length):
            raise CommandError(f"Give the token a name of 1 to {max_length} characters, e.g. --name claude-desktop.")
        bad = [t for t in tool if safe_identifier(t) == REDACTED]
        if bad:
            raise CommandError(f"Not a tool name: {', '.join(map(repr, bad))}.")
        bad = [s for s in server if not is_server_name(s)]
        if bad:
            raise CommandError(f"Not a server name ({SERVER_NAME_RULE}): {', '.join(map(repr, bad))}.")
        if tool and not tools:
            raise CommandError("--tool limits the tools a token may call, and --no-tools lets it call none: give one.")
        if count_for_allocation and not report_outcomes:
            raise CommandError("--count-for-allocation needs --report-outcomes: the token reports nothing otherwise.")
        token, raw_key = client_token_create(
            user=owner,
            name=name,
            tool_scope=tool,
            servers=server,
            can_write_catalog=write,
            can_read_metrics=metrics,
            can_read_catalog=catalog,
            can_call_tools=tools,
            can_report_outcomes=report_outcomes,
            outcomes_count_for_allocation=count_for_allocation,
        )
        scope = ", ".join(token.tool_scope) if token.tool_scope else "all tools" if tools else "no tool calls"
        if token.servers:
            scope += " on " + ", ".join(f"/mcp/{s}".rstrip("/") for s in token.servers)
        rights = "catalog read and write" if write else "catalog read-only"
        # A staff user's tokens read metrics whatever the flag says
        # (errcatalog.web.api.views.outcomes.MetricsReadAccess).
        if metrics:
            rights += ", metrics"
        elif owner.is_staff:
            rights += ", metrics (as a staff user's token, while the user is staff)"
        rights += "" if catalog else ", no catalog resources or prompts"
        if report_outcomes:
            rights += ", reports outcomes" + (" counted for allocation" if count_for_allocation else "")
        if metrics and owner.is_staff:
            self.stderr.write(
                f"Note: {user} is staff, and a staff user's tokens read metrics without --metrics; the flag only "
                f"keeps this token reading them if {user} stops being staff."
            )
        self.stderr.write(
            f"Created token {token.name!r} ({token.key_prefix}…) for {user}: {rights}, {scope}.\n"
            "Store the key now; it is not shown again."
        )
        self.stdout.write(raw_key)
