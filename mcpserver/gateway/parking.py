"""A 2025-11-25 upstream's requests during a call, answered by a 2026-07-28 client in round trips: the call parked.

A 2025-11-25 upstream asks its client in mid-call (``elicitation/create``, ``sampling/createMessage``, ``roots/list``
on its session) and waits for the answer. A 2026-07-28 client answers only in a round trip: the call answers with an
``InputRequiredResult``, and the client calls again with the answers and our state. So when such a client, one that
declared what the upstream asks for (``round_trip.accepted_requests``), calls such an upstream, the upstream call
runs in a task of its own (``ParkedCall``) while the client's requests come and go:

- each request the upstream makes, relayed as in mid-call (``elicitation``, ``sampling``, ``roots``: cut, redacted,
  named), ends the client's request with our ``InputRequiredResult``; the upstream call waits meanwhile;
- the client's next call finds it by our state (sealed by the SDK, bound to the client's identity and the call's
  arguments, so no one else can answer it) and its answer goes to the upstream, which goes on to its next request or
  its result. The upstream's tool runs once, as for a client with a back channel.

A parked call lives in the process that started it, for as long as the upstream's timeout allows (which counts the
user's time, as in mid-call). Its requests' keys name it (``upstream:<id>.<n>``) and each HTTP response that asks
names it in ``PARK_HEADER``, so that a load balancer can send the client's next call to that process
(``deploy/haproxy/haproxy.cfg``); a call that reaches a process that does not hold it (another process, or after the
timeout) starts afresh, and the upstream asks again. A client whose request ends while the upstream works (it went
away, or cancelled) cancels the upstream call, which frees its slot at once; one that never answers leaves it to the
timeout. At most ``MAX_PARKED`` calls per process and ``MAX_PARKED_PER_CLIENT`` per client park; beyond them a call
goes as without a client that can answer (the upstream hears what such a client says).
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import secrets
from collections.abc import Callable, Coroutine, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

import mcp_types as types

from mcpserver.gateway.log_relay import LogSink
from mcpserver.gateway.progress import Progress
from mcpserver.gateway.round_trip import (
    ELICIT,
    ELICIT_URL,
    LIST_ROOTS,
    RELAY_PREFIX,
    SAMPLE,
    Answer,
    RoundTrip,
    answer_of,
)
from mcpserver.registry import ClientCannotAnswer, UserAnswer

logger = logging.getLogger("mcpserver.gateway")

# Calls parked at once, per process and per client (each holds an upstream slot, and an upstream session of its own
# on an HTTP upstream, while it waits for its client).
MAX_PARKED = 256
MAX_PARKED_PER_CLIENT = 32
# Our state's key and version.
STATE_KEY = "park"
STATE_VERSION = 1
# The response header that names a parked call for a load balancer (``deploy/haproxy/haproxy.cfg``).
PARK_HEADER = b"errcatalog-park"
_ID_BYTES = 8

Start = Callable[["ParkedCall"], Coroutine[Any, Any, types.CallToolResult | types.InputRequiredResult]]


@dataclass(eq=False)
class _Question:
    """One request of the upstream's, waiting for the client's answer."""

    request: types.ElicitRequest | types.CreateMessageRequest | types.ListRootsRequest
    answer_type: type[Answer]
    answered: asyncio.Future[Answer] = field(default_factory=lambda: asyncio.get_running_loop().create_future())


@dataclass(eq=False)
class _RequestLog:
    """The parked call's log sink: at the level its first request asked for, to whichever request of its client's is
    under way (``log_relay``); messages while none is are dropped, as a client that is not listening misses them."""

    call: ParkedCall
    level: str
    level_set: bool

    async def send(self, level: str, data: Any, logger: str | None) -> None:
        sink = self.call.log
        if sink is not None:
            await sink.send(level, data, logger)


class ParkedCall:
    """An upstream call of one 2026-07-28 client's, its requests answered over that client's round trips.

    It is the call's ``CallersClient`` (and ``ask``) for the upstream's requests: each becomes a question that the
    client's current or next request answers (``leg``)."""

    def __init__(self, upstream: str, tool: str, client_key: str | None, accepts: frozenset[str]) -> None:
        self.id = secrets.token_hex(_ID_BYTES)
        self.upstream, self.tool, self.client_key, self.accepts = upstream, tool, client_key, accepts
        # Where the upstream's progress and log messages go: the client's request under way, if any.
        self.progress: Progress | None = None
        self.log: LogSink | None = None
        self.task: asyncio.Task[types.CallToolResult | types.InputRequiredResult] | None = None
        self._questions: asyncio.Queue[_Question] = asyncio.Queue()
        self._shown: tuple[str, _Question] | None = None
        self._asked = 0
        self._leg = asyncio.Lock()

    # --- The upstream's requests (``elicitation.CallersClient`` and ``Ask``) --------------------------------------

    async def ask(self, message: str, schema: Mapping[str, Any]) -> UserAnswer:
        params = types.ElicitRequestFormParams(message=message, requested_schema=dict(schema))
        result = await self._ask(ELICIT, types.ElicitRequest(params=params), types.ElicitResult)
        return UserAnswer(result.action, dict(result.content or {}))

    async def create_message(self, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        return await self._ask(SAMPLE, types.CreateMessageRequest(params=params), types.CreateMessageResult)

    async def list_roots(self) -> types.ListRootsResult:
        return await self._ask(LIST_ROOTS, types.ListRootsRequest(), types.ListRootsResult)

    async def elicit_url(self, params: types.ElicitRequestURLParams) -> types.ElicitResult:
        return await self._ask(ELICIT_URL, types.ElicitRequest(params=params), types.ElicitResult)

    def session_stream(self) -> None:
        return None  # a 2026-07-28 client has no session for a URL elicitation's completion

    async def _ask[A: Answer](
        self,
        kind: str,
        request: types.ElicitRequest | types.CreateMessageRequest | types.ListRootsRequest,
        answer_type: type[A],
    ) -> A:
        if kind not in self.accepts:
            raise ClientCannotAnswer(f"the client did not declare {kind}")
        question = _Question(request, answer_type)  # type: ignore[arg-type]  # one of Answer's types
        self._questions.put_nowait(question)
        answer = await question.answered
        assert isinstance(answer, answer_type)
        return answer

    async def relay_progress(self, progress: float, total: float | None, message: str | None) -> None:
        target = self.progress
        if target is not None:
            await target(progress, total, message)

    def request_log(self, first: LogSink | None) -> LogSink | None:
        """The upstream call's log sink, when the first request asked for log messages."""
        return _RequestLog(self, first.level, first.level_set) if first is not None else None

    # --- The client's requests --------------------------------------------------------------------------------

    @property
    def answering(self) -> bool:
        """Whether a request of the client's is under way (its failure, if the call fails, is the client's)."""
        return self._leg.locked()

    async def leg(
        self, responses: Mapping[str, Any] | None, progress: Progress | None, log: LogSink | None
    ) -> types.CallToolResult | types.InputRequiredResult:
        """One request of the client's: its answer to the question shown last goes to the upstream, and it ends with
        the upstream's next question or the call's result (or failure). The question is shown again when the request
        does not answer it. A request that ends meanwhile (its client went away) cancels the upstream call."""
        async with self._leg:
            self.progress, self.log = progress, log
            try:
                if self._shown is not None:
                    key, question = self._shown
                    answer = answer_of((responses or {}).get(key), question.answer_type)
                    if answer is None:
                        return self._input_required(key, question)
                    self._shown = None
                    if not question.answered.done():
                        question.answered.set_result(answer)
                return await self._next()
            finally:
                self.progress = self.log = None

    async def _next(self) -> types.CallToolResult | types.InputRequiredResult:
        task = self.task
        assert task is not None
        waiting = asyncio.ensure_future(self._questions.get())
        try:
            await asyncio.wait({waiting, task}, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            task.cancel()
            raise
        finally:
            if not waiting.done():
                waiting.cancel()
        if task.done():  # a question asked as the call ended goes unanswered: the call's end is what counts
            return task.result()  # the call's result, or its failure raised
        if waiting.done() and not waiting.cancelled():
            question = waiting.result()
            self._asked += 1
            key = f"{RELAY_PREFIX}{self.id}.{self._asked}"
            self._shown = (key, question)
            return self._input_required(key, question)
        return task.result()

    def _input_required(self, key: str, question: _Question) -> types.InputRequiredResult:
        state = {STATE_KEY: {"v": STATE_VERSION, "id": self.id, "upstream": self.upstream, "tool": self.tool}}
        return types.InputRequiredResult(
            input_requests={key: question.request}, request_state=json.dumps(state, separators=(",", ":"))
        )


# --- The process's parked calls -----------------------------------------------------------------------------------

_parked: dict[str, ParkedCall] = {}


class ParkNaming:
    """The parked call an HTTP request of ours answers for (``id``), to name in its response's ``PARK_HEADER``
    (``mcpserver.server``): set as the request reaches the call, so that a response streaming the upstream's
    notifications, which begins before the upstream asks, names it too; unset when the call ends in this request."""

    __slots__ = ("id",)

    def __init__(self) -> None:
        self.id: str | None = None


# The naming of the parked call the request under way answers for, set by ``mcpserver.server`` around a request.
park_naming: ContextVar[ParkNaming | None] = ContextVar("errcatalog_park_naming", default=None)


def parked_count() -> int:
    return len(_parked)


def _resumed(round_trip: RoundTrip, upstream: str, tool: str, client_key: str | None) -> ParkedCall | None:
    try:
        state = json.loads(round_trip.request_state) if round_trip.request_state else None
    except ValueError:
        return None
    ours = state.get(STATE_KEY) if isinstance(state, dict) else None
    if not isinstance(ours, dict) or ours.get("v") != STATE_VERSION or not isinstance(ours.get("id"), str):
        return None
    parked = _parked.get(ours["id"])
    # The SDK's seal already binds the state to this client and call; a parked call also answers only its own.
    if parked is None or (parked.upstream, parked.tool, parked.client_key) != (upstream, tool, client_key):
        return None
    return parked


async def parked_call(
    start: Start,
    *,
    upstream: str,
    tool: str,
    client_key: str | None,
    round_trip: RoundTrip,
    progress: Progress | None,
    log: LogSink | None,
) -> types.CallToolResult | types.InputRequiredResult | None:
    """One request of a 2026-07-28 client's call of a 2025-11-25 upstream's tool: the first starts the upstream call
    (``start`` runs it, with the parked call as its asker), a later one carries an answer to it. None: no room to
    park another call, so the caller goes on without one."""
    parked = _resumed(round_trip, upstream, tool, client_key)
    if parked is None:
        if len(_parked) >= MAX_PARKED or (
            sum(1 for p in _parked.values() if p.client_key == client_key) >= MAX_PARKED_PER_CLIENT
        ):
            logger.info("Upstream %s: no room to park another call (%d parked)", upstream, len(_parked))
            return None
        parked = ParkedCall(upstream, tool, client_key, round_trip.accepts)
        parked.task = asyncio.get_running_loop().create_task(start(parked), name=f"errcatalog-parked-{upstream}")
        _parked[parked.id] = parked
        parked.task.add_done_callback(functools.partial(_ended, parked))
        responses = None
    else:
        responses = round_trip.input_responses
    naming = park_naming.get()
    if naming is not None:
        naming.id = parked.id
    result = None
    try:
        result = await parked.leg(responses, progress, log)
    finally:
        if naming is not None and not isinstance(result, types.InputRequiredResult):
            naming.id = None  # nothing to come back to (a response that began meanwhile named it all the same)
    return result


def _ended(parked: ParkedCall, task: asyncio.Task[Any]) -> None:
    """A parked call's upstream call ended: it is forgotten. Its failure is its client's when a request of the
    client's is under way; one that ended while nobody waited (the client never came back) is only logged."""
    _parked.pop(parked.id, None)
    if task.cancelled():
        return
    error = task.exception()
    if error is not None and not parked.answering:
        logger.info("Upstream %s: a parked call ended unanswered (%s)", parked.upstream, type(error).__name__)


def cancel_all() -> None:
    """The process stops: every parked call's upstream call is cancelled."""
    for parked in list(_parked.values()):
        if parked.task is not None:
            parked.task.cancel()
