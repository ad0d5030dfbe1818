from collections.abc import Iterable
from typing import Any

import factory

from accounts.models import Account, Team
from tests.accounts.factories import AccountFactory
from tests.factories import ModelFactory
from users.models import Membership, User


class UserFactory(ModelFactory[User]):
    """A user in one account of one organization; ``code`` becomes its membership code."""

    class Meta:
        model = User
        skip_postgeneration_save = True

    first_name = factory.Faker("first_name")
    last_name = factory.Faker("last_name")
    email = factory.Sequence(lambda n: f"agent{n}@example.com")
    username = factory.SelfAttribute("email")
    phone_number = factory.Sequence(lambda n: f"+1303555{1000 + n % 8000:04d}")
    timezone = "America/Denver"
    country = "United States"

    @factory.post_generation
    def account(
        self: User, create: bool, extracted: Account | None, **kwargs: Any
    ) -> None:
        account = extracted or AccountFactory()
        self.accounts.add(account)
        Membership.objects.get_or_create(
            user=self,
            organization=account.organization,
            defaults={"code": kwargs.get("code")},
        )


def agent(
    account: Account,
    *,
    phone: str,
    schedule: tuple[str, str] | None = ("00:00", "23:59"),
    tz: str | None = None,
    teams: Iterable[Team] = (),
    **kwargs: Any,
) -> User:
    """An agent of ``account`` with a phone and (by default) a schedule open all week."""
    from datetime import time

    from users.models import UserScheduleDay

    user = UserFactory(
        account=account, phone_number=phone, timezone=tz or account.timezone, **kwargs
    )
    if schedule:
        start, end = (time.fromisoformat(t) for t in schedule)
        user.schedule_active = True
        user.save(update_fields=["schedule_active"])
        UserScheduleDay.objects.bulk_create(
            UserScheduleDay(user=user, weekday=d, start_time=start, end_time=end)
            for d in range(7)
        )
    user.teams.set(teams)
    return user
