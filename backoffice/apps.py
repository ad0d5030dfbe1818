"""The back office: support's overview and the admin site. It reads every app; nothing
imports it."""

from django.apps import AppConfig
from django.contrib.admin import apps as admin_apps


class BackofficeConfig(AppConfig):
    """Its templates (the admin's index page) come before django.contrib.admin's."""

    name = "backoffice"
    default = True


class SupportAdminConfig(admin_apps.AdminConfig):
    """django.contrib.admin, with support's site (``backoffice.site.SupportAdminSite``);
    named in INSTALLED_APPS, never the default of ``backoffice``."""

    default = False
    default_site = "backoffice.site.SupportAdminSite"
