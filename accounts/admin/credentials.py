"""API credentials: who may call the API, for which accounts, with which keys."""

from __future__ import annotations

from typing import Any

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.utils import timezone

from accounts.admin.keys import ISSUED_KEY as _ISSUED_KEY
from accounts.admin.keys import (
    ApiKeyInline,
    KeyToolsAdmin,
    last_used_of,
    newest_usable_prefix,
    usable_now,
)
from accounts.forms import (
    ApiCredentialAddForm,
    ApiCredentialChangeForm,
)
from accounts.keys import key_prefix
from accounts.models import (
    ApiCredential,
    ApiKey,
)
from accounts.services import (
    api_credential_issue,
    api_credential_revoke,
    api_credential_update,
    api_key_rotate,
)
from core.admin import (
    ShownKey,
    count_of,
    describe,
    render_keys,
)


@admin.register(ApiCredential)
class ApiCredentialAdmin(KeyToolsAdmin):
    list_display = [
        "api_user",
        "name",
        "organization",
        "scope",
        "current_key",
        "usable",
        "key_last_used",
        "created_at",
    ]
    list_filter = ["organization"]
    search_fields = ["api_user", "name", "organization__name", "keys__prefix"]
    search_help_text = (
        "API user, name, organization, or a key's prefix (e.g. lc_ab12cd34)."
    )
    list_select_related = ["organization"]
    autocomplete_fields = ["organization"]
    date_hierarchy = "created_at"
    form = ApiCredentialChangeForm
    actions = ["issue_selected", "revoke_selected"]
    issue_label = "Rotate key"
    issue_action_label = (
        "Rotate key (new key shown once; the old one works for the grace period)"
    )
    revoke_label = "Revoke keys"
    revoke_action_label = "Revoke keys (stop working now)"

    def get_queryset(self, request: HttpRequest) -> QuerySet[ApiCredential]:
        return (
            super()
            .get_queryset(request)
            .annotate(
                n_usable=count_of(ApiKey, "credential", usable_now()),
                current_prefix=newest_usable_prefix(ApiKey, "credential"),
                last_used=last_used_of(ApiKey, "credential"),
            )
            .prefetch_related("accounts")
        )

    @admin.display(
        description="key last used", ordering="last_used", empty_value="never"
    )
    def key_last_used(self, obj: Any) -> Any:
        return obj.last_used

    def get_fieldsets(self, request: HttpRequest, obj: Any = None) -> Any:
        if obj is None:
            return [
                (
                    None,
                    {
                        "fields": ["organization", "name", "api_user", "accounts"],
                        "description": "Saving issues the credential and its key. The key is shown once, on the next page.",
                    },
                )
            ]
        return [
            (
                None,
                {
                    "fields": [
                        "api_user",
                        "organization",
                        "name",
                        "accounts",
                        "created_at",
                    ]
                },
            )
        ]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        # Integrators are configured with the apiuser; the organization decides what it reaches.
        return ["api_user", "organization", "created_at"] if obj else []

    def get_form(
        self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any
    ) -> type[forms.ModelForm]:
        if obj is None:
            kwargs["form"] = ApiCredentialAddForm
        return super().get_form(request, obj, change, **kwargs)

    def get_inlines(
        self, request: HttpRequest, obj: Any
    ) -> list[type[admin.options.InlineModelAdmin]]:
        return [ApiKeyInline] if obj else []

    # Adding goes through api_credential_issue: the form only collects its arguments.

    def save_form(self, request: HttpRequest, form: Any, change: bool) -> Any:
        if change:
            return super().save_form(request, form, change)
        data = form.cleaned_data
        credential, key = api_credential_issue(
            organization=data["organization"],
            name=data["name"],
            api_user=data["api_user"],
            accounts=list(data["accounts"]),
        )
        setattr(request, _ISSUED_KEY, key)
        return credential

    def save_model(
        self, request: HttpRequest, obj: ApiCredential, form: Any, change: bool
    ) -> None:
        if change:
            # The form checked the accounts with the service's own rule; the service checks again.
            api_credential_update(
                credential=obj,
                name=form.cleaned_data["name"],
                accounts=list(form.cleaned_data["accounts"]),
            )

    def save_related(
        self, request: HttpRequest, form: Any, formsets: Any, change: bool
    ) -> None:
        # The accounts were set by the service above (not form.save_m2m); the key inline is read-only.
        for formset in formsets:
            self.save_formset(request, form, formset, change=change)

    def construct_change_message(
        self, request: HttpRequest, form: Any, formsets: Any, add: bool = False
    ) -> Any:
        if add:
            return f"Issued with key {key_prefix(getattr(request, _ISSUED_KEY))}…"
        return super().construct_change_message(request, form, formsets, add)

    def response_add(
        self,
        request: HttpRequest,
        obj: ApiCredential,
        post_url_continue: str | None = None,
    ) -> HttpResponse:
        key = getattr(request, _ISSUED_KEY)
        delattr(request, _ISSUED_KEY)
        return render_keys(
            self,
            request,
            title="New API credential",
            keys=[
                ShownKey(
                    str(obj.organization),
                    self.change_url(obj),
                    "API key",
                    obj.api_user,
                    key,
                )
            ],
            notes=["The integrator sends both values: apiuser and apikey."],
        )

    # Rotation and revocation.

    def issue_explanation(self, objects: list[Any]) -> list[str]:
        first = "A new key is issued and shown once, on the next page."
        if not ApiKey.objects.filter(usable_now(), credential__in=objects).exists():
            return [
                first,
                "These credentials have no working key yet: the new key works at once.",
            ]
        return [
            first,
            f"The current key keeps working for {describe(settings.API_KEY_ROTATION_GRACE)}, then stops, so the "
            "integrator has time to switch.",
        ]

    def revoke_explanation(self) -> list[str]:
        return [
            "Every key of the credentials below stops working now, including keys in a rotation grace period.",
            "Integrators using them get “Invalid API key” until they receive a new key (use “Rotate key”).",
        ]

    def issue(self, request: HttpRequest, objects: list[Any]) -> HttpResponse:
        grace = settings.API_KEY_ROTATION_GRACE
        until = timezone.localtime(timezone.now() + grace)
        shown = []
        for credential in objects:
            key = api_key_rotate(credential=credential)
            self.log_change(
                request, credential, f"Rotated key; new key {key_prefix(key)}…"
            )
            shown.append(
                ShownKey(
                    str(credential.organization),
                    self.change_url(credential),
                    "API key",
                    credential.api_user,
                    key,
                )
            )
        return render_keys(
            self,
            request,
            title="Rotated API keys" if len(shown) > 1 else "Rotated API key",
            keys=shown,
            notes=[
                f"The previous key keeps working for the grace period of {describe(grace)} "
                f"(until {until:%Y-%m-%d %H:%M %Z}), then stops. Revoke the credential to stop it sooner.",
            ],
        )

    def revoke(self, request: HttpRequest, objects: list[Any]) -> None:
        for credential in objects:
            count = api_credential_revoke(credential=credential)
            self.log_change(request, credential, f"Revoked {count} key(s).")
        names = ", ".join(str(credential) for credential in objects)
        self.message_user(
            request,
            f"Every key of {names} revoked: they stop working now.",
            messages.SUCCESS,
        )

    @admin.display(description="accounts")
    def scope(self, obj: ApiCredential) -> str:
        names = [account.name for account in obj.accounts.all()]
        return ", ".join(names) if names else "All accounts"

    @admin.display(description="current key", ordering="current_prefix")
    def current_key(self, obj: Any) -> str:
        return f"{obj.current_prefix}…" if obj.current_prefix else "—"

    @admin.display(description="usable", boolean=True, ordering="n_usable")
    def usable(self, obj: Any) -> bool:
        return obj.n_usable > 0
