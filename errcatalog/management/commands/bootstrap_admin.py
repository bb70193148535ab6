"""``manage.py bootstrap_admin``: a first superuser for a fresh installation, its password printed once.

Does nothing when a superuser exists. ``ERRCATALOG_ADMIN_PASSWORD`` sets the password for scripted setups
(it is then not printed).
"""

from __future__ import annotations

import os
import secrets

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

PASSWORD_ENV = "ERRCATALOG_ADMIN_PASSWORD"  # noqa: S105 (the variable's name, not a password)


class Command(BaseCommand):
    help = "Create the first admin user (a superuser) if there is none, and print its password once."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--username", default="admin", help="Username of the new superuser (default: admin).")

    @transaction.atomic
    def handle(self, *args, username: str, **options) -> None:
        users = get_user_model()
        existing = users.objects.filter(is_superuser=True).order_by("pk").first()
        if existing is not None:
            self.stdout.write(f"An admin user exists ({existing.get_username()}); nothing changed.")
            return
        if users.objects.filter(**{users.USERNAME_FIELD: username}).exists():
            raise CommandError(
                f"A user {username!r} exists but is not a superuser; promote it in admin or "
                "use --username to create another."
            )
        password = os.environ.get(PASSWORD_ENV) or secrets.token_urlsafe(12)
        users.objects.create_superuser(**{users.USERNAME_FIELD: username}, email="", password=password)
        if os.environ.get(PASSWORD_ENV):
            self.stdout.write(f"Admin user: {username} (password from {PASSWORD_ENV})")
        else:
            self.stdout.write(f"Admin user: {username} / {password} (shown once; change it in admin)")
