"""The catalog, readable by agents: each error code as an MCP resource, each interactive code's question as a prompt.

- ``resources/list`` lists every active code as ``errcatalog://codes/{CODE}`` (markdown), and
  ``resources/templates/list`` the template; ``resources/read`` returns the code's reference page
  (``errcatalog.catalog.reference``: explanation, retry advice, an example of each face) twice, as markdown and as
  JSON. The URI is checked against the code vocabulary before anything is looked up: a URI of our scheme that is
  not ``errcatalog://codes/`` and a code name is refused as invalid params (and logged as a traversal attempt,
  which it may be); a well-formed one the catalog does not have (or has switched off) is a missing resource
  (-32002; -32602 on 2026-07-28).
- ``prompts/list`` lists each interactive code's question as a prompt named by the code, its arguments the
  question's placeholders; ``prompts/get`` renders the question from them exactly as a failing call would.
- 2025-11-25 sessions may subscribe to a code's URI (``resources/subscribe``); every client hears of changes
  through ``mcpserver.changes``, which this module tells what changed after each catalog swap.

Every error here is the catalog's own text (RESOURCE_NOT_FOUND, INVALID_PARAMS, MISSING_PARAMETER,
INVALID_PARAMETER, PERMISSION_DENIED, RATE_LIMIT), rendered in the client's locale; reads and prompt renders count
against the token's rate limit, and a token without ``can_read_catalog`` sees neither resources nor prompts.

Resources and prompts of other apps (the conformance fixtures, through ``mcpserver.extensions``) are served
beside ours: lists are joined, and a read, subscription or prompt that is not ours goes to the extension.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import mcp_types as types
from django.conf import settings
from mcp.server.context import ServerRequestContext
from mcp.server.subscriptions import PromptsListChanged, ResourcesListChanged, ResourceUpdated, ServerEvent

from errcatalog.caching import BoundedCache, process_cache
from errcatalog.catalog.reference import (
    JSON,
    MARKDOWN,
    URI_TEMPLATE,
    CatalogReference,
    CodeListing,
    CodePage,
    InvalidCodeUri,
    PromptArgumentError,
    catalog_reference,
    code_of_uri,
    code_uri,
    is_catalog_uri,
    question_prompt,
)
from errcatalog.catalog.snapshot import acatalog_snapshot, catalog_snapshot_held
from errcatalog.render import Failure, ParameterFault, render
from errcatalog.render.entries import CatalogSnapshot
from errcatalog.vocabulary import ROOT_SERVER
from mcpserver.auth import request_client
from mcpserver.changes import ChangeFeed, admit
from mcpserver.jsonrpc_errors import rendered_error
from mcpserver.locale import requested_locales

logger = logging.getLogger("mcpserver.reference")

Handler = Callable[..., Awaitable[Any]]
# The SDK's Server keywords this module serves (with an extension's handler of the same name behind it).
HANDLED = (
    "on_list_resources",
    "on_list_resource_templates",
    "on_read_resource",
    "on_subscribe_resource",
    "on_unsubscribe_resource",
    "on_list_prompts",
    "on_get_prompt",
)
# How a refused URI appears in the log: enough to recognise a probe, never a whole payload.
LOGGED_URI_CHARS = 120

# The reference of the snapshot being served (its listings; pages are rendered as they are read), built once per
# snapshot (the entry holds the snapshot, so its id cannot be reused while the entry lives); cleared with every swap.
_references: BoundedCache[int, tuple[CatalogSnapshot, CatalogReference]] = process_cache(
    "mcpserver.reference.catalog", scope="catalog", max_entries=2
)


def reference_of(snapshot: CatalogSnapshot) -> CatalogReference:
    """The resources and prompts of ``snapshot``, as this endpoint's settings render them."""
    hit = _references.get(id(snapshot))
    if hit is not None and hit[0] is snapshot:
        return hit[1]
    reference = catalog_reference(
        snapshot,
        max_chars=settings.ERRCATALOG["MAX_MESSAGE_CHARS"],
        legacy_codes=settings.ERRCATALOG["LEGACY_JSONRPC_CODES"],
    )
    _references.set(id(snapshot), (snapshot, reference))
    return reference


class CatalogReader:
    """The resource and prompt handlers of one MCP app, in front of an extension's handlers of the same names."""

    def __init__(self, feed: ChangeFeed, others: Mapping[str, Handler]) -> None:
        self.feed = feed
        self._others = others
        # What the clients were last told about (None: not known yet, so the next change is announced anyway).
        self._served: CatalogReference | None = None
        feed.on_catalog_change(self.catalog_changed)

    def handlers(self) -> dict[str, Handler]:
        """The SDK ``Server`` keywords, each to the method named after it (``on_read_resource``: ``read_resource``)."""
        return {name: getattr(self, name.removeprefix("on_")) for name in HANDLED}

    # --- Resources ---------------------------------------------------------------------------------------------

    async def list_resources(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        resources: list[types.Resource] = []
        # A cursor is the extension's (ours fit on the first page).
        if (params is None or params.cursor is None) and _reads_catalog(ctx):
            reference = reference_of(await acatalog_snapshot())
            resources = [_resource(code) for code in reference.codes.values()]
        other = self._others.get("on_list_resources")
        if other is None:
            return types.ListResourcesResult(resources=resources)
        theirs: types.ListResourcesResult = await other(ctx, params)
        return types.ListResourcesResult(resources=resources + theirs.resources, next_cursor=theirs.next_cursor)

    async def list_resource_templates(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        templates: list[types.ResourceTemplate] = []
        if (params is None or params.cursor is None) and _reads_catalog(ctx):
            templates = [
                types.ResourceTemplate(
                    uri_template=URI_TEMPLATE,
                    name="error-code",
                    title="An error code of the catalog",
                    description=(
                        "What one error code means, how to retry after it and what each face of it looks like, "
                        "as markdown and JSON. {code} is a code name, e.g. MISSING_PARAMETER."
                    ),
                    mime_type=MARKDOWN,
                )
            ]
        other = self._others.get("on_list_resource_templates")
        if other is None:
            return types.ListResourceTemplatesResult(resource_templates=templates)
        theirs: types.ListResourceTemplatesResult = await other(ctx, params)
        return types.ListResourceTemplatesResult(
            resource_templates=templates + theirs.resource_templates, next_cursor=theirs.next_cursor
        )

    async def read_resource(
        self, ctx: ServerRequestContext[Any, Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        uri = params.uri
        other = self._others.get("on_read_resource")
        if not is_catalog_uri(uri) and other is not None:
            return await other(ctx, params)
        code = await self._code(ctx, uri)
        return types.ReadResourceResult(
            contents=[
                types.TextResourceContents(uri=uri, mime_type=MARKDOWN, text=code.markdown),
                types.TextResourceContents(uri=uri, mime_type=JSON, text=code.json_text),
            ]
        )

    async def subscribe_resource(
        self, ctx: ServerRequestContext[Any, Any], params: types.SubscribeRequestParams
    ) -> types.EmptyResult:
        other = self._others.get("on_subscribe_resource")
        if not is_catalog_uri(params.uri) and other is not None:
            return await other(ctx, params)
        code = await self._code(ctx, params.uri)
        self.feed.subscribe(ctx, code.uri)
        return types.EmptyResult()

    async def unsubscribe_resource(
        self, ctx: ServerRequestContext[Any, Any], params: types.UnsubscribeRequestParams
    ) -> types.EmptyResult:
        other = self._others.get("on_unsubscribe_resource")
        if not is_catalog_uri(params.uri) and other is not None:
            return await other(ctx, params)
        self.feed.unsubscribe(ctx, params.uri)
        return types.EmptyResult()

    async def _code(self, ctx: ServerRequestContext[Any, Any], uri: str) -> CodePage:
        """The code ``uri`` names, for a caller allowed to read it; else the catalog's error for why not."""
        snapshot = await acatalog_snapshot()
        if not is_catalog_uri(uri):
            raise _error(snapshot, ctx, Failure("RESOURCE_NOT_FOUND"))
        await self._admit(ctx, snapshot)
        try:
            code = code_of_uri(uri)
        except InvalidCodeUri:
            logger.warning("Refused a resource URI that names no error code: %r", uri[:LOGGED_URI_CHARS])
            raise _error(snapshot, ctx, Failure("INVALID_PARAMS")) from None
        found = reference_of(snapshot).page(code)
        if found is None:
            raise _error(snapshot, ctx, Failure("RESOURCE_NOT_FOUND"))
        return found

    # --- Prompts -----------------------------------------------------------------------------------------------

    async def list_prompts(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        prompts: list[types.Prompt] = []
        if (params is None or params.cursor is None) and _reads_catalog(ctx):
            reference = reference_of(await acatalog_snapshot())
            prompts = [
                types.Prompt(
                    name=prompt.name,
                    title=prompt.title,
                    description=prompt.description,
                    arguments=[
                        types.PromptArgument(name=a.name, description=a.description, required=a.required)
                        for a in prompt.arguments
                    ],
                )
                for prompt in reference.prompts.values()
            ]
        other = self._others.get("on_list_prompts")
        if other is None:
            return types.ListPromptsResult(prompts=prompts)
        theirs: types.ListPromptsResult = await other(ctx, params)
        return types.ListPromptsResult(prompts=prompts + theirs.prompts, next_cursor=theirs.next_cursor)

    async def get_prompt(
        self, ctx: ServerRequestContext[Any, Any], params: types.GetPromptRequestParams
    ) -> types.GetPromptResult:
        snapshot = await acatalog_snapshot()
        prompt = reference_of(snapshot).prompts.get(params.name)
        other = self._others.get("on_get_prompt")
        if prompt is None and other is not None:
            return await other(ctx, params)
        await self._admit(ctx, snapshot)
        if prompt is None:
            raise _error(snapshot, ctx, Failure("INVALID_PARAMS"))
        try:
            question = question_prompt(
                snapshot,
                prompt,
                params.arguments or {},
                locales=_locales(ctx),
                max_chars=settings.ERRCATALOG["MAX_MESSAGE_CHARS"],
            )
        except PromptArgumentError as exc:
            # The argument's name is the template's own placeholder, never the caller's text.
            code = "MISSING_PARAMETER" if exc.missing else "INVALID_PARAMETER"
            fault = ParameterFault(name=exc.argument, problem="missing" if exc.missing else "invalid")
            raise _error(snapshot, ctx, Failure(code, parameters=(fault,))) from None
        return types.GetPromptResult(
            description=prompt.description,
            messages=[types.PromptMessage(role="assistant", content=types.TextContent(type="text", text=question))],
        )

    async def _admit(self, ctx: ServerRequestContext[Any, Any], snapshot: CatalogSnapshot) -> None:
        client = request_client(ctx.request)
        if client is None:
            return
        if not client.can_read_catalog:
            raise _error(snapshot, ctx, Failure("PERMISSION_DENIED"))
        await admit(client, ctx.protocol_version)

    # --- Changes -----------------------------------------------------------------------------------------------

    def prime(self, snapshot: CatalogSnapshot) -> None:
        """What the clients see now, so that the next change is compared with it (at start, once loaded)."""
        self._served = reference_of(snapshot)

    async def catalog_changed(self) -> None:
        """Publish what a new catalog snapshot changed for readers of resources and prompts."""
        if not catalog_snapshot_held():
            # Caches were cleared in a process that serves no catalog yet: nothing to compare, nothing to build.
            self._served = None
            return
        reference = reference_of(await acatalog_snapshot())
        served, self._served = self._served, reference
        events: list[ServerEvent] = []
        if served is None or served.listing_digest != reference.listing_digest:
            events.append(ResourcesListChanged())
        if served is None or served.prompts_digest != reference.prompts_digest:
            events.append(PromptsListChanged())
        if served is not None:
            for code in sorted(served.codes.keys() | reference.codes.keys()):
                before, after = served.codes.get(code), reference.codes.get(code)
                if before is None or after is None or before.digest != after.digest:
                    events.append(ResourceUpdated(uri=code_uri(code)))
        # The catalog's resources and prompts are served at /mcp alone.
        await self.feed.publish(*events, server=ROOT_SERVER)


def _resource(code: CodeListing) -> types.Resource:
    return types.Resource(
        uri=code.uri, name=code.code, title=code.title, description=code.description, mime_type=MARKDOWN
    )


def _reads_catalog(ctx: ServerRequestContext[Any, Any]) -> bool:
    client = request_client(ctx.request)
    return client is None or client.can_read_catalog


def _locales(ctx: ServerRequestContext[Any, Any]) -> tuple[str, ...]:
    headers = getattr(ctx.request, "headers", None)
    return requested_locales(headers.get("accept-language")) if headers is not None else ()


async def unknown_error(ctx: ServerRequestContext[Any, Any], *, prompt: bool = False) -> Exception:
    """The catalog's error for a resource (RESOURCE_NOT_FOUND) or prompt (INVALID_PARAMS) that nothing serves."""
    return _error(await acatalog_snapshot(), ctx, Failure("INVALID_PARAMS" if prompt else "RESOURCE_NOT_FOUND"))


def _error(snapshot: CatalogSnapshot, ctx: ServerRequestContext[Any, Any], failure: Failure) -> Exception:
    rendered = render(snapshot, failure, locales=_locales(ctx), max_chars=settings.ERRCATALOG["MAX_MESSAGE_CHARS"])
    if not rendered.system:
        logger.info("A %s request was answered with %s", ctx.method, rendered.code)
    return rendered_error(rendered, protocol_version=ctx.protocol_version)
