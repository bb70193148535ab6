"""``manage.py catalog_lint [FILE] [--strict]``: the template lint over the database's catalog, or over a file.

Each warning is one line naming the code, variant (or hint), field and rule (``errcatalog.catalog.lint``). The
exit status is 0 when the catalog is clean, or has only warnings without ``--strict``; 1 with warnings under
``--strict``, which is how CI holds the shipped catalog to the rules; 2 when FILE is not a valid catalog.
"""

from __future__ import annotations

import sys

from django.core.management.base import BaseCommand, CommandError

from errcatalog.catalog.document import CatalogFileError, read_catalog_file
from errcatalog.catalog.export import catalog_document_from_db
from errcatalog.catalog.services import lint_lines


class Command(BaseCommand):
    help = "Check every template variant and hint against the rules for writing error text a model can act on."

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "file", metavar="FILE", nargs="?", help="A catalog document to check instead of the database's catalog."
        )
        parser.add_argument("--strict", action="store_true", help="Exit with status 1 when there is any warning.")

    def handle(self, *args, file: str | None, strict: bool, **options) -> None:
        if file:
            try:
                doc = read_catalog_file(file)
            except CatalogFileError as exc:
                raise CommandError(str(exc), returncode=2) from None
        else:
            doc = catalog_document_from_db()
        source = file or "the catalog"
        lines = lint_lines(doc)
        for line in lines:
            self.stdout.write(line)
        variants = sum(len(code["variants"]) for code in doc["codes"])
        counted = f"{len(doc['codes'])} codes, {variants} variants and {len(doc['hints'])} hints"
        if not lines:
            self.stdout.write(self.style.SUCCESS(f"{source}: {counted}, no warnings."))
            return
        self.stdout.write(self.style.WARNING(f"{source}: {counted}, warnings: {len(lines)}."))
        if strict:
            sys.exit(1)
