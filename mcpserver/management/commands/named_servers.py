"""``manage.py named_servers [NAME ...]``: the named servers staff composed, for people without a browser.

Lists each named server: its path and whether it is served, the first line of its description (its instructions to
the client's model), our tools it serves (marking those this deployment does not serve), its upstreams with the tools
chosen of each (marking a disabled upstream), how many client tokens are limited to it, and the warnings admin shows
about chosen upstream tools that will not be served as staff may expect (``named_server_tool_warnings``). It lives
with the MCP server because our tools are the registry's, which ``errcatalog`` never imports.
"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from errcatalog.access.models import ClientToken
from errcatalog.gateway.models import NamedServer
from errcatalog.gateway.named_servers import named_server_tool_warnings
from mcpserver.registry import served_tool_names


class Command(BaseCommand):
    help = "List the named servers staff composed of our tools and upstreams, each served at /mcp/<name>."

    def add_arguments(self, parser) -> None:
        parser.add_argument("names", nargs="*", metavar="NAME", help="Only these named servers.")

    def handle(self, *args, names: list[str], **options) -> None:
        servers = NamedServer.objects.order_by("name").prefetch_related("members__upstream")
        if names:
            servers = servers.filter(name__in=names)
            missing = set(names) - {s.name for s in servers}
            if missing:
                raise CommandError(f"No named server named {', '.join(sorted(missing))}.")
        if not servers:
            self.stdout.write("No named servers. Compose one in admin, or import a catalog document's named_servers.")
            return
        served = served_tool_names()
        limited: dict[str, int] = {}
        for token_servers in ClientToken.objects.values_list("servers", flat=True):
            for name in token_servers if isinstance(token_servers, list) else ():
                limited[name] = limited.get(name, 0) + 1
        for server in servers:
            state = "enabled" if server.enabled else "disabled: its path answers 404"
            self.stdout.write(f"{server.name} ({state}): /mcp/{server.name}")
            if server.description.strip():
                self.stdout.write(f"  {server.description.strip().splitlines()[0][:120]}")
            tools = [tool if tool in served else f"{tool} (not served here)" for tool in server.tools]
            self.stdout.write(f"  our tools: {', '.join(tools) or 'none'}")
            members = sorted(server.members.all(), key=lambda m: m.upstream.name)
            for member in members:
                chosen = ", ".join(member.tools) or "every tool /mcp serves of it"
                off = "" if member.upstream.enabled else " (disabled: none served)"
                self.stdout.write(f"  upstream {member.upstream.name}{off}: {chosen}")
            if not members:
                self.stdout.write("  upstreams: none")
            self.stdout.write(f"  tokens limited to it: {limited.get(server.name, 0)}")
            for warning in named_server_tool_warnings({m.upstream.name: m.tools for m in members}):
                self.stdout.write(self.style.WARNING(f"  warning: {warning}"))
