"""``manage.py bootstrap_admin``: a first superuser for a fresh installation, its password printed once.

Does nothing when a superuser exists. ``--reset-password`` gives an existing superuser (the one ``--username``
names, else the first) a new password instead, for an admin whose password is lost: whoever runs management
commands on the server may already do anything in the database, so the command asks for nothing more.
``ERRCATALOG_ADMIN_PASSWORD`` sets the password for scripted setups (it is then not printed).
"""

from __future__ import annotations

import os
import secrets

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

PASSWORD_ENV = "ERRCATALOG_ADMIN_PASSWORD"  # noqa: S105 (the variable's name, not a password)
DEFAULT_USERNAME = "admin"


class Command(BaseCommand):
    help = (
        "Create the first admin user (a superuser) if there is none, and print its password once; "
        "with --reset-password, give an existing admin a new password."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "--username",
            help=f"Username of the new superuser (default: {DEFAULT_USERNAME}); with --reset-password, the "
            "superuser whose password is reset (default: the first one).",
        )
        parser.add_argument(
            "--reset-password",
            action="store_true",
            help=f"Give an existing superuser a new password: {PASSWORD_ENV}'s value, else a random one printed once.",
        )

    @transaction.atomic
    def handle(self, *args, username: str | None, reset_password: bool, **options) -> None:
        if reset_password:
            self._reset_password(username)
            return
        username = username or DEFAULT_USERNAME
        users = get_user_model()
        existing = users.objects.filter(is_superuser=True).order_by("pk").first()
        if existing is not None:
            self.stdout.write(
                f"An admin user exists ({existing.get_username()}); nothing changed. "
                "Lost its password? ./dev manage bootstrap_admin --reset-password"
            )
            return
        if users.objects.filter(**{users.USERNAME_FIELD: username}).exists():
            raise CommandError(
                f"A user {username!r} exists but is not a superuser; promote it in admin or "
                "use --username to create another."
            )
        password = os.environ.get(PASSWORD_ENV) or secrets.token_urlsafe(12)
        users.objects.create_superuser(**{users.USERNAME_FIELD: username}, email="", password=password)
        self._report(f"Admin user: {username}", " / ", password)

    def _reset_password(self, username: str | None) -> None:
        users = get_user_model()
        superusers = users.objects.filter(is_superuser=True).order_by("pk")
        if username:
            superusers = superusers.filter(**{users.USERNAME_FIELD: username})
        admin = superusers.select_for_update().first()
        if admin is None:
            which = f"no superuser {username!r}" if username else "no superuser yet"
            raise CommandError(f"There is {which}; run bootstrap_admin without --reset-password to create one.")
        password = os.environ.get(PASSWORD_ENV) or secrets.token_urlsafe(12)
        admin.set_password(password)
        admin.save(update_fields=["password"])
        self._report(f"New password for admin user {admin.get_username()}", ": ", password)

    def _report(self, subject: str, separator: str, password: str) -> None:
        if os.environ.get(PASSWORD_ENV):
            self.stdout.write(f"{subject} (password from {PASSWORD_ENV})")
        else:
            self.stdout.write(f"{subject}{separator}{password} (shown once; change it in admin)")
