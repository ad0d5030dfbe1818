"""Demo sign-ins for the pages (README, "Pages"): one user per role with a known password.

The first organization gets a global manager; its scorer, and its first account's
manager and first agent (all made by seed_demo), get a password too. A password is set
only while the user has none, so one changed by hand stays changed. These are demo
passwords, printed and documented on purpose: never run seed_demo on a live database.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from demo.management.commands.seed_demo import PersonSpec, user_make

if TYPE_CHECKING:
    from demo.management.commands.seed_demo import DemoData

PASSWORD = "Demo-pages-1!"  # noqa: S105 (a demo password, documented in the README)
GLOBAL_MANAGER = "global.manager@demo-motors.example"


def seed_demo(demo: DemoData) -> None:
    """Create the global manager, and give every page login its password."""
    organization = demo.organizations[0]
    first = organization.accounts[0]
    global_manager = user_make(
        organization.organization,
        [first.account],
        PersonSpec("Glenn", "Hart", GLOBAL_MANAGER),
        "Global Manager",
        schedule_active=False,
    )
    logins = [
        ("scorer", organization.scorers[0]),
        ("global manager", global_manager),
        (f"manager of {first.account.name}", first.managers[0]),
        (f"agent of {first.account.name}", first.agents[0]),
    ]
    given = []
    for role, user in logins:
        if not user.has_usable_password():
            user.set_password(PASSWORD)
            user.save(update_fields=["password"])
            given.append((role, user))
    # Printed once, when the passwords are set, as the admin's password is (last, framed).
    if given:
        demo.sign_ins.append(
            f"Pages: sign in at /login/ (password {PASSWORD} for each):"
        )
    for role, user in given:
        demo.sign_ins.append(f"  {role:<28} {user.username}")
