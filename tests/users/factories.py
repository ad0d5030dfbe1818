import factory

from tests.accounts.factories import AccountFactory
from users.models import Membership, User


class UserFactory(factory.django.DjangoModelFactory):
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
    def account(self, create, extracted, **kwargs):
        account = extracted or AccountFactory()
        self.accounts.add(account)
        Membership.objects.get_or_create(
            user=self, organization=account.organization, defaults={"code": kwargs.get("code")}
        )
