"""Fill the database with a working demo (CONTRACT.md, "Demo data: manage.py seed_demo").

Safe to run again: organizations, accounts, teams and users are found by name (users by
username) and only what is missing is created. Keys are issued fresh on every run and the
demo's earlier keys stop working at once. The keys are printed: that is the point of it.
The summary ends with shell ``export`` lines for the README's commands; ``--env-file``
writes them to a file too (``make run``: ``var/demo.env``, read with ``. var/demo.env``).
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shlex
import string
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import time, timedelta
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction
from django.utils.module_loading import import_string
from django_countries import countries

from accounts.models import (
    Account,
    AccountScheduleDay,
    ApiCredential,
    Organization,
    Team,
)
from accounts.schedules import END_OF_DAY, WEEKDAYS
from accounts.services import (
    account_create,
    api_credential_issue,
    api_key_rotate,
    scored_data_key_issue,
)
from users.models import User
from users.services import user_create

# The demo data of each app, one module per app in this package, run in dependency order
# after the organizations, accounts and users above exist, in the same transaction; each is
# safe to run again.
SEED_STEPS: list[str] = [
    "demo.leads.seed_demo",
    "demo.calls.seed_demo",
    "demo.scoring.seed_demo",
    "demo.pages.seed_demo",
    "demo.texting.seed_demo",
    "demo.appointments.seed_demo",  # after texting: today's appointments send reminders
    "demo.notify.seed_demo",
    "demo.scoring.seed_rollup",  # last: after every step that writes calls or scores
]

TEAMS = ("Sales", "Service")
ADMIN_USERNAME = "admin"
# The contract's spelling; django-countries calls it "United States of America".
COUNTRY_NAMES = {"US": "United States"}
# Open every hour of every day: a demo lead always finds an agent (23:59 runs to midnight).
ALWAYS_OPEN = [
    {"active": True, "start_time": time(0, 0), "end_time": END_OF_DAY} for _ in WEEKDAYS
]


@dataclass(frozen=True)
class PersonSpec:
    first_name: str
    last_name: str
    email: str
    phone_number: str = (
        ""  # E.164, valid, not ending in 0000-0003 (the simulator's special numbers)
    )


@dataclass(frozen=True)
class AccountSpec:
    name: str
    # The vendor registration a later issue (leads) creates for this account; until then the
    # JSON shows the values it will register: this id, and the account name as vendor name.
    vendor_id: str
    timezone: str
    city: str
    address: str
    postal_code: str
    caller_id: str
    agents: tuple[PersonSpec, ...]
    manager: PersonSpec
    country: str = "US"


@dataclass(frozen=True)
class OrganizationSpec:
    name: str
    api_user: str
    accounts: tuple[AccountSpec, ...]
    # Scores the calls of every account of the organization (permission template Scorer).
    scorer: PersonSpec


ORGANIZATIONS = (
    OrganizationSpec(
        name="Demo Motors Group",
        api_user="demo-motors-group",
        accounts=(
            AccountSpec(
                name="Demo Motors North",
                vendor_id="DMN-1001",
                timezone="America/Denver",
                city="Denver",
                address="1200 N Broadway",
                postal_code="80203",
                caller_id="+13035550150",
                agents=(
                    PersonSpec(
                        "Avery",
                        "Lopez",
                        "avery.lopez@north.demo-motors.example",
                        "+13035550101",
                    ),
                    PersonSpec(
                        "Jordan",
                        "Kim",
                        "jordan.kim@north.demo-motors.example",
                        "+13035550102",
                    ),
                    PersonSpec(
                        "Riley",
                        "Patel",
                        "riley.patel@north.demo-motors.example",
                        "+13035550103",
                    ),
                ),
                manager=PersonSpec(
                    "Morgan", "Reyes", "morgan.reyes@north.demo-motors.example"
                ),
            ),
            AccountSpec(
                name="Demo Motors South",
                vendor_id="DMS-1002",
                timezone="America/Chicago",
                city="Dallas",
                address="2400 Commerce St",
                postal_code="75201",
                caller_id="+12145550150",
                agents=(
                    PersonSpec(
                        "Casey",
                        "Nguyen",
                        "casey.nguyen@south.demo-motors.example",
                        "+12145550101",
                    ),
                    PersonSpec(
                        "Drew",
                        "Johnson",
                        "drew.johnson@south.demo-motors.example",
                        "+12145550102",
                    ),
                    PersonSpec(
                        "Quinn",
                        "Garcia",
                        "quinn.garcia@south.demo-motors.example",
                        "+12145550103",
                    ),
                ),
                manager=PersonSpec(
                    "Taylor", "Brooks", "taylor.brooks@south.demo-motors.example"
                ),
            ),
        ),
        # The pages' demo scorer (demo/pages.py gives it a password).
        scorer=PersonSpec("Sasha", "Scorer", "scorer@demo-motors.example"),
    ),
    OrganizationSpec(
        name="Lakeside Auto Group",
        api_user="lakeside-auto-group",
        accounts=(
            AccountSpec(
                name="Lakeside Ford",
                vendor_id="LSF-2001",
                timezone="America/New_York",
                city="Buffalo",
                address="300 Lakeshore Rd",
                postal_code="14202",
                caller_id="+17165550150",
                agents=(
                    PersonSpec(
                        "Jamie",
                        "Walsh",
                        "jamie.walsh@lakeside-ford.example",
                        "+17165550101",
                    ),
                    PersonSpec(
                        "Skyler",
                        "Chen",
                        "skyler.chen@lakeside-ford.example",
                        "+17165550102",
                    ),
                    PersonSpec(
                        "Reese",
                        "Murphy",
                        "reese.murphy@lakeside-ford.example",
                        "+17165550103",
                    ),
                ),
                manager=PersonSpec(
                    "Parker", "Sullivan", "parker.sullivan@lakeside-ford.example"
                ),
            ),
        ),
        scorer=PersonSpec("Robin", "Hale", "robin.hale@scoring.lakeside-auto.example"),
    ),
)


@dataclass
class DemoAccount:
    account: Account
    teams: dict[str, Team]
    scored_data_key: str
    vendor_id: str
    vendor_name: str
    agents: list[User] = field(default_factory=list)
    managers: list[User] = field(default_factory=list)


@dataclass
class DemoOrganization:
    organization: Organization
    credential: ApiCredential
    api_key: str
    accounts: list[DemoAccount] = field(default_factory=list)
    scorers: list[User] = field(default_factory=list)


@dataclass
class DemoData:
    """What the demo holds, handed to each seed step; ``log`` reports progress on standard error."""

    log: Callable[[str], None]
    organizations: list[DemoOrganization] = field(default_factory=list)
    admin_password: str | None = None  # set only when this run created the superuser
    # Lines for the framed sign-in block printed last (the pages' demo sign-ins).
    sign_ins: list[str] = field(default_factory=list)


class Command(BaseCommand):
    help = "Create or refresh the demo data and print it, with fresh keys. Safe to run again."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--json",
            action="store_true",
            help="Print one JSON document on standard output and nothing else there.",
        )
        parser.add_argument(
            "--env-file",
            type=Path,
            help="Also write the summary's export lines to this file (for `. FILE` in a shell).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        demo = seed(log=self.note)
        env_file: Path | None = options["env_file"]
        if env_file is not None:
            write_env_file(env_file, demo)
        if options["json"]:
            self.stdout.write(json.dumps(as_json(demo), indent=2))
        else:
            self.stdout.write(summary(demo, env_file=env_file))
        # Last, framed: the one-time passwords must not scroll away among other lines.
        self.stdout.flush()
        for line in sign_in_block(demo, env_file=env_file):
            self.note(line)

    def note(self, line: str) -> None:
        """An ordinary line (progress, the admin password) on standard error, which keeps
        standard output for the JSON document. Plain: Django styles standard error as an
        error (red on a terminal), and these are not errors."""
        self.stderr.write(line, style_func=_plain)


def _plain(text: str) -> str:
    return text


@transaction.atomic
def seed(*, log: Callable[[str], None]) -> DemoData:
    """Find or create every demo object, issue fresh keys, then run the later apps' steps."""
    demo = DemoData(log=log)
    for spec in ORGANIZATIONS:
        organization, _ = Organization.objects.get_or_create(name=spec.name)
        credential, api_key = _fresh_credential(organization, spec.api_user)
        demo_organization = DemoOrganization(
            organization=organization, credential=credential, api_key=api_key
        )
        for account_spec in spec.accounts:
            demo_organization.accounts.append(_seed_account(organization, account_spec))
        demo_organization.scorers = [
            user_make(
                organization,
                [acc.account for acc in demo_organization.accounts],
                spec.scorer,
                "Scorer",
            )
        ]
        demo.organizations.append(demo_organization)
    demo.admin_password = _ensure_superuser()
    for step in SEED_STEPS:
        import_string(step)(demo)
    return demo


def _fresh_credential(
    organization: Organization, api_user: str
) -> tuple[ApiCredential, str]:
    """The demo credential with a new key; its earlier keys stop now (grace 0)."""
    credential = ApiCredential.objects.filter(api_user=api_user).first()
    if credential is None:
        return api_credential_issue(
            organization=organization, name="Demo integration", api_user=api_user
        )
    if credential.organization_id != organization.pk:
        raise CommandError(
            f"The apiuser {api_user!r} belongs to another organization; rename it first."
        )
    return credential, api_key_rotate(credential=credential, grace=timedelta(0))


def _seed_account(organization: Organization, spec: AccountSpec) -> DemoAccount:
    account = Account.objects.filter(
        organization=organization, name=spec.name
    ).first() or account_create(
        account=Account(
            organization=organization,
            name=spec.name,
            timezone=spec.timezone,
            country=spec.country,
            city=spec.city,
            address=spec.address,
            postal_code=spec.postal_code,
            caller_id=spec.caller_id,
            schedule_active=True,
        )
    )
    have = set(account.schedule_days.values_list("weekday", flat=True))
    AccountScheduleDay.objects.bulk_create(
        AccountScheduleDay(account=account, weekday=weekday, **day)
        for weekday, day in enumerate(ALWAYS_OPEN)
        if weekday not in have
    )
    teams = {
        name: Team.objects.get_or_create(account=account, name=name)[0]
        for name in TEAMS
    }
    demo_account = DemoAccount(
        account=account,
        teams=teams,
        scored_data_key=scored_data_key_issue(account=account, grace=timedelta(0)),
        vendor_id=spec.vendor_id,
        vendor_name=spec.name,
    )
    demo_account.agents = [
        user_make(organization, [account], person, "Agent") for person in spec.agents
    ]
    demo_account.managers = [
        user_make(organization, [account], spec.manager, "Manager")
    ]
    return demo_account


def user_make(
    organization: Organization,
    accounts: list[Account],
    person: PersonSpec,
    template: str,
    *,
    schedule_active: bool = True,
) -> User:
    """The user with this username as it is, or a new one made by the User API's service."""
    existing = User.objects.filter(username=person.email).first()
    if existing is not None:
        return existing
    return user_create(
        organization=organization,
        data={
            "first_name": person.first_name,
            "last_name": person.last_name,
            "email": person.email,
            "phone_number": person.phone_number,
            "account_ids": [account.pk for account in accounts],
            "permission_template": template,
            "timezone": accounts[0].timezone,
            "country": country_name(accounts[0]),
            "schedule": {"active": schedule_active, "days": ALWAYS_OPEN},
        },
    )


def _ensure_superuser() -> str | None:
    """Create ``admin`` with a random password the first time; returns that password, else None."""
    if User.objects.filter(username=ADMIN_USERNAME).exists():
        return None
    password = _random_password()
    User.objects.create_superuser(
        username=ADMIN_USERNAME, email="admin@example.com", password=password
    )
    return password


def _random_password() -> str:
    """16 random characters meeting the password rule (a digit, both cases, a special character)."""
    pools = (
        string.ascii_lowercase,
        string.ascii_uppercase,
        string.digits,
        "!@#%^*-_=+",
    )
    chars = [secrets.choice(pool) for pool in pools]
    chars += [secrets.choice("".join(pools)) for _ in range(12)]
    secrets.SystemRandom().shuffle(chars)
    return "".join(chars)


def country_name(account: Account) -> str:
    code = str(account.country)
    return COUNTRY_NAMES.get(code) or countries.name(code)


def as_json(demo: DemoData) -> dict[str, Any]:
    """The document of CONTRACT.md, "Demo data"."""
    return {
        "organizations": [
            {
                "id": org.organization.pk,
                "name": org.organization.name,
                "apiUser": org.credential.api_user,
                "apiKey": org.api_key,
                "accounts": [
                    {
                        "id": acc.account.pk,
                        "name": acc.account.name,
                        "timezone": acc.account.timezone,
                        "country": country_name(acc.account),
                        "scoredDataKey": acc.scored_data_key,
                        "vendorId": acc.vendor_id,
                        "vendorName": acc.vendor_name,
                        "teams": [
                            {"id": team.pk, "name": team.name}
                            for team in acc.teams.values()
                        ],
                    }
                    for acc in org.accounts
                ],
            }
            for org in demo.organizations
        ]
    }


def shell_variables(demo: DemoData) -> dict[str, str]:
    """What the README's commands read: the first organization's credential, its first
    account with that account's scored-data key and vendor, and the account's first agent."""
    org = demo.organizations[0]
    acc = org.accounts[0]
    return {
        "ORGANIZATION_ID": str(org.organization.pk),
        "API_USER": org.credential.api_user,
        "API_KEY": org.api_key,
        "ACCOUNT_ID": str(acc.account.pk),
        "SCORED_DATA_KEY": acc.scored_data_key,
        "VENDOR_ID": acc.vendor_id,
        "AGENT_ID": str(acc.agents[0].pk),
    }


def export_lines(demo: DemoData) -> list[str]:
    """``export NAME=value`` lines for a POSIX shell, values quoted where they need it."""
    return [
        f"export {name}={shlex.quote(value)}"
        for name, value in shell_variables(demo).items()
    ]


def write_env_file(path: Path, demo: DemoData) -> None:
    """The export lines in ``path``, readable by its owner only (it holds live keys), with
    the admin's password: the one this run created, else the one an earlier run wrote."""
    path.parent.mkdir(parents=True, exist_ok=True)
    header = [
        "# Written by `manage.py seed_demo` (make run); the keys change on every run.",
        f"# {demo.organizations[0].organization.name}, {demo.organizations[0].accounts[0].account.name}.",
    ]
    if demo.admin_password:
        admin = [f"export ADMIN_PASSWORD={shlex.quote(demo.admin_password)}"]
    else:
        earlier = path.read_text() if path.exists() else ""
        admin = re.findall(r"^export ADMIN_PASSWORD=.*$", earlier, re.MULTILINE)[-1:]
    if admin:
        header.append(
            f"# The admin's password ({ADMIN_USERNAME!r} at /admin/), set once."
        )
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as file:
        file.write("\n".join([*header, *admin, *export_lines(demo)]) + "\n")
    path.chmod(0o600)  # an existing file keeps its mode through O_CREAT


def sign_in_block(demo: DemoData, *, env_file: Path | None = None) -> list[str]:
    """The passwords set by this run (the admin's, the pages' sign-ins), framed; nothing
    when it set none."""
    lines = []
    if demo.admin_password:
        lines += [
            f"Superuser {ADMIN_USERNAME!r} created; password: {demo.admin_password}",
            "  (sign in at /admin/; shown once"
            + (f", kept in {env_file} as ADMIN_PASSWORD)" if env_file else ")"),
        ]
    lines += demo.sign_ins
    if not lines:
        return []
    rule = "=" * 72
    return [rule, *lines, rule]


def summary(demo: DemoData, *, env_file: Path | None = None) -> str:
    """The same, for people."""
    lines = [
        "Demo data is ready. The keys below are new; keys from earlier runs no longer work.",
        "",
    ]
    for org in demo.organizations:
        lines += [
            f"{org.organization.name} (organization {org.organization.pk})",
            f"  apiuser          {org.credential.api_user}",
            f"  apikey           {org.api_key}",
            f"  scorer           {', '.join(f'{u.get_full_name()} (user {u.pk})' for u in org.scorers)}",
        ]
        for acc in org.accounts:
            account = acc.account
            lines += [
                f"  {account.name} (account {account.pk}; {account.timezone}, {country_name(account)})",
                f"    scored-data key  {acc.scored_data_key}",
                f"    vendor           {acc.vendor_id} ({acc.vendor_name})",
                f"    teams            {', '.join(f'{team.name} ({team.pk})' for team in acc.teams.values())}",
                f"    agents           {', '.join(f'{u.get_full_name()} {u.phone_number} (user {u.pk})' for u in acc.agents)}",
                f"    manager          {', '.join(f'{u.get_full_name()} (user {u.pk})' for u in acc.managers)}",
            ]
        lines.append("")
    lines.append(
        f"Admin: /admin/ as {ADMIN_USERNAME!r} (the password was printed on standard error when it was created"
        + (f"; {env_file} keeps it as ADMIN_PASSWORD)." if env_file else ").")
    )
    first = demo.organizations[0]
    where = f" (or `. {env_file}`)" if env_file else ""
    lines += [
        "",
        f"The README's commands use {first.organization.name} and {first.accounts[0].account.name}; "
        f"paste these lines into your shell first{where}:",
        *export_lines(demo),
    ]
    return "\n".join(lines)
