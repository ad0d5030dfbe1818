from django.apps import AppConfig


class LeadsConfig(AppConfig):
    name = "leads"

    def ready(self) -> None:
        from accounts.models import Account, Team
        from leads.models import ParsingRule, RuleCondition, VendorRegistration
        from leads.services import routing

        # What intake's routing cache holds: a change to any of these rows, by a service
        # or the admin, makes it stale.
        routing.watch(VendorRegistration, ParsingRule, RuleCondition, Account, Team)
