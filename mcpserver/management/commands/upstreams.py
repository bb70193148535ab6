"""``manage.py upstreams [--check] [NAME ...]``: the gateway's upstreams, for people without a browser.

Lists each upstream (transport, where it runs, limits, exposed tools, where its header and variable values come
from and whether they are set, never the values) and its health as each serving process last reported it.
``--check`` connects to each as the gateway would, lists its tools and disconnects; the command exits non-zero when
one cannot be reached, so a deploy script can stop there. For a stdio child that failed it shows the last lines the
child wrote to stderr (cut, credentials redacted): whoever runs management commands on the server may read them.
"""

from __future__ import annotations

from asgiref.sync import async_to_sync
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from errcatalog.gateway.models import Transport, Upstream
from errcatalog.gateway.secrets import describe
from errcatalog.gateway.selectors import ProcessHealth, health_summary, upstream_config, upstream_health
from mcpserver.gateway.probe import probe


class Command(BaseCommand):
    help = "List the gateway's upstream MCP servers; with --check, connect to each and list its tools."

    def add_arguments(self, parser) -> None:
        parser.add_argument("names", nargs="*", metavar="NAME", help="Only these upstreams.")
        parser.add_argument("--check", action="store_true", help="Connect to each, list its tools, disconnect.")

    def handle(self, *args, names: list[str], check: bool, **options) -> None:
        upstreams = Upstream.objects.order_by("name")
        if names:
            upstreams = upstreams.filter(name__in=names)
            missing = set(names) - {u.name for u in upstreams}
            if missing:
                raise CommandError(f"No upstream named {', '.join(sorted(missing))}.")
        if not upstreams:
            self.stdout.write("No upstreams. Add one in admin, or import an mcpServers block with upstream_import.")
            return
        unreachable = []
        health = upstream_health(u.name for u in upstreams)
        for upstream in upstreams:
            self._describe(upstream)
            self._health(health.get(upstream.name, []))
            if not check:
                continue
            if not upstream.enabled or (upstream.transport == Transport.STDIO and not settings.GATEWAY["STDIO"]):
                self.stdout.write("  check: skipped (not served here)")
                continue
            result = async_to_sync(probe)(upstream_config(upstream), settings.GATEWAY)
            if result.ok:
                self.stdout.write(
                    f"  check: connected in {result.seconds:.1f} s, protocol {result.protocol_version}, "
                    f"{len(result.tools)} tools: {', '.join(result.tools) or 'none'}"
                )
            else:
                unreachable.append(upstream.name)
                self.stdout.write(f"  check: FAILED: {result.failure}")
                if result.stderr_tail:
                    # The operator at the server's shell may read what the child said (cut, credentials redacted);
                    # admin's test connection shows the fixed words above only.
                    self.stdout.write(f"  its last {len(result.stderr_tail)} lines on stderr:")
                    for line in result.stderr_tail:
                        self.stdout.write(f"    | {line}")
        if unreachable:
            raise CommandError(f"Unreachable: {', '.join(unreachable)}.")

    def _describe(self, upstream: Upstream) -> None:
        where = upstream.url if upstream.transport == Transport.HTTP else " ".join([upstream.command, *upstream.args])
        state = "enabled" if upstream.enabled else "disabled"
        self.stdout.write(f"{upstream.name} ({upstream.transport}, {state}): {where}")
        self.stdout.write(
            f"  tools as {upstream.prefix}__<tool>; {', '.join(upstream.tools) or 'all exposed'}; "
            f"timeout {upstream.timeout_seconds:g} s, {upstream.max_concurrency} at once"
        )
        for kind, values in (("header", upstream.headers), ("variable", upstream.env)):
            for name, stored in values.items():
                self.stdout.write(f"  {kind} {name}: {describe(stored, binding=upstream.binding)}")

    def _health(self, processes: list[ProcessHealth]) -> None:
        self.stdout.write(f"  health: {health_summary(processes)}")
        for process in processes:
            version = f", protocol {process.protocol_version}" if process.protocol_version else ""
            self.stdout.write(
                f"    {process.process}: {process.state}{version}, {process.tool_count} tools, "
                f"circuit {process.circuit}; reported {process.reported_at:%Y-%m-%d %H:%M:%S} UTC"
            )
            if process.last_failure and process.last_failure_at:
                self.stdout.write(f"      last failure {process.last_failure_at:%H:%M:%S} UTC: {process.last_failure}")
