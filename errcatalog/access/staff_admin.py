"""Django admin for people and groups: a staff member who is not a superuser manages only accounts and groups that
hold no more than they do, and grants only what they hold themselves.

Django's own ``UserAdmin`` lets anyone with "change user" tick *superuser status* on their own account, give
themselves every permission, or set a superuser's password. Here the rule is one sentence: **nobody but a superuser
can make an account or a group hold a permission they do not hold themselves.** So a non-superuser

- cannot see the *superuser status* box, and cannot change, delete or set the password of a superuser;
- can change, delete or set the password of an account only if that account's permissions (its own and its
  groups') are all theirs too;
- can grant a permission, or a group, only if they hold every permission it gives;
- can edit a group only if they hold every permission it gives, and give it only permissions they hold.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import GroupAdmin, UserAdmin
from django.contrib.auth.models import Group, Permission
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import QuerySet

User = get_user_model()


def _names(permissions: QuerySet[Permission]) -> set[str]:
    return {f"{app}.{codename}" for app, codename in permissions.values_list("content_type__app_label", "codename")}


def _held_by(account: Any) -> set[str]:
    """Every permission an account holds, its own and its groups', as ``app.codename``."""
    return set(account.get_all_permissions())


def account_within(actor: Any, account: Any) -> bool:
    """Whether ``actor`` may manage ``account``: a superuser may manage anyone; anyone else only an account that is
    not a superuser and holds no permission the actor lacks."""
    if actor.is_superuser:
        return True
    if account.is_superuser:
        return False
    return _held_by(account) <= _held_by(actor)


def group_within(actor: Any, group: Group) -> bool:
    """Whether ``actor`` may manage ``group`` or give it to someone: every permission it gives is the actor's."""
    return actor.is_superuser or _names(group.permissions.all()) <= _held_by(actor)


def _refuse_beyond(actor: Any, permissions: QuerySet[Permission] | None, groups: QuerySet[Group] | None) -> None:
    """A form error naming what the actor may not grant, if anything."""
    if actor.is_superuser:
        return
    held = _held_by(actor)
    beyond = sorted(_names(permissions) - held) if permissions is not None else []
    if beyond:
        raise ValidationError(
            "You can grant only permissions you hold yourself; not: %(names)s.", params={"names": ", ".join(beyond)}
        )
    too_much = sorted(group.name for group in (groups or []) if not group_within(actor, group))
    if too_much:
        raise ValidationError(
            "You can add people only to groups whose permissions you hold yourself; not: %(names)s.",
            params={"names": ", ".join(too_much)},
        )


class StaffUserAdmin(UserAdmin):
    def get_fieldsets(self, request: Any, obj: Any = None) -> Any:
        fieldsets = super().get_fieldsets(request, obj)
        if request.user.is_superuser:
            return fieldsets
        return tuple(
            (name, {**options, "fields": tuple(f for f in options["fields"] if f != "is_superuser")})
            for name, options in fieldsets
        )

    def get_form(self, request: Any, obj: Any = None, change: bool = False, **kwargs: Any) -> Any:
        form = super().get_form(request, obj, change=change, **kwargs)
        actor = request.user

        class BoundedForm(form):  # type: ignore[misc, valid-type]
            def clean(self) -> dict[str, Any]:
                cleaned: dict[str, Any] = super().clean()
                if "user_permissions" in self.fields or "groups" in self.fields:
                    _refuse_beyond(actor, cleaned.get("user_permissions"), cleaned.get("groups"))
                return cleaned

        return BoundedForm

    def has_change_permission(self, request: Any, obj: Any = None) -> bool:
        allowed = super().has_change_permission(request, obj)
        return allowed and (obj is None or account_within(request.user, obj))

    def has_delete_permission(self, request: Any, obj: Any = None) -> bool:
        allowed = super().has_delete_permission(request, obj)
        return allowed and (obj is None or account_within(request.user, obj))

    def user_change_password(self, request: Any, id: str, form_url: str = "") -> Any:
        account = self.get_object(request, id)
        if account is not None and not account_within(request.user, account):
            raise PermissionDenied
        return super().user_change_password(request, id, form_url)

    def get_deleted_objects(self, objs: Any, request: Any) -> Any:
        # The bulk "delete selected" action checks has_delete_permission without an object: check each one here.
        if not all(account_within(request.user, account) for account in objs):
            raise PermissionDenied
        return super().get_deleted_objects(objs, request)


class StaffGroupAdmin(GroupAdmin):
    def get_form(self, request: Any, obj: Any = None, change: bool = False, **kwargs: Any) -> Any:
        form = super().get_form(request, obj, change=change, **kwargs)
        actor = request.user

        class BoundedForm(form):  # type: ignore[misc, valid-type]
            def clean(self) -> dict[str, Any]:
                cleaned: dict[str, Any] = super().clean()
                _refuse_beyond(actor, cleaned.get("permissions"), None)
                return cleaned

        return BoundedForm

    def has_change_permission(self, request: Any, obj: Any = None) -> bool:
        allowed = super().has_change_permission(request, obj)
        return allowed and (obj is None or group_within(request.user, obj))

    def has_delete_permission(self, request: Any, obj: Any = None) -> bool:
        allowed = super().has_delete_permission(request, obj)
        return allowed and (obj is None or group_within(request.user, obj))

    def get_deleted_objects(self, objs: Any, request: Any) -> Any:
        if not all(group_within(request.user, group) for group in objs):
            raise PermissionDenied
        return super().get_deleted_objects(objs, request)


def _replace(model: Any, model_admin: type[admin.ModelAdmin]) -> None:
    if admin.site.is_registered(model):
        admin.site.unregister(model)
    admin.site.register(model, model_admin)


_replace(User, StaffUserAdmin)
_replace(Group, StaffGroupAdmin)

__all__ = ["StaffGroupAdmin", "StaffUserAdmin", "account_within", "group_within"]
