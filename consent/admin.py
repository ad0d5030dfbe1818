"""The consent ledger in the admin: every entry with who and when, filtered by
organization and account, exported as CSV for an audit; support adds a consent (its
own entry) or a revocation of calls (support's, or a manager's mark it passes on), and
uploads an account's do-not-call list (``consent.dnc``)."""

from __future__ import annotations

import re
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import URLPattern, path
from django.utils import timezone

from accounts.models import E164
from consent.dnc import MOST_BYTES, MOST_NUMBERS, DoNotCallForm, do_not_call_list_record
from consent.exports import ledger_csv
from consent.models import ConsentEvent, Kind, Source
from consent.selectors import ledger_rows
from consent.services import consent_give, consent_revoke

MANUAL_KINDS = [
    (Kind.CONSENT, Kind.CONSENT.label),
    (Kind.REVOCATION, Kind.REVOCATION.label),
]
MANUAL_SOURCES = [
    (Source.SUPPORT, Source.SUPPORT.label),
    (Source.MANAGER, Source.MANAGER.label),
]


class ConsentEntryForm(forms.ModelForm):
    """What support may enter by hand. A revocation is of calls: texts stop by the lead's
    own STOP (texting's opt-outs), which support cannot send for the lead."""

    kind = forms.ChoiceField(choices=MANUAL_KINDS)
    source = forms.ChoiceField(choices=MANUAL_SOURCES, initial=Source.SUPPORT)
    at = forms.DateTimeField(initial=timezone.now, help_text="When the person said it.")

    class Meta:
        model = ConsentEvent
        fields = [
            "account",
            "phone",
            "email",
            "kind",
            "calls",
            "texts",
            "emails",
            "source",
            "at",
            "detail",
        ]

    def clean_phone(self) -> str:
        phone = str(self.cleaned_data.get("phone") or "").strip()
        if phone and not re.match(E164.regex, phone):
            raise forms.ValidationError("Give the number in E.164 (+13035550100).")
        return phone

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        if not (cleaned.get("calls") or cleaned.get("texts") or cleaned.get("emails")):
            raise forms.ValidationError("Tick calls, texts or e-mails.")
        if cleaned.get("emails") and not cleaned.get("email"):
            self.add_error("email", "Consent to e-mails is of an e-mail address.")
        if cleaned.get("kind") == Kind.REVOCATION:
            if cleaned.get("emails"):
                self.add_error(
                    "emails",
                    "E-mails stop by the opt-out link in each e-mail; a revocation "
                    "entered here is of calls.",
                )
            if not cleaned.get("phone"):
                self.add_error("phone", "A revocation is of a phone number.")
            if cleaned.get("texts"):
                self.add_error(
                    "texts",
                    "Texts stop when the lead texts STOP; a revocation entered here is of calls.",
                )
        elif not (cleaned.get("phone") or cleaned.get("email")):
            raise forms.ValidationError("Give a phone number or an e-mail address.")
        return cleaned


@admin.register(ConsentEvent)
class ConsentEventAdmin(admin.ModelAdmin):
    """Entries are added (here through the services) and never changed or deleted."""

    form = ConsentEntryForm
    list_display = [
        "at",
        "phone",
        "email",
        "kind",
        "scope",
        "source",
        "who",
        "account",
        "detail",
    ]
    list_filter = [
        "kind",
        "source",
        "calls",
        "texts",
        "emails",
        "account__organization",
        "account",
    ]
    list_select_related = ["account"]
    search_fields = ["phone", "email"]
    date_hierarchy = "at"
    actions = ["export_csv"]
    change_list_template = "admin/consent/change_list.html"

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def save_model(
        self, request: HttpRequest, obj: ConsentEvent, form: Any, change: bool
    ) -> None:
        data = form.cleaned_data
        common = {
            "source": data["source"],
            "at": data["at"],
            "detail": data["detail"],
            "by": request.user,
        }
        if data["kind"] == Kind.REVOCATION:
            (event,) = consent_revoke(
                accounts=[data["account"]],
                phone=data["phone"],
                calls=True,
                texts=False,
                **common,
            )
        else:
            given = consent_give(
                account=data["account"],
                phone=data["phone"],
                email=data["email"],
                calls=data["calls"],
                texts=data["texts"],
                emails=data["emails"],
                **common,
            )
            assert given is not None  # the form asks for an address
            event = given
        obj.pk, obj.by_name, obj._state.adding = event.pk, event.by_name, False

    @admin.action(description="Export the selected entries as CSV (for an audit)")
    def export_csv(
        self, request: HttpRequest, queryset: QuerySet[ConsentEvent]
    ) -> StreamingHttpResponse:
        stamp = timezone.now().strftime("%Y%m%d-%H%M")
        response = StreamingHttpResponse(
            (line.encode() for line in ledger_csv(ledger_rows(rows=queryset))),
            content_type="text/csv; charset=utf-8",
        )
        response["Content-Disposition"] = f'attachment; filename="consent-{stamp}.csv"'
        return response

    def get_urls(self) -> list[URLPattern]:  # type: ignore[override]
        return [
            path(
                "do-not-call/",
                self.admin_site.admin_view(self.do_not_call_view),
                name="consent_consentevent_do_not_call",
            ),
            *super().get_urls(),
        ]

    def do_not_call_view(self, request: HttpRequest) -> HttpResponse:
        """Upload an account's do-not-call list: all its numbers recorded, or none."""
        if not self.has_add_permission(request):
            raise PermissionDenied
        form = DoNotCallForm(
            request.POST if request.method == "POST" else None,
            request.FILES if request.method == "POST" else None,
        )
        if form.is_bound and form.is_valid():
            account = form.cleaned_data["account"]
            recorded = do_not_call_list_record(
                account=account,
                numbers=form.cleaned_data["reading"].numbers,
                note=form.cleaned_data["note"],
                by=request.user,  # type: ignore[arg-type]  # admin_view: signed in
            )
            messages.success(
                request,
                f"Recorded {len(recorded)} numbers of {account}'s do-not-call list: its "
                "lead calls to them end CANCEL, not dialed, until the person sends a "
                "new lead.",
            )
            return redirect("admin:consent_consentevent_changelist")
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": "Upload a do-not-call list",
            "form": form,
            "most_numbers": MOST_NUMBERS,
            "most_kib": MOST_BYTES // 1024,
        }
        return TemplateResponse(request, "admin/consent/do_not_call.html", context)
