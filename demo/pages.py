"""Demo sign-ins for the pages (README, "Pages"): one user per role with a known password.

The first organization gets a scorer of its accounts and a global manager; its first
account's manager and first agent (made by seed_demo) get a password too. A password is
set only while the user has none, so one changed by hand stays changed. These are demo
passwords, printed and documented on purpose: never run seed_demo on a live database.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from demo.management.commands.seed_demo import ALWAYS_OPEN, country_name
from users.models import User
from users.services import user_create

if TYPE_CHECKING:
    from demo.management.commands.seed_demo import DemoData

PASSWORD = "Demo-pages-1!"  # noqa: S105 (a demo password, documented in the README)
SCORER = "scorer@demo-motors.example"
GLOBAL_MANAGER = "global.manager@demo-motors.example"


def seed_demo(demo: DemoData) -> None:
    """Create the scorer and the global manager, and give every page login its password."""
    organization = demo.organizations[0]
    first = organization.accounts[0]
    accounts = [acc.account for acc in organization.accounts]
    logins = [
        ("scorer", _role_user(demo, SCORER, "Sasha", "Scorer", "Scorer", accounts)),
        (
            "global manager",
            _role_user(
                demo, GLOBAL_MANAGER, "Glenn", "Hart", "Global Manager", accounts[:1]
            ),
        ),
        (f"manager of {first.account.name}", first.managers[0]),
        (f"agent of {first.account.name}", first.agents[0]),
    ]
    given = []
    for role, user in logins:
        if not user.has_usable_password():
            user.set_password(PASSWORD)
            user.save(update_fields=["password"])
            given.append((role, user))
    # Printed once, when the passwords are set, as the admin's password is.
    if given:
        demo.log(f"Pages: sign in at /login/ (password {PASSWORD} for each):")
    for role, user in given:
        demo.log(f"  {role:<28} {user.username}")


def _role_user(
    demo: DemoData, email: str, first: str, last: str, template: str, accounts: list
) -> User:
    existing = User.objects.filter(username=email).first()
    if existing is not None:
        return existing
    account = accounts[0]
    return user_create(
        organization=demo.organizations[0].organization,
        data={
            "first_name": first,
            "last_name": last,
            "email": email,
            "account_ids": [acc.pk for acc in accounts],
            "permission_template": template,
            "timezone": account.timezone,
            "country": country_name(account),
            "schedule": {"active": False, "days": ALWAYS_OPEN},
        },
    )
