"""The admin app, configured to use support's admin site (config.admin.SupportAdminSite)."""

from django.contrib.admin.apps import AdminConfig


class SupportAdminConfig(AdminConfig):
    default_site = "config.admin.SupportAdminSite"
