"""Previews: render one code in any face, optionally with unsaved template text. Pure: no ORM, no I/O.

The REST API's ``render/`` endpoint and the admin's live preview use this. A draft never touches the catalog:
it replaces one variant in an in-memory copy of the snapshot.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any

from errcatalog.render import (
    DEFAULT_MAX_CHARS,
    Failure,
    RenderedError,
    agent_error,
    anatomy,
    error_response,
    provider_result,
    render,
    tool_result,
    user_markdown,
)
from errcatalog.render.entries import CatalogSnapshot, VariantEntry
from errcatalog.safety import safe_identifier

FACES = ("tool_result", "jsonrpc", "markdown", "agent", "anatomy", "provider")
DRAFT_FIELDS = ("message", "cause", "instruction", "question", "header")


@dataclass(frozen=True, slots=True)
class FaceOptions:
    """How a face is laid out; each option matters to one face only."""

    format: str = "markdown"  # tool_result
    provider: str = "openai"  # provider
    call_id: str = ""  # provider
    request_id: int | str | None = None  # jsonrpc
    protocol_version: str = ""  # jsonrpc
    legacy_codes: bool = False  # jsonrpc


def face_output(rendered: RenderedError, face: str, options: FaceOptions) -> Any:
    """``rendered`` in one face. Ids that came with the request are screened like every other name."""
    if face == "tool_result":
        return tool_result(rendered, options.format)
    if face == "jsonrpc":
        request_id = options.request_id
        if isinstance(request_id, str):
            request_id = safe_identifier(request_id)
        return error_response(
            rendered, request_id, protocol_version=options.protocol_version, legacy=options.legacy_codes
        )
    if face == "markdown":
        return user_markdown(rendered)
    if face == "agent":
        return agent_error(rendered)
    if face == "anatomy":
        return anatomy(rendered)
    if face == "provider":
        call_id = safe_identifier(options.call_id) if options.call_id else ""
        return provider_result(rendered, options.provider, call_id)
    raise ValueError(f"face must be one of {', '.join(FACES)}")


def variant_exists(snapshot: CatalogSnapshot, code: str, name: str, locale: str = "") -> bool:
    entry = snapshot.codes.get(code)
    return entry is not None and any(v.name == name and v.locale in (locale, "") for v in entry.variants)


def preview_snapshot(
    snapshot: CatalogSnapshot,
    code: str,
    *,
    variant: str | None = None,
    locale: str = "",
    draft: Mapping[str, str] | None = None,
) -> tuple[CatalogSnapshot, str | None]:
    """A copy of ``snapshot`` in which ``code`` renders as asked, and the variant name to render with.

    The code is treated as active, so an inactive code can be previewed before it is switched on. With a
    ``draft``, its fields replace those of the named variant (or of the variant a render would pick); a
    variant name the code does not have yet starts a new variant, so unsaved variants can be previewed too.
    """
    entry = snapshot.codes[code]
    if not draft:
        if entry.active:
            return snapshot, variant
        return _with_entry(snapshot, replace(entry, active=True)), variant
    if variant is not None and not variant_exists(snapshot, code, variant, locale):
        base = VariantEntry(name=variant, message="", instruction="", locale=locale)
    elif entry.variants:
        base = entry.variant(name=variant, locale=locale)
    else:
        base = VariantEntry(name=variant or "default", message="", instruction="", locale=locale)
    drafted = replace(
        base, active=True, weight=max(base.weight, 1), **{k: draft[k] for k in DRAFT_FIELDS if k in draft}
    )
    # The draft takes its base's place, so a lookup by name finds it before any same-named variant.
    if any(v is base for v in entry.variants):
        variants = tuple(drafted if v is base else v for v in entry.variants)
    else:
        variants = (drafted, *entry.variants)
    return _with_entry(snapshot, replace(entry, active=True, variants=variants)), drafted.name


def _with_entry(snapshot: CatalogSnapshot, entry) -> CatalogSnapshot:
    codes = dict(snapshot.codes)
    codes[entry.code] = entry
    return replace(snapshot, codes=MappingProxyType(codes), version=f"{snapshot.version}+preview")


def render_preview(
    snapshot: CatalogSnapshot,
    failure: Failure,
    *,
    face: str,
    options: FaceOptions = FaceOptions(),
    variant: str | None = None,
    locale: str = "",
    draft: Mapping[str, str] | None = None,
    max_chars: int = DEFAULT_MAX_CHARS,
) -> dict[str, Any]:
    """Render ``failure`` (whose code must be in the snapshot) in ``face``:
    ``{"code", "variant", "locale", "interactive", "output"}`` ("" locale: the catalog default served)."""
    preview, variant_name = preview_snapshot(snapshot, failure.code, variant=variant, locale=locale, draft=draft)
    rendered = render(preview, failure, variant=variant_name, locale=locale, max_chars=max_chars)
    return {
        "code": rendered.code,
        "variant": rendered.variant,
        "locale": rendered.locale,
        "interactive": rendered.interactive,
        "output": face_output(rendered, face, options),
    }
