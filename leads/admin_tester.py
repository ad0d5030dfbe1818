"""The parsing rules' tester page: a pasted ADF document run through the current
configuration by ``leads.trial.lead_trial``, which stores nothing; this page only renders
its result."""

from __future__ import annotations

from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse

from leads.forms import RuleTesterForm
from leads.trial import lead_trial

TESTER_PAGE = "admin/leads/rule_tester.html"


def rule_tester_view(
    model_admin: admin.ModelAdmin, request: HttpRequest
) -> HttpResponse:
    """Run a pasted document through the current configuration; nothing is stored."""
    if not model_admin.has_view_permission(request):
        raise PermissionDenied
    form = RuleTesterForm(request.POST if request.method == "POST" else None)
    trial = None
    if form.is_bound and form.is_valid():
        trial = lead_trial(
            raw_xml=form.cleaned_data["xml"],
            organization=form.cleaned_data["organization"],
            credential=form.cleaned_data["credential"],
        )
    context = {
        **model_admin.admin_site.each_context(request),
        "opts": model_admin.opts,
        "title": "Rule tester",
        "form": form,
        "trial": trial,
    }
    return TemplateResponse(request, TESTER_PAGE, context)
