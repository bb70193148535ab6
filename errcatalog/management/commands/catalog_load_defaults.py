"""``manage.py catalog_load_defaults [--reset]``: load the shipped default catalog; safe to run on every start.

By default only what is missing is created, and rows an editor deleted are not brought back, so editors'
work survives. ``--reset`` restores the shipped wording of every default row (other rows are kept).
"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from errcatalog.catalog.defaults import DEFAULT_CATALOG_PATH, catalog_load_defaults
from errcatalog.catalog.document import CatalogFileError


class Command(BaseCommand):
    help = "Load the default error catalog: create what is missing, or with --reset overwrite the defaults."

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "--reset",
            action="store_true",
            help="Overwrite default codes, variants, hints and rules with the shipped version, "
            "and recreate deleted ones.",
        )

    def handle(self, *args, reset: bool, **options) -> None:
        try:
            summary = catalog_load_defaults(reset=reset)
        except CatalogFileError as exc:
            raise CommandError(str(exc)) from None
        if options["verbosity"] >= 2:
            for change in summary.changes:
                self.stdout.write(f"  {change}")
        mode = "reset to" if reset else "loaded missing rows from"
        self.stdout.write(f"Default catalog {mode} {DEFAULT_CATALOG_PATH.name}: {summary}.")
