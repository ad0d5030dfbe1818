from datetime import time
from typing import Any

import factory

from accounts.models import (
    Account,
    AccountScheduleDay,
    ApiCredential,
    Organization,
    Team,
)
from accounts.services import api_credential_issue, scored_data_key_issue
from tests.factories import ModelFactory


class OrganizationFactory(ModelFactory[Organization]):
    class Meta:
        model = Organization

    name = factory.Sequence(lambda n: f"Motor Group {n}")


class AccountFactory(ModelFactory[Account]):
    class Meta:
        model = Account
        skip_postgeneration_save = True

    organization = factory.SubFactory(OrganizationFactory)
    name = factory.Sequence(lambda n: f"Dealer {n}")
    timezone = "America/Denver"
    country = "US"
    postal_code = "80202"
    address = "1 Main St"
    city = "Denver"
    caller_id = "+13035550199"

    @factory.post_generation
    def schedule(
        self: Account, create: bool, extracted: bool | None, **kwargs: Any
    ) -> None:
        """Every account gets a weekday 08:00-18:00 schedule unless ``schedule=False``."""
        if not create or extracted is False:
            return
        AccountScheduleDay.objects.bulk_create(
            AccountScheduleDay(
                account=self,
                weekday=d,
                active=d < 5,
                start_time=time(8),
                end_time=time(18),
            )
            for d in range(7)
        )

    @factory.post_generation
    def scorecard(
        self: Account, create: bool, extracted: bool | None, **kwargs: Any
    ) -> None:
        """Every account gets the default scorecard, as ``account_create`` gives it (its
        signal, received by scoring), unless ``scorecard=False``."""
        if not create or extracted is False:
            return
        from scoring.services import scorecard_create_default

        scorecard_create_default(account=self)


class TeamFactory(ModelFactory[Team]):
    class Meta:
        model = Team

    account = factory.SubFactory(AccountFactory)
    name = factory.Sequence(lambda n: f"Team {n}")


def issue_credential(
    organization: Organization, **kwargs: Any
) -> tuple[ApiCredential, str]:
    """A credential and its key, through the same service support uses."""
    return api_credential_issue(organization=organization, **kwargs)


def issue_scored_data_key(account: Account) -> str:
    return scored_data_key_issue(account=account)
