"""Django admin for OAuth clients (django-oauth-toolkit's applications): whoever edits a client's record must not be
able to act as the people who sign in to it.

The toolkit's stock page lets anyone holding "change application" edit every field of every client, among them
*Skip authorization*, which hands a code to the client's redirect URI for anyone who opens its link, without a consent
page. Here the rule is: **a client's record never decides for a person, and only a superuser decides where a client's
codes go and how it proves itself.**

- *Skip authorization* is shown to nobody and saved as off; the authorization view never honours it either
  (``errcatalog.web.oauth.AuthorizeView``), whatever a shell or a data import left in the row.
- Redirect URIs (and post-logout ones), allowed origins, client type, grant type, the secret and whether it is
  hashed, the signing algorithm, the client id and the owning user are a superuser's to change. Moving a known
  client's redirect URI would send its users' codes elsewhere; making a confidential client public, or giving it a
  new secret, would let anyone act as it.
- Other staff with "change application" may rename a client (the consent page shows its redirect host beside its
  name); with "add application" they may add a client that signs people in with the authorization code grant, owned
  by themselves, as dynamic registration lets anyone do.
- A client's secret is shown to superusers only: one stored unhashed would otherwise be readable by whoever may view
  clients.
- Redirect URIs entered here follow registration's rule (``errcatalog.access.oauth.redirect_uri_refusal``).
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.core.exceptions import ValidationError
from oauth2_provider.admin import ApplicationAdmin
from oauth2_provider.models import AbstractApplication, get_application_model

from errcatalog.access.oauth import redirect_uri_refusal

Application = get_application_model()

# Every field the page shows, in order; skip_authorization is not among them.
_SHOWN = (
    "name",
    "client_id",
    "user",
    "redirect_uris",
    "post_logout_redirect_uris",
    "allowed_origins",
    "client_type",
    "authorization_grant_type",
    "client_secret",
    "hash_client_secret",
    "algorithm",
    "registration_source",
    "cimd_expires_at",
)
# What staff who are not superusers enter for a client they add.
_STAFF_ADDS = ("name", "redirect_uris", "client_type", "client_secret", "hash_client_secret")
# What they may change on an existing client.
_STAFF_CHANGES = ("name",)
# Never shown to them: a secret stored unhashed is readable here.
_SUPERUSER_ONLY = ("client_secret", "hash_client_secret")


class OAuthClientAdmin(ApplicationAdmin):
    list_filter = ("client_type", "authorization_grant_type", "registration_source")
    list_select_related = ("user",)

    def get_fields(self, request: Any, obj: Any = None) -> Any:
        if request.user.is_superuser:
            return _SHOWN
        if obj is None:
            return _STAFF_ADDS
        return tuple(name for name in _SHOWN if name not in _SUPERUSER_ONLY)

    def get_readonly_fields(self, request: Any, obj: Any = None) -> Any:
        readonly = tuple(super().get_readonly_fields(request, obj))
        if request.user.is_superuser or obj is None:
            return readonly
        return tuple(name for name in self.get_fields(request, obj) if name not in _STAFF_CHANGES)

    def get_form(self, request: Any, obj: Any = None, change: bool = False, **kwargs: Any) -> Any:
        form = super().get_form(request, obj, change=change, **kwargs)
        actor = request.user

        class ClientForm(form):  # type: ignore[misc, valid-type]
            def __init__(self, *args: Any, **kwargs: Any) -> None:
                super().__init__(*args, **kwargs)
                if self.instance.pk is None and not actor.is_superuser:
                    # Set before the model's own checks run, which read the grant type.
                    self.instance.authorization_grant_type = AbstractApplication.GRANT_AUTHORIZATION_CODE
                    self.instance.user = actor

            def clean_redirect_uris(self) -> str:
                uris = self.cleaned_data["redirect_uris"]
                refusals = [refusal for refusal in map(redirect_uri_refusal, uris.split()) if refusal is not None]
                if refusals:
                    raise ValidationError(refusals[0])
                return uris

        return ClientForm

    def save_model(self, request: Any, obj: Any, form: Any, change: bool) -> None:
        obj.skip_authorization = False
        super().save_model(request, obj, form, change)


if admin.site.is_registered(Application):
    admin.site.unregister(Application)
admin.site.register(Application, OAuthClientAdmin)
