"""``manage.py bootstrap_mcp_token``: a first MCP client token for the admin, printed once with client configs.

Run by ``./dev up``. The key is shown only when the token is created (the database keeps its hash); on later
runs the command says that the "quickstart" token exists and how to create another one.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from errcatalog.access.models import ClientToken
from errcatalog.access.tokens import client_token_create
from mcpserver.client_configs import KEY_PLACEHOLDER, client_configs, node_version

TOKEN_NAME = "quickstart"  # noqa: S105 (the token's display name, not a secret)


class Command(BaseCommand):
    help = "Create the 'quickstart' MCP client token for the first admin (once) and print client configs."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--url", default="http://127.0.0.1:8000/mcp", help="The MCP endpoint's URL.")

    def handle(self, *args, url: str, **options) -> None:
        admin = get_user_model().objects.filter(is_superuser=True, is_active=True).order_by("pk").first()
        if admin is None:
            raise CommandError("There is no admin user yet; run ./dev manage bootstrap_admin first.")
        existing = ClientToken.objects.filter(name=TOKEN_NAME, user=admin, revoked_at__isnull=True).first()
        if existing is not None:
            username = admin.get_username()
            self.stdout.write(
                f"MCP client token {TOKEN_NAME!r} ({existing.key_prefix}…) exists; its key was shown once when it "
                "was created and is not stored.\n"
                f"Create another with: ./dev manage token_create --user {username} --name my-client\n"
                "or in admin under Client tokens, then use it in place of <your token> below.\n"
            )
            key = KEY_PLACEHOLDER
        else:
            _token, key = client_token_create(user=admin, name=TOKEN_NAME)
            self.stdout.write(f"MCP client token {TOKEN_NAME!r} for {admin.get_username()} (shown once): {key}\n")
        oauth = settings.OAUTH["MODE"] != "off"
        public = settings.OAUTH["PUBLIC_URL"]
        public_url = f"{public}/mcp" if public else ""
        self.stdout.write(client_configs(url, key, node=node_version(), oauth=oauth, public_url=public_url))
