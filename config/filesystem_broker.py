"""The embedded setup's Celery broker: kombu's filesystem transport, whose messages are never read half-written.

kombu's own transport writes a message in place under its final name (the file is created empty, then written),
and its reader takes any file with that name: a reader that comes between the two reads an empty or partial file,
and the ``JSONDecodeError`` that follows ends the Celery worker ("Unrecoverable error"). This transport differs in
two ways, and is otherwise kombu's (same folders, same file names, same options):

- a message is written under a hidden name in the queue's folder and renamed to its final name once complete (a
  rename within one folder is atomic), so a reader sees the whole message or none of it;
- a reader that still meets a file it cannot read (a writer of kombu's own kind, a crash of the machine, a person's
  edit) leaves it in place for ``UNREADABLE_GRACE_SECONDS`` after its last change, as it may be a message being
  written in place, then moves it to the quarantine folder (transport option ``quarantine_folder``), logs that, and
  goes on with the next message. The worker never stops for a file.

A message is taken by deleting its file after reading it (of several consumers that read it, one deletes it), as
kombu's reader takes it by moving it out of the folder: either way it is gone once read, whether its task runs or
not (outcome batches wait in the spool folder for that reason, ``errcatalog.outcomes.spool``).
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
import uuid
from queue import Empty
from typing import Any

from kombu.exceptions import ChannelError
from kombu.transport import filesystem
from kombu.utils.encoding import bytes_to_str, str_to_bytes
from kombu.utils.json import dumps, loads

logger = logging.getLogger(__name__)

# A writer that writes in place takes milliseconds; a file unreadable this long after its last change is not one
# being written.
UNREADABLE_GRACE_SECONDS = 5.0
# A hidden file this old belongs to a writer that died between writing and renaming it.
_ABANDONED_PARTIAL_SECONDS = 3600.0
_PARTIAL_SUFFIX = ".partial"


class Channel(filesystem.Channel):
    """kombu's filesystem channel with an atomic ``_put`` and a ``_get`` that sets unreadable files aside."""

    # kombu's two base classes name the second parameter differently (message, payload): no name satisfies both.
    def _put(self, queue: str, payload: Any, **kwargs: Any) -> None:  # type: ignore[override]
        # kombu's name (a monotonic time in milliseconds first, so names sort in the order they were written); the
        # hidden name starts with a dot, which no reader takes for a message of any queue.
        name = f"{round(time.monotonic() * 1000)}_{uuid.uuid4()}.{queue}.msg"
        final = os.path.join(self.data_folder_out, name)
        partial = os.path.join(self.data_folder_out, f".{name}{_PARTIAL_SUFFIX}")
        try:
            with open(partial, "wb") as file:
                file.write(str_to_bytes(dumps(payload)))
            os.replace(partial, final)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.remove(partial)
            raise ChannelError(f"Cannot add file {final!r} to directory") from exc

    def _get(self, queue: str, timeout: float | None = None) -> Any:
        wanted = f"{queue}.msg"
        for name in sorted(os.listdir(self.data_folder_in)):
            if name.startswith(".") and name.endswith(_PARTIAL_SUFFIX):
                self._remove_abandoned(name)
                continue
            if name.partition(".")[2] != wanted:
                continue
            path = os.path.join(self.data_folder_in, name)
            try:
                with open(path, "rb") as file:
                    raw = file.read()
                    changed = os.fstat(file.fileno()).st_mtime
            except FileNotFoundError:
                continue  # another consumer took it
            except OSError as exc:
                raise ChannelError(f"Cannot read file {path!r} from queue.") from exc
            payload = self._readable(raw)
            if payload is None:
                self._set_aside(path, name, changed)
                continue
            try:
                if self.store_processed:
                    os.replace(path, os.path.join(self.processed_folder, name))
                else:
                    os.remove(path)
            except FileNotFoundError:
                continue  # another consumer read it too, and took it first
            return payload
        raise Empty()

    def _readable(self, raw: bytes) -> dict[str, Any] | None:
        """The message in ``raw``, or None when it is not one the channel can deliver."""
        try:
            payload = loads(bytes_to_str(raw))
            # What delivering it will do (kombu's virtual Message): a payload it cannot build one from would end
            # the worker there instead.
            self.Message(payload, channel=self)
        except (ValueError, TypeError, KeyError, AttributeError):
            return None
        return payload if isinstance(payload, dict) else None

    def _set_aside(self, path: str, name: str, changed: float) -> None:
        if time.time() - changed < UNREADABLE_GRACE_SECONDS:
            return  # perhaps being written in place: read again at the next poll
        os.makedirs(self.quarantine_folder, exist_ok=True)
        aside = os.path.join(self.quarantine_folder, name)
        try:
            os.replace(path, aside)
        except FileNotFoundError:
            return  # another consumer set it aside
        logger.warning(
            "An unreadable Celery message (%d bytes) was moved to %s; the worker goes on without it",
            os.path.getsize(aside),
            aside,
        )

    def _remove_abandoned(self, name: str) -> None:
        path = os.path.join(self.data_folder_in, name)
        with contextlib.suppress(OSError):
            if time.time() - os.path.getmtime(path) > _ABANDONED_PARTIAL_SECONDS:
                os.remove(path)

    @property
    def quarantine_folder(self) -> str:
        return str(self.transport_options.get("quarantine_folder", "quarantine"))


class Transport(filesystem.Transport):
    """kombu's filesystem transport with ``Channel`` above; Celery's ``broker_transport`` names it by its path."""

    Channel = Channel
