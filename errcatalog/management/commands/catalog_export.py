"""``manage.py catalog_export [-o FILE] [--format yaml|json]``: the whole catalog as one document.

Without ``-o`` the document goes to stdout, alone, so it can be piped or redirected.
"""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from errcatalog.catalog.document import FORMATS, SUFFIX_FORMATS, dump_catalog
from errcatalog.catalog.export import catalog_document_from_db


class Command(BaseCommand):
    help = "Export the whole error catalog (codes, variants, hints, rules, upstreams, named servers) as YAML or JSON."

    def add_arguments(self, parser) -> None:
        parser.add_argument("-o", "--output", metavar="FILE", help="Write to FILE instead of stdout.")
        parser.add_argument(
            "--format",
            choices=FORMATS,
            help="Document format. Default: from the suffix of FILE (.yaml, .yml, .json), else yaml.",
        )

    def handle(self, *args, output: str | None, format: str | None, **options) -> None:
        fmt = format or "yaml"
        if output:
            suffix_format = SUFFIX_FORMATS.get(Path(output).suffix.lower())
            if format is None:
                if suffix_format is None:
                    raise CommandError(f"{output}: cannot tell the format from the suffix; use --format yaml|json.")
                fmt = suffix_format
            elif suffix_format is not None and format != suffix_format:
                raise CommandError(f"{output}: --format {format} does not match the file suffix.")
        doc = catalog_document_from_db(upstreams=True)
        text = dump_catalog(doc, fmt)
        if not output:
            self.stdout.write(text, ending="")
            return
        try:
            Path(output).write_text(text, encoding="utf-8")
        except OSError as exc:
            raise CommandError(f"{output}: cannot write the file ({exc.strerror or exc}).") from None
        self.stderr.write(
            f"Exported {len(doc['codes'])} codes, {sum(len(c['variants']) for c in doc['codes'])} variants, "
            f"{len(doc['hints'])} hints, {len(doc['rules'])} rules, {len(doc['upstreams'])} upstreams and "
            f"{len(doc['named_servers'])} named servers to {output}."
        )
