"""The catalog export: the catalog in the database as one normalised catalog document, the same form
``errcatalog.catalog.document.validate_catalog_document`` returns, so export → import → export is byte-identical.

It only reads. The document's format, schema and text belong to ``errcatalog.catalog.document``; this module
imports them, never the reverse, so parsing and validating a file need no database."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from errcatalog.catalog import models
from errcatalog.catalog.document import FORMAT, entry_fields
from errcatalog.gateway.models import NamedServer, NamedServerUpstream, Upstream


def catalog_document_from_db(*, codes: Iterable[str] | None = None, upstreams: bool = False) -> dict:
    """The whole catalog in the database as a normalised document (the same form ``validate`` returns).

    ``codes`` limits the document's codes to those named (hints and rules are all kept: a preview of one code
    renders with them). ``upstreams`` adds the gateway's upstreams, their values as stored (``env:`` references and
    sealed values, never a clear one), and the named servers composed of them: an export keeps them, a snapshot has
    no use for them. Four queries of plain
    values, whatever the catalog's size: this is how every process builds its snapshot, so it is kept to a few
    hundred milliseconds for ten thousand variants.
    """
    code_keys, variant_keys = entry_fields("code"), entry_fields("variant")
    hint_keys, rule_keys = entry_fields("hint"), entry_fields("rule")
    code_rows = models.ErrorCode.objects.order_by()
    variant_rows = models.TemplateVariant.objects.order_by()
    if codes is not None:
        code_rows = code_rows.filter(code__in=list(codes))
        variant_rows = variant_rows.filter(error_code__code__in=list(codes))
    variants_of: dict[int, list[dict[str, Any]]] = {}
    for variant in variant_rows.values("error_code_id", *variant_keys):
        variants_of.setdefault(variant.pop("error_code_id"), []).append(variant)
    entries = []
    for row in code_rows.values("id", *(key for key in code_keys if key != "variants")):
        variants = sorted(variants_of.get(row["id"], ()), key=lambda v: (v["locale"], v["name"]))
        entries.append({key: variants if key == "variants" else row[key] for key in code_keys})
    hints = [{key: h[key] for key in hint_keys} for h in models.ParameterHint.objects.order_by().values(*hint_keys)]
    rules = [
        {key: r["error_code__code"] if key == "code" else r[key] for key in rule_keys}
        for r in models.ClassificationRule.objects.order_by().values(
            "error_code__code", *(key for key in rule_keys if key != "code")
        )
    ]
    doc = {
        "format": FORMAT,
        "codes": sorted(entries, key=lambda c: c["code"]),
        "hints": sorted(hints, key=lambda h: (h["tool"], h["parameter"])),
        "rules": sorted(rules, key=lambda r: r["position"]),
    }
    if upstreams:
        doc["upstreams"] = list(Upstream.objects.order_by("name").values(*entry_fields("upstream")))
        doc["named_servers"] = _named_servers_from_db()
    return doc


def _named_servers_from_db() -> list[dict[str, Any]]:
    member_keys = entry_fields("named_server_upstream")
    members: dict[int, list[dict[str, Any]]] = {}
    rows = NamedServerUpstream.objects.order_by("upstream__name").values("server_id", "upstream__name", "tools")
    for row in rows:
        member = {"name": row["upstream__name"], "tools": row["tools"]}
        members.setdefault(row["server_id"], []).append({key: member[key] for key in member_keys})
    servers = []
    own_keys = [key for key in entry_fields("named_server") if key != "upstreams"]
    for row in NamedServer.objects.order_by("name").values("id", *own_keys):
        server = {key: row[key] for key in own_keys}
        servers.append({key: members.get(row["id"], []) if key == "upstreams" else server[key]
                        for key in entry_fields("named_server")})  # fmt: skip
    return servers
