"""``manage.py catalog_import FILE [--replace] [--dry-run]``: write a catalog document to the database.

A JSON file with an ``mcpServers`` (or ``servers``) object, as MCP clients keep their servers, is imported as
upstreams instead (``upstream_import``).

An invalid file changes nothing: every problem is listed (file, entry, field) and the command exits non-zero. A
valid one is imported, and the template lint's warnings about it are listed after (``manage.py catalog_lint``), then
each named server's chosen upstream tools that will not be served as written (the upstream's recorded listing lacks
them, they wait for approval, or its exposed tools leave them out), as admin warns of them.
"""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from django.db import DatabaseError, transaction

from errcatalog.catalog.document import CatalogFileError, read_catalog_file, read_import_text
from errcatalog.catalog.services import catalog_import
from errcatalog.gateway.client_config import ClientConfigError, client_config_loads
from errcatalog.management.commands.upstream_import import import_upstreams
from mcpserver.registry import served_tool_names


class Command(BaseCommand):
    help = "Import an error catalog from a YAML or JSON file: update changed rows, create missing ones."

    def add_arguments(self, parser) -> None:
        parser.add_argument("file", metavar="FILE", help="Catalog document (.yaml, .yml or .json).")
        parser.add_argument(
            "--replace",
            action="store_true",
            help="Also delete codes, variants, hints and rules the file lacks (and upstreams and named servers, if it "
            "lists them).",
        )
        parser.add_argument(
            "--dry-run", action="store_true", help="Validate and report what would change, then roll back."
        )

    def handle(self, *args, file: str, replace: bool, dry_run: bool, **options) -> None:
        client_config = _client_config(file)
        if client_config is not None:  # an MCP client's mcpServers block: upstreams, not catalog entries
            import_upstreams(client_config, file, self.stdout)
            return
        try:
            doc = read_catalog_file(file)
            with transaction.atomic():
                # A named server's own tools must be ones this deployment serves (the MCP server's registry).
                summary = catalog_import(doc, replace=replace, source=file, known_tools=served_tool_names())
                if dry_run:
                    transaction.set_rollback(True)
        except CatalogFileError as exc:
            raise CommandError(str(exc)) from None
        except DatabaseError as exc:
            raise CommandError(f"{file}: the database refused the catalog; nothing was changed ({exc}).") from None
        if dry_run or options["verbosity"] >= 2:
            for change in summary.changes:
                self.stdout.write(f"  {change}")
        if dry_run:
            self.stdout.write(f"Dry run, nothing saved. {file} would give: {summary}.")
        else:
            self.stdout.write(f"Imported {file}: {summary}.")
        if summary.warnings:
            self.stdout.write(
                self.style.WARNING(f"Template warnings (the rules for writing error text): {len(summary.warnings)}")
            )
            for line in summary.warnings:
                self.stdout.write(f"  {line}")
        if summary.named_server_warnings:
            self.stdout.write(
                self.style.WARNING(f"Named servers' upstream tools not served as written: "
                                   f"{len(summary.named_server_warnings)}")
            )  # fmt: skip
            for line in summary.named_server_warnings:
                self.stdout.write(f"  {line}")


def _client_config(file: str) -> object | None:
    if not file.endswith(".json"):
        return None
    try:
        document = client_config_loads(read_import_text(Path(file), source=file))
    except (CatalogFileError, ClientConfigError):
        return None  # read_catalog_file says what is wrong with it
    if isinstance(document, dict) and ("mcpServers" in document or "servers" in document):
        return document
    return None
