"""The one write path of the catalog: error codes with their variants, parameter hints, classification rules,
and a whole catalog document.

The admin, the REST API and ``catalog_import`` all write through this module, and each row is checked here
before it is saved: its fields' validators and the model's ``clean()`` (the catalog's rules, written once in
``errcatalog.catalog.models``). A row that breaks one raises Django's ``ValidationError``, which the admin shows
at the field and the REST API answers as a 400. Uniqueness and ranges are database constraints, the last line.
Every save names its changed fields, so history rows and ``updated_at`` move only when something changed.
"""

from __future__ import annotations

import copy
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.core.exceptions import NON_FIELD_ERRORS, ValidationError
from django.db import models, transaction
from django.utils import timezone
from simple_history.utils import bulk_create_with_history, bulk_update_with_history

from errcatalog.catalog.document import (
    CatalogFileError,
    DocPath,
    entry_fields,
    problem_lines,
    validate_catalog_document,
)
from errcatalog.catalog.lint import lint_catalog
from errcatalog.catalog.models import ClassificationRule, ErrorCode, ParameterHint, TemplateVariant
from errcatalog.catalog.signals import catalog_changed_on_commit
from errcatalog.gateway.named_servers import (
    entry_upstreams,
    named_server_tool_warnings,
    named_servers_prune,
    named_servers_sync,
)
from errcatalog.gateway.services import upstreams_sync

# --- Rows -------------------------------------------------------------------------------------------------


def _prepare(row: models.Model, change_reason: str, *, exclude: Iterable[str] = ()) -> None:
    # Uniqueness and ranges are left to the database constraints (and, before them, to the admin's forms and the
    # API's serializers, which say which field they concern); every other rule of the row is checked here.
    row.full_clean(exclude=list(exclude), validate_unique=False, validate_constraints=False)
    if change_reason:
        row._change_reason = change_reason  # type: ignore[attr-defined]  # read by django-simple-history


def _create[Row: models.Model](model: type[Row], fields: Mapping[str, Any], change_reason: str) -> Row:
    row = model(**fields)
    _prepare(row, change_reason)
    row.save()
    return row


def _update(row: models.Model, fields: Mapping[str, Any], change_reason: str) -> list[str]:
    """Save the fields that differ from the row; return their names (none: nothing is written)."""
    changed = [name for name, value in fields.items() if getattr(row, name) != value]
    if not changed:
        return []
    for name in changed:
        value = fields[name]
        # A list or mapping (a JSON field's value) is copied, so the caller's data and the row never share it.
        setattr(row, name, copy.deepcopy(value) if isinstance(value, list | dict) else value)
    _prepare(row, change_reason)
    # auto_now fields are only refreshed when they are among update_fields.
    stamps = [f.name for f in row._meta.concrete_fields if getattr(f, "auto_now", False)]
    row.save(update_fields=[*changed, *stamps])
    return changed


def _delete(row: models.Model, change_reason: str) -> None:
    if change_reason:
        row._change_reason = change_reason  # type: ignore[attr-defined]
    row.delete()


def _variant_key(fields: Mapping[str, Any]) -> tuple[str, str]:
    return fields.get("locale", ""), fields.get("name", "default")


@transaction.atomic
def error_code_create(
    *, variants: Iterable[Mapping[str, Any]] = (), change_reason: str = "", **fields: Any
) -> ErrorCode:
    """Create a code with its variants."""
    error_code = _create(ErrorCode, fields, change_reason)
    for variant in variants:
        template_variant_create(error_code=error_code, change_reason=change_reason, **variant)
    return error_code


@transaction.atomic
def error_code_update(
    *,
    error_code: ErrorCode,
    variants: Iterable[Mapping[str, Any]] | None = None,
    replace_variants: bool = False,
    change_reason: str = "",
    **fields: Any,
) -> ErrorCode:
    """Change a code's fields and, when ``variants`` is given, its variants, matched by (locale, name).

    Matched variants are updated in place (keeping their history), unmatched ones are created. With
    ``replace_variants`` the given list is the complete set and variants not in it are deleted; otherwise they
    are kept.
    """
    _update(error_code, fields, change_reason)
    if variants is None:
        return error_code
    existing = {(v.locale, v.name): v for v in error_code.variants.all()}
    given = {_variant_key(v): v for v in variants}
    if replace_variants:
        for key, stale in existing.items():
            if key not in given:
                _delete(stale, change_reason)
    for key, variant_fields in given.items():
        current = existing.get(key)
        if current is None:
            template_variant_create(error_code=error_code, change_reason=change_reason, **variant_fields)
        else:
            _update(current, variant_fields, change_reason)
    return error_code


@transaction.atomic
def error_code_delete(*, error_code: ErrorCode, change_reason: str = "") -> None:
    """Delete a code and its variants. Raises ``ProtectedError`` while classification rules point to it."""
    _delete(error_code, change_reason)


@transaction.atomic
def template_variant_create(*, error_code: ErrorCode, change_reason: str = "", **fields: Any) -> TemplateVariant:
    return _create(TemplateVariant, {"error_code": error_code, **fields}, change_reason)


@transaction.atomic
def template_variant_update(*, variant: TemplateVariant, change_reason: str = "", **fields: Any) -> TemplateVariant:
    _update(variant, fields, change_reason)
    return variant


@transaction.atomic
def template_variant_delete(*, variant: TemplateVariant, change_reason: str = "") -> None:
    _delete(variant, change_reason)


@transaction.atomic
def parameter_hint_create(*, change_reason: str = "", **fields: Any) -> ParameterHint:
    return _create(ParameterHint, fields, change_reason)


@transaction.atomic
def parameter_hint_update(*, hint: ParameterHint, change_reason: str = "", **fields: Any) -> ParameterHint:
    _update(hint, fields, change_reason)
    return hint


@transaction.atomic
def parameter_hint_delete(*, hint: ParameterHint, change_reason: str = "") -> None:
    _delete(hint, change_reason)


@transaction.atomic
def classification_rule_create(*, change_reason: str = "", **fields: Any) -> ClassificationRule:
    return _create(ClassificationRule, fields, change_reason)


@transaction.atomic
def classification_rule_update(
    *, rule: ClassificationRule, change_reason: str = "", **fields: Any
) -> ClassificationRule:
    _update(rule, fields, change_reason)
    return rule


@transaction.atomic
def classification_rule_delete(*, rule: ClassificationRule, change_reason: str = "") -> None:
    _delete(rule, change_reason)


# --- A whole catalog document -----------------------------------------------------------------------------


@dataclass
class ImportSummary:
    """What an import did (or, in a rolled-back dry run, would do), row by row."""

    created: int = 0
    updated: int = 0
    deleted: int = 0
    unchanged: int = 0
    # Default rows an editor deleted, which loading the defaults does not bring back.
    skipped: int = 0
    changes: list[str] = field(default_factory=list)
    # The template lint's warnings about the document (``errcatalog.catalog.lint``): imported all the same.
    warnings: list[str] = field(default_factory=list)
    # Its named servers' chosen upstream tools that will not be served as written (``named_server_tool_warnings``).
    named_server_warnings: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.created or self.updated or self.deleted)

    def __str__(self) -> str:
        text = f"{self.created} created, {self.updated} updated, {self.deleted} deleted, {self.unchanged} unchanged"
        if self.skipped:
            text += f", {self.skipped} skipped (deleted by an editor)"
        return text


@transaction.atomic
def catalog_import(
    doc: Mapping[str, Any],
    *,
    replace: bool = False,
    only_missing: bool = False,
    reason: str = "catalog import",
    source: str = "<document>",
    known_tools: Collection[str] | None = None,
) -> ImportSummary:
    """Write a catalog document to the database; raise ``CatalogFileError`` (nothing written) if it is invalid.

    Codes are matched by ``code``, variants by (code, locale, name), hints by (tool, parameter), rules by
    position. Rows that differ are updated (only the changed fields, so history shows real edits), missing rows
    created; every row is checked as the row services check it, then all are written in bulk with their history.
    ``replace`` also deletes rows the document does not have. ``only_missing`` creates missing rows and leaves
    existing ones alone, and does not recreate rows that history shows an editor deleted: that is how the defaults
    are loaded without undoing editors' work. ``reason`` is the history change reason; ``source`` names the document
    in problems. A document's ``upstreams`` go through the gateway's services (``upstreams_sync``) as the command
    line's, which may write stdio upstreams; a document without the key leaves upstreams alone. Its
    ``named_servers`` likewise go through theirs (``errcatalog.gateway.named_servers``), after the upstreams they
    name, their own tools checked against ``known_tools`` when it is given (the tools this deployment serves).
    """
    if replace and only_missing:
        raise ValueError("replace and only_missing exclude each other")
    doc = validate_catalog_document(doc, source=source)
    writer = _CatalogWriter(doc, only_missing=only_missing, reason=reason, source=source)
    if replace:
        positions = {r["position"] for r in doc["rules"]}
        # Rules first: they PROTECT the codes that may be deleted below.
        writer.delete(r for r in ClassificationRule.objects.select_related("error_code") if r.position not in positions)
    writer.write()
    if replace:
        codes = {c["code"] for c in doc["codes"]}
        variants = {(c["code"], v["locale"], v["name"]) for c in doc["codes"] for v in c["variants"]}
        hints = {(h["tool"], h["parameter"]) for h in doc["hints"]}
        writer.delete(
            v
            for v in TemplateVariant.objects.select_related("error_code")
            if (v.error_code.code, v.locale, v.name) not in variants
        )
        writer.delete(h for h in ParameterHint.objects.all() if (h.tool, h.parameter) not in hints)
        writer.delete(c for c in ErrorCode.objects.all() if c.code not in codes)
    if replace and "named_servers" in doc:
        # Before the upstreams: an upstream of the document may take the name of a named server it drops.
        deleted = named_servers_prune([s["name"] for s in doc["named_servers"]], actor=None, change_reason=reason)
        writer.summary.deleted += len(deleted)
        writer.summary.changes.extend(f"delete named server {name}" for name in deleted)
    if "upstreams" in doc:
        _import_upstreams(doc, writer.summary, replace=replace, only_missing=only_missing, reason=reason, source=source)
    if "named_servers" in doc:
        _import_named_servers(doc, writer.summary, only_missing=only_missing, known_tools=known_tools, reason=reason,
                              source=source)  # fmt: skip
    if writer.summary.changed:
        catalog_changed_on_commit()
    writer.summary.warnings = lint_lines(doc)
    return writer.summary


def lint_lines(doc: Mapping[str, Any]) -> list[str]:
    """The template lint's warnings about a validated document, as lines naming entry, field and rule."""
    findings = lint_catalog(doc, max_chars=settings.ERRCATALOG["MAX_MESSAGE_CHARS"])
    return problem_lines(doc, [(f.path, f"{f.message} [{f.rule}]") for f in findings])


def _import_upstreams(
    doc: Mapping[str, Any], summary: ImportSummary, *, replace: bool, only_missing: bool, reason: str, source: str
) -> None:
    try:
        done = upstreams_sync(
            doc["upstreams"], actor=None, replace=replace, only_missing=only_missing, change_reason=reason
        )
    except ValidationError as exc:  # the command line may write stdio upstreams: no PermissionDenied here
        raise CatalogFileError(source, _entry_problems(doc, "upstreams", exc)) from None
    _count(summary, "upstream", done)


def _import_named_servers(
    doc: Mapping[str, Any],
    summary: ImportSummary,
    *,
    only_missing: bool,
    known_tools: Collection[str] | None,
    reason: str,
    source: str,
) -> None:
    try:
        done = named_servers_sync(
            doc["named_servers"], actor=None, only_missing=only_missing, known_tools=known_tools, change_reason=reason
        )
    except ValidationError as exc:
        raise CatalogFileError(source, _entry_problems(doc, "named_servers", exc)) from None
    _count(summary, "named server", done)
    for i, entry in enumerate(doc["named_servers"]):
        warnings = named_server_tool_warnings(entry_upstreams(entry))
        summary.named_server_warnings += problem_lines(doc, [(("named_servers", i, "upstreams"), w) for w in warnings])


def _entry_problems(doc: Mapping[str, Any], section: str, exc: ValidationError) -> list[str]:
    """A gateway service's problems (keyed ``<name>.<field>``) at their entries of ``section``."""
    index = {entry["name"]: i for i, entry in enumerate(doc[section])}
    problems: list[tuple[DocPath, str]] = []
    for key, texts in exc.message_dict.items():
        name, _, field_name = key.partition(".")
        at: DocPath = (section, index[name]) if name in index else (section,)
        for text in texts:
            problems.append(((*at, field_name) if field_name and field_name != NON_FIELD_ERRORS else at, text))
    return problem_lines(doc, problems)


def _count(summary: ImportSummary, what: str, done: Any) -> None:
    summary.created += len(done.created)
    summary.updated += len(done.updated)
    summary.deleted += len(done.deleted)
    summary.unchanged += len(done.unchanged)
    summary.changes.extend(f"create {what} {name}" for name in done.created)
    summary.changes.extend(f"update {what} {name}" for name in done.updated)
    summary.changes.extend(f"delete {what} {name}" for name in done.deleted)


# Rows per INSERT/UPDATE statement of an import: large enough to be few statements, small enough that the CASE
# expressions of a bulk update stay cheap to build and the statements stay under SQLite's variable limit.
BULK_BATCH_SIZE = 500


@dataclass
class _Pending:
    """One model's rows that an import writes in bulk: new ones, and changed ones by the fields that changed."""

    created: list[models.Model] = field(default_factory=list)
    updated: dict[tuple[str, ...], list[models.Model]] = field(default_factory=dict)


class _CatalogWriter:
    """Upserts one normalised document, counting what it does: every row is checked first, as the row services
    check it (``full_clean``), then all are written in bulk, with their history.

    A document of thousands of rows is a few dozen statements instead of several per row. History records each
    created and changed row as a save would (``+`` and ``~``, the import's change reason, the request's user when
    there is one); deletions, which are rare and cascade, go through ``_delete`` one by one. Bulk writes send no
    ``post_save``, so the import announces the change itself (``catalog_changed_on_commit``).
    """

    def __init__(self, doc: Mapping[str, Any], *, only_missing: bool, reason: str, source: str) -> None:
        self.doc = doc
        self.source = source
        self.only_missing = only_missing
        self.reason = reason
        self.summary = ImportSummary()
        self.deleted_by_editors = _deleted_keys() if only_missing else _DeletedKeys()
        # In write order: codes first, since the other rows point to them.
        self.pending: dict[type[models.Model], _Pending] = {
            model: _Pending() for model in (ErrorCode, TemplateVariant, ParameterHint, ClassificationRule)
        }
        self.now = timezone.now()

    def write(self) -> None:
        """Check every row of the document (raising ``CatalogFileError`` before anything is written), then write."""
        doc = self.doc
        code_keys, variant_keys = entry_fields("code"), entry_fields("variant")
        hint_keys, rule_keys = entry_fields("hint"), entry_fields("rule")
        codes = {c.code: c for c in ErrorCode.objects.all()}
        variants = {
            (v.error_code.code, v.locale, v.name): v for v in TemplateVariant.objects.select_related("error_code")
        }
        hints = {(h.tool, h.parameter): h for h in ParameterHint.objects.all()}
        rules = {r.position: r for r in ClassificationRule.objects.select_related("error_code")}

        at: DocPath  # where the entry being written is, for the problems found in it
        for i, entry in enumerate(doc["codes"]):
            code = entry["code"]
            if self._skip(code not in codes and code in self.deleted_by_editors.codes):
                self.summary.skipped += len(entry["variants"])
                continue
            values = {k: entry[k] for k in code_keys if k not in ("code", "variants")}
            row, at = codes.get(code), ("codes", i)
            if row is None:
                row = codes[code] = self._created(ErrorCode(code=code, **values), f"code {code}", at)
            else:
                self._updated(row, values, f"code {code}", at)
            for j, variant in enumerate(entry["variants"]):
                key = (code, variant["locale"], variant["name"])
                if self._skip(key not in variants and key in self.deleted_by_editors.variants):
                    continue
                label = f"variant {code}/{variant['name']}" + (f" [{variant['locale']}]" if variant["locale"] else "")
                at = ("codes", i, "variants", j)
                if key in variants:
                    values = {k: variant[k] for k in variant_keys if k not in ("locale", "name")}
                    self._updated(variants[key], values, label, at)
                else:
                    fields = {k: variant[k] for k in variant_keys}
                    self._created(TemplateVariant(error_code=row, **fields), label, at)

        for i, hint in enumerate(doc["hints"]):
            hint_key = (hint["tool"], hint["parameter"])
            if self._skip(hint_key not in hints and hint_key in self.deleted_by_editors.hints):
                continue
            label, at = f"hint {hint_key[0]}.{hint_key[1]}", ("hints", i)
            if hint_key in hints:
                values = {k: hint[k] for k in hint_keys if k not in ("tool", "parameter")}
                self._updated(hints[hint_key], values, label, at)
            else:
                self._created(ParameterHint(**{k: hint[k] for k in hint_keys}), label, at)

        for i, rule in enumerate(doc["rules"]):
            position, code = rule["position"], rule["code"]
            if self._skip(position not in rules and (position in self.deleted_by_editors.rules or code not in codes)):
                continue
            values = {k: rule[k] for k in rule_keys if k not in ("position", "code")}
            values["error_code"] = codes[code]
            label, at = f"rule #{position} → {code}", ("rules", i)
            if position in rules:
                self._updated(rules[position], values, label, at)
            else:
                self._created(ClassificationRule(position=position, **values), label, at)

        self._flush()

    def _skip(self, deleted: bool) -> bool:
        if deleted:
            self.summary.skipped += 1
        return deleted

    def _check(self, row: models.Model, at: DocPath) -> None:
        """The row services' check of one row; a row it refuses is a problem of the document at that entry."""
        try:
            # The code a variant or rule points to is one just loaded or planned: no query per row to find it.
            _prepare(row, self.reason, exclude=["error_code"])
        except ValidationError as exc:
            errors = exc.message_dict if hasattr(exc, "error_dict") else {NON_FIELD_ERRORS: exc.messages}
            problems = [
                (at if name == NON_FIELD_ERRORS else (*at, name), text)
                for name, texts in errors.items()
                for text in texts
            ]
            raise CatalogFileError(self.source, problem_lines(self.doc, problems)) from None

    def _created[Row: models.Model](self, row: Row, label: str, at: DocPath) -> Row:
        self._check(row, at)
        self.pending[type(row)].created.append(row)
        self.summary.created += 1
        self.summary.changes.append(f"create {label}")
        return row

    def _updated(self, row: models.Model, values: Mapping[str, Any], label: str, at: DocPath) -> None:
        changed = [] if self.only_missing else [name for name, value in values.items() if getattr(row, name) != value]
        if not changed:
            self.summary.unchanged += 1
            return
        for name in changed:
            value = values[name]
            # A list or mapping (a JSON field's value) is copied, so the document and the row never share it.
            setattr(row, name, copy.deepcopy(value) if isinstance(value, list | dict) else value)
        self._check(row, at)
        # auto_now fields move with a save, not with a bulk update: they are set here, to one time for the import.
        stamps = [f.name for f in row._meta.concrete_fields if getattr(f, "auto_now", False)]
        for name in stamps:
            setattr(row, name, self.now)
        self.pending[type(row)].updated.setdefault((*changed, *stamps), []).append(row)
        self.summary.updated += 1
        self.summary.changes.append(f"update {label}: {', '.join(changed)}")

    def _flush(self) -> None:
        for model, pending in self.pending.items():
            if pending.created:
                bulk_create_with_history(
                    pending.created, model, batch_size=BULK_BATCH_SIZE, default_change_reason=self.reason
                )
            for fields, rows in pending.updated.items():
                bulk_update_with_history(
                    rows, model, list(fields), batch_size=BULK_BATCH_SIZE, default_change_reason=self.reason
                )

    def delete(self, rows: Iterable[models.Model]) -> None:
        for row in list(rows):
            label = f"{type(row)._meta.verbose_name} {row}"
            _delete(row, self.reason)
            self.summary.deleted += 1
            self.summary.changes.append(f"delete {label}")


@dataclass(frozen=True)
class _DeletedKeys:
    codes: frozenset[str] = frozenset()
    variants: frozenset[tuple[str, str, str]] = frozenset()
    hints: frozenset[tuple[str, str]] = frozenset()
    rules: frozenset[int] = frozenset()


def _deleted_keys() -> _DeletedKeys:
    """Catalog rows that history shows were deleted: the editors' deletions that loading defaults respects."""
    code_of = dict(ErrorCode.history.values_list("id", "code"))
    deleted = {"history_type": "-"}
    return _DeletedKeys(
        codes=frozenset(ErrorCode.history.filter(**deleted).values_list("code", flat=True)),
        variants=frozenset(
            (code_of.get(code_id, ""), locale, name)
            for code_id, locale, name in TemplateVariant.history.filter(**deleted).values_list(
                "error_code_id", "locale", "name"
            )
        ),
        hints=frozenset(ParameterHint.history.filter(**deleted).values_list("tool", "parameter")),
        rules=frozenset(ClassificationRule.history.filter(**deleted).values_list("position", flat=True)),
    )
