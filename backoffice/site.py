"""Support's admin site: Django's, with the overview (``backoffice.overview``) above the
app list on its index page (``backoffice/templates/admin/index.html``) and a throttled
sign-in. Made the default site by ``backoffice.apps.SupportAdminConfig``."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.contrib.admin.forms import AdminAuthenticationForm
from django.http import HttpRequest
from django.template.response import TemplateResponse

from backoffice.overview import support_overview
from core.throttling import ThrottledSignInMixin


class AdminLoginForm(ThrottledSignInMixin, AdminAuthenticationForm):
    """The admin sign-in, throttled (``ThrottledSignInMixin``)."""


class SupportAdminSite(admin.AdminSite):
    """Django's admin site with support's overview above the app list on its index page
    (backoffice/templates/admin/index.html).
    Without Django's navigation sidebar (the index and breadcrumbs lead everywhere): on a
    1,280 px screen its 300 px are what the widest tables (deliveries, attempts) need."""

    enable_nav_sidebar = False
    # Failed sign-ins are throttled per address and per username.
    login_form = AdminLoginForm

    def index(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> TemplateResponse:
        context = {"overview": support_overview(request), **(extra_context or {})}
        return super().index(request, extra_context=context)
