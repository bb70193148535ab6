"""``manage.py upstream_import FILE``: put the MCP servers of an ``mcpServers`` block behind the gateway.

FILE is the JSON an MCP client keeps its servers in (Claude Desktop's ``claude_desktop_config.json``, Cursor's
``mcp.json``, VS Code's ``servers``). Each entry becomes an upstream (created, or updated by name); a value that
looks like a secret is not stored but turned into an ``env:`` reference, and the command lists the variables to
set in the web processes' environment. ``catalog_import`` accepts the same files.
"""

from __future__ import annotations

from pathlib import Path

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, OutputWrapper

from errcatalog.catalog.document import CatalogFileError, read_import_text
from errcatalog.gateway.client_config import ClientConfigError, client_config_loads
from errcatalog.gateway.services import UpstreamImportSummary, upstreams_import


class Command(BaseCommand):
    help = "Import the upstream MCP servers of an mcpServers JSON block (as MCP clients keep them)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("file", metavar="FILE", help="A JSON file with an mcpServers (or servers) object.")

    def handle(self, *args, file: str, **options) -> None:
        try:
            document = client_config_loads(read_import_text(Path(file), source=file))
        except CatalogFileError as exc:  # missing, unreadable, too large or not UTF-8
            raise CommandError(str(exc)) from None
        except ClientConfigError as exc:  # not JSON, too deep, a string too long
            raise CommandError(f"{file}: {exc}") from None
        import_upstreams(document, file, self.stdout)


def import_upstreams(document: object, file: str, stdout: OutputWrapper) -> UpstreamImportSummary:
    """Import and report; shared with ``catalog_import``, which hands such files here."""
    try:
        summary = upstreams_import(document, actor=None, change_reason=f"imported from {Path(file).name}")
    except ClientConfigError as exc:
        raise CommandError(f"{file}: {exc}") from None
    except ValidationError as exc:
        problems = "; ".join(f"{field}: {' '.join(errors)}" for field, errors in exc.message_dict.items())
        raise CommandError(f"{file}: nothing was imported ({problems}).") from None
    stdout.write(f"Imported upstreams from {file}: {summary}.")
    for name in summary.created + summary.updated:
        stdout.write(f"  {name}")
    if summary.variables:
        stdout.write("Secrets were not stored. Set these variables in the web processes' environment:")
        for variable, origin in sorted(summary.variables.items()):
            stdout.write(f"  {variable}  (was {origin})")
    return summary
