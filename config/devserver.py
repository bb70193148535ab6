"""``./dev up``'s web process: set up the embedded installation, then serve it, in one Python process.

``python -m config.devserver HOST PORT LOG_FOLDER [UVICORN OPTION ...]`` migrates, loads the default catalog,
collects the static files, creates the first admin and the quickstart MCP token (printing the client
configurations), and then runs uvicorn on the same interpreter. Each step is idempotent and quick when there is
nothing to do; what makes a start slow is starting Python and importing Django, the MCP SDK and their models
(seconds each time), so it is done once instead of once a step. Collecting the static files compresses every file
again even when nothing changed, so it runs only when the files found differ from those of the last collection
(``collect_static_when_changed``).
"""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

# The production web service's limits (docker-compose.yml): idle keep-alive connections close after 5 s, a request
# head over 16 KiB is refused (431 by the app, 400 by h11 while it arrives), over 1000 connections at once are
# answered 503.
UVICORN_OPTIONS = (
    "--http=h11",
    "--timeout-keep-alive=5",
    "--h11-max-incomplete-event-size=16384",
    "--limit-concurrency=1000",
    "--timeout-graceful-shutdown=20",
)


def static_files_digest() -> str:
    """A digest of every static file the finders collect (path, size and modification time) and of the storage
    that writes them: it changes when a file, an installed package's files or the storage change."""
    from django.conf import settings
    from django.contrib.staticfiles.finders import get_finders

    digest = hashlib.sha256(repr(settings.STORAGES["staticfiles"]).encode())
    found = []
    for finder in get_finders():
        for path, storage in finder.list([]):
            stat = os.stat(storage.path(path))
            found.append(f"{path}\0{stat.st_size}\0{stat.st_mtime_ns}\n")
    for line in sorted(found):
        digest.update(line.encode())
    return digest.hexdigest()


def collect_static_when_changed() -> bool:
    """Run ``collectstatic`` unless the files it would collect are those of its last run here; True when it ran.

    The stamp sits beside ``STATIC_ROOT`` (not in it, where it would be served) and is written after a collection
    that succeeded, so an interrupted one runs again. A collection after a change starts from an empty folder.
    """
    from django.conf import settings
    from django.core.management import call_command

    stamp = Path(f"{settings.STATIC_ROOT}.collected")
    digest = static_files_digest()
    if stamp.is_file() and stamp.read_text() == digest and Path(settings.STATIC_ROOT).is_dir():
        return False
    # From scratch: collectstatic alone skips a file whose copy is newer, which a package downgrade or a file
    # restored from an older commit would leave stale.
    call_command("collectstatic", interactive=False, verbosity=0, clear=True)
    stamp.write_text(digest)
    return True


def prepare(url: str) -> None:
    """The idempotent steps of ``./dev up``, in order, printing what each one says."""
    from django.core.management import call_command
    from django.db import connections

    call_command("migrate", interactive=False)
    call_command("catalog_load_defaults")
    collect_static_when_changed()
    call_command("bootstrap_admin")
    print(flush=True)
    call_command("bootstrap_mcp_token", url=url)
    print(flush=True)
    # The server's threads open connections of their own; this thread's would stay open, unused, until exit.
    connections.close_all()


def banner(base: str, logs: str) -> str:
    """What ``./dev up`` prints before it serves: where each part is, and the public URL hosted clients use."""
    from django.conf import settings

    lines = [
        f"errcatalog is starting on {base}",
        f"  home:      {base}/  (what runs here, how to connect, links)",
        f"  admin:     {base}/admin/",
        f"  dashboard: {base}/dashboard/",
        f"  REST API:  {base}/api/v1/  (OpenAPI: /api/v1/schema/, docs: /api/v1/docs/)",
        f"  MCP:       {base}/mcp  (Streamable HTTP, Authorization: Bearer <token>)",
    ]
    if public := settings.OAUTH["PUBLIC_URL"]:
        lines.append(f"  public:    {public}/mcp  (hosted clients; ./dev manage public_url_check says what they see)")
    lines.append(
        f"  worker:    Celery worker and beat, started once the server answers, restarted on exit (logs in {logs}/)"
    )
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> None:
    host, port, logs, *uvicorn_arguments = argv
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    base = f"http://{host}:{port}"
    prepare(f"{base}/mcp")
    print(banner(base, logs), flush=True)
    import uvicorn

    uvicorn.main.main(
        args=["config.asgi:application", "--host", host, "--port", port, *UVICORN_OPTIONS, *uvicorn_arguments],
        prog_name="uvicorn",
    )


if __name__ == "__main__":
    main(sys.argv[1:])
