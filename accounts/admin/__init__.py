"""Support's screens for organizations, accounts, teams and credentials, one module per
job: ``organizations`` (organizations, accounts, teams), ``credentials`` (API
credentials), ``keys`` (key tools, lists and inlines), ``schedules`` (weekly schedules and
timezones, which the user admin uses too). Importing this package registers them all
but the account admin: ``backoffice.admin`` registers it, with every app's inlines."""

from accounts.admin.credentials import ApiCredentialAdmin
from accounts.admin.keys import ApiKeyAdmin, ScoredDataKeyAdmin
from accounts.admin.organizations import AccountAdmin, OrganizationAdmin, TeamAdmin
from accounts.admin.schedules import (
    ScheduleDayInline,
    ScheduleDaysMixin,
    TimezoneSelectMixin,
)

__all__ = [
    "AccountAdmin",
    "ApiCredentialAdmin",
    "ApiKeyAdmin",
    "OrganizationAdmin",
    "ScheduleDayInline",
    "ScheduleDaysMixin",
    "ScoredDataKeyAdmin",
    "TeamAdmin",
    "TimezoneSelectMixin",
]
