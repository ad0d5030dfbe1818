from typing import Any

from django.apps import AppConfig


class LeadsConfig(AppConfig):
    name = "leads"

    def ready(self) -> None:
        from django.db.models.signals import post_delete, post_save

        from accounts.models import Account, Team
        from leads.models import ParsingRule, RuleCondition, VendorRegistration

        # What intake's routing cache holds (leads.services.routing): a change to any of
        # these rows, by a service or the admin, makes it stale.
        for model in (VendorRegistration, ParsingRule, RuleCondition, Account, Team):
            post_save.connect(_routing_changed, sender=model)
            post_delete.connect(_routing_changed, sender=model)


def _routing_changed(**kwargs: Any) -> None:
    from leads.services import routing

    routing.changed()
