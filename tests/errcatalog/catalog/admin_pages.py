"""Driving the admin's pages as a browser does: their addresses and the form data a browser would post."""

from __future__ import annotations

from django.forms import CheckboxInput
from django.urls import reverse


def admin_url(model, view: str, *args) -> str:
    return reverse(f"admin:errcatalog_{model._meta.model_name}_{view}", args=args)


def form_data(response) -> dict[str, str]:
    """The POST body a browser would send for the admin form on ``response``, unchanged."""
    forms = [response.context["adminform"].form]
    for inline in response.context.get("inline_admin_formsets", []):
        forms.extend([inline.formset.management_form, *inline.formset.forms])
    data = {}
    for form in forms:
        for name, field in form.fields.items():
            value = form[name].value()
            if isinstance(field.widget, CheckboxInput):
                if value:
                    data[form.add_prefix(name)] = "on"
            elif value is not None:
                data[form.add_prefix(name)] = value
    return data
