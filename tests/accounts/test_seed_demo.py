import json
import re
from datetime import UTC, datetime, timedelta
from io import StringIO

import phonenumbers
import pytest
from django.core.management import call_command

from accounts.models import Account, ApiCredential, Organization, Team
from accounts.schedules import is_open
from accounts.selectors import (
    account_for_scored_data_key,
    api_credential_for_key,
    credential_account_ids,
)
from users.models import Membership, User

pytestmark = pytest.mark.django_db

SPECIAL_ENDINGS = ("0000", "0001", "0002", "0003")
EXPECTED = {
    "Demo Motors Group": {
        "Demo Motors North": ("America/Denver", "DMN-1001"),
        "Demo Motors South": ("America/Chicago", "DMS-1002"),
    },
    "Lakeside Auto Group": {"Lakeside Ford": ("America/New_York", "LSF-2001")},
}


def seed(*args: str) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command("seed_demo", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def seed_json() -> tuple[dict, str]:
    out, err = seed("--json")
    return json.loads(out), err


def counts() -> dict[str, int]:
    return {
        model.__name__: model.objects.count()
        for model in (Organization, Account, Team, ApiCredential, User, Membership)
    }


def test_json_document_has_the_contracts_shape_and_nothing_else_on_stdout():
    out, _ = seed("--json")

    document = json.loads(out)  # fails on anything but one JSON document
    assert list(document) == ["organizations"]
    assert {
        org["name"]: {acc["name"] for acc in org["accounts"]}
        for org in document["organizations"]
    } == {name: set(accounts) for name, accounts in EXPECTED.items()}
    for org in document["organizations"]:
        assert set(org) == {"id", "name", "apiUser", "apiKey", "accounts"}
        organization = Organization.objects.get(pk=org["id"], name=org["name"])
        credential = api_credential_for_key(key=org["apiKey"], api_user=org["apiUser"])
        assert credential is not None
        assert credential.organization == organization
        assert credential_account_ids(credential=credential) == {
            acc["id"] for acc in org["accounts"]
        }
        for acc in org["accounts"]:
            assert set(acc) == {
                "id",
                "name",
                "timezone",
                "country",
                "scoredDataKey",
                "vendorId",
                "vendorName",
                "teams",
            }
            account = Account.objects.get(pk=acc["id"], organization=organization)
            timezone_name, vendor_id = EXPECTED[org["name"]][acc["name"]]
            assert (acc["timezone"], acc["country"], account.country_code) == (
                timezone_name,
                "United States",
                "US",
            )
            assert (acc["vendorId"], acc["vendorName"]) == (vendor_id, acc["name"])
            assert account_for_scored_data_key(key=acc["scoredDataKey"]) == account
            assert [team["name"] for team in acc["teams"]] == ["Sales", "Service"]
            assert {team["id"] for team in acc["teams"]} == set(
                account.teams.values_list("pk", flat=True)
            )


def test_accounts_have_address_caller_id_and_an_always_open_schedule():
    seed()

    for account in Account.objects.all():
        assert account.address
        assert account.city
        assert account.postal_code
        assert phonenumbers.is_valid_number(phonenumbers.parse(account.caller_id))
        assert account.schedule_active is True
        assert sorted(account.schedule_days.values_list("weekday", flat=True)) == list(
            range(7)
        )
        assert all_hours_open(
            account.schedule_active, list(account.schedule_days.all()), account.timezone
        )


def all_hours_open(active, days, tz) -> bool:
    """Open at the start and in the last minutes of every hour of a whole week."""
    start = datetime(
        2025, 3, 3, tzinfo=UTC
    )  # spans nothing special; every local weekday is covered
    instants = [
        start + timedelta(hours=h, minutes=m) for h in range(24 * 8) for m in (0, 59)
    ]
    return all(is_open(active=active, days=days, tz=tz, at=at) for at in instants)


def test_every_account_has_three_agents_and_a_manager_made_by_the_user_service():
    seed()

    for account in Account.objects.all():
        agents = account.users.filter(groups__name="Agent")
        managers = account.users.filter(groups__name="Manager")
        assert agents.count() >= 3
        assert managers.count() >= 1
        for user in agents:
            number = phonenumbers.parse(user.phone_number)
            assert phonenumbers.is_valid_number(number)
            assert (
                phonenumbers.format_number(number, phonenumbers.PhoneNumberFormat.E164)
                == user.phone_number
            )
            assert not user.phone_number.endswith(SPECIAL_ENDINGS)
            assert user.timezone == account.timezone
            assert set(user.teams.all()) == set(account.teams.all())
            assert all_hours_open(
                user.schedule_active, list(user.schedule_days.all()), user.timezone
            )
        for user in [*agents, *managers]:
            membership = user.memberships.get()
            assert membership.organization == account.organization
            assert membership.code is not None
            assert re.fullmatch(r"\d{4}", membership.code)
    assert (
        User.objects.exclude(phone_number="").values("phone_number").distinct().count()
        == 9
    )


def test_superuser_is_created_once_and_its_password_printed_on_stderr_only():
    out, err = seed()

    match = re.search(r"Superuser 'admin' created; password: (\S+)", err)
    assert match
    password = match.group(1)
    assert password not in out
    admin = User.objects.get(username="admin")
    assert admin.is_superuser
    assert admin.is_staff
    assert admin.check_password(password)

    _, again_err = seed()

    assert "password" not in again_err
    admin.refresh_from_db()
    assert admin.check_password(password)


def test_second_run_changes_no_counts_and_only_new_keys_work():
    first, _ = seed_json()
    before = counts()

    second, err = seed_json()

    assert counts() == before
    assert before["Organization"] == 2
    assert before["Account"] == 3
    assert before["Team"] == 6
    assert "password" not in err
    for org_first, org_second in zip(
        first["organizations"], second["organizations"], strict=True
    ):
        assert org_first["id"] == org_second["id"]
        assert org_first["apiUser"] == org_second["apiUser"]
        assert org_first["apiKey"] != org_second["apiKey"]
        assert api_credential_for_key(key=org_first["apiKey"]) is None
        assert (
            api_credential_for_key(
                key=org_second["apiKey"], api_user=org_second["apiUser"]
            )
            is not None
        )
        for acc_first, acc_second in zip(
            org_first["accounts"], org_second["accounts"], strict=True
        ):
            assert (acc_first["id"], acc_first["teams"]) == (
                acc_second["id"],
                acc_second["teams"],
            )
            assert account_for_scored_data_key(key=acc_first["scoredDataKey"]) is None
            assert (
                account_for_scored_data_key(key=acc_second["scoredDataKey"]) is not None
            )


def test_existing_users_are_left_as_they_are():
    seed()
    user = User.objects.get(username="avery.lopez@north.demo-motors.example")
    User.objects.filter(pk=user.pk).update(
        first_name="Changed", phone_number="+13035550199"
    )

    seed()

    user.refresh_from_db()
    assert (user.first_name, user.phone_number) == ("Changed", "+13035550199")
    assert (
        User.objects.filter(email="avery.lopez@north.demo-motors.example").count() == 1
    )


def test_summary_lists_keys_and_the_vendor_ids():
    out, _ = seed()

    for name in [
        "Demo Motors Group",
        "Demo Motors North",
        "Demo Motors South",
        "Lakeside Auto Group",
        "Lakeside Ford",
    ]:
        assert name in out
    for vendor_id in ["DMN-1001", "DMS-1002", "LSF-2001"]:
        assert vendor_id in out
    keys = re.findall(r"(?:apikey|scored-data key)\s+(\S+)", out)
    assert len(keys) == 5
    assert all(
        api_credential_for_key(key=key) or account_for_scored_data_key(key=key)
        for key in keys
    )


def record_step(demo) -> None:
    """A later app's seed step, as SEED_STEPS names them."""
    demo.log(
        f"step saw {sum(len(org.accounts) for org in demo.organizations)} accounts"
    )
    for org in demo.organizations:
        for acc in org.accounts:
            assert acc.account.pk
            assert len(acc.agents) == 3
            assert acc.teams["Service"].pk
            acc.vendor_id = f"step-{acc.vendor_id}"


def test_later_apps_add_steps_that_see_the_demo_and_shape_the_output(monkeypatch):
    from demo.management.commands import seed_demo as command

    monkeypatch.setattr(
        command, "SEED_STEPS", ["tests.accounts.test_seed_demo.record_step"]
    )

    document, err = seed_json()

    assert "step saw 3 accounts" in err
    vendor_ids = [
        acc["vendorId"] for org in document["organizations"] for acc in org["accounts"]
    ]
    assert vendor_ids == ["step-DMN-1001", "step-DMS-1002", "step-LSF-2001"]


class Terminal(StringIO):
    def isatty(self) -> bool:
        return True


def test_ordinary_lines_are_written_plain_even_on_a_terminal():
    from demo.management.commands.seed_demo import Command

    out, err = Terminal(), Terminal()
    command = Command(stdout=out, stderr=err, force_color=True)
    # Django styles this terminal's standard error as an error (red): the seed must not.
    assert command.stderr.style_func("x") != "x"

    call_command(command)

    assert "Superuser 'admin' created; password: " in err.getvalue()
    assert "Demo Motors North: vendor DMN-1001" in err.getvalue()  # a progress line
    assert "\x1b[" not in err.getvalue()
    assert "\x1b[" not in out.getvalue()


def shell_values(script: str) -> dict[str, str]:
    """What a POSIX shell holds after running ``script``: the demo's variables."""
    import subprocess

    names = [
        "ORGANIZATION_ID",
        "API_USER",
        "API_KEY",
        "ACCOUNT_ID",
        "SCORED_DATA_KEY",
        "VENDOR_ID",
        "AGENT_ID",
    ]
    shown = subprocess.run(
        ["sh", "-c", script + "\n" + "".join(f'echo "${name}"\n' for name in names)],
        env={"PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    return dict(zip(names, shown, strict=True))


def assert_first_account_values(values: dict[str, str]) -> None:
    organization = Organization.objects.get(name="Demo Motors Group")
    account = Account.objects.get(name="Demo Motors North")
    agent = User.objects.get(username="avery.lopez@north.demo-motors.example")
    assert values["ORGANIZATION_ID"] == str(organization.pk)
    assert values["ACCOUNT_ID"] == str(account.pk)
    assert values["VENDOR_ID"] == "DMN-1001"
    assert values["AGENT_ID"] == str(agent.pk)
    assert values["API_USER"] == "demo-motors-group"
    credential = api_credential_for_key(
        key=values["API_KEY"], api_user="demo-motors-group"
    )
    assert credential is not None
    assert credential.organization == organization
    assert account_for_scored_data_key(key=values["SCORED_DATA_KEY"]) == account


def test_summary_ends_with_export_lines_for_the_readme():
    out, _ = seed()

    exports = out[out.index("paste these lines") :].splitlines()[1:]
    assert exports
    assert all(line.startswith("export ") for line in exports)
    assert_first_account_values(shell_values("\n".join(exports)))


def test_env_file_holds_the_export_lines_for_its_owner_only(tmp_path):
    path = tmp_path / "var" / "demo.env"

    out, _ = seed("--json", "--env-file", str(path))

    json.loads(out)  # still nothing but the document on standard output
    assert path.stat().st_mode & 0o777 == 0o600
    assert_first_account_values(shell_values(f". {path}"))

    seed("--env-file", str(path))  # a second run rewrites it with the new keys

    assert_first_account_values(shell_values(f". {path}"))


def test_the_passwords_come_last_framed_and_the_admins_stays_in_the_env_file(tmp_path):
    path = tmp_path / "var" / "demo.env"

    out, err = seed("--env-file", str(path))

    lines = err.rstrip("\n").splitlines()
    rule = "=" * 72
    # The block closes the output: no progress line scrolls it away.
    assert lines[-1] == rule
    block = lines[lines.index(rule) + 1 : -1]
    match = re.fullmatch(r"Superuser 'admin' created; password: (\S+)", block[0])
    assert match
    password = match.group(1)
    assert f"kept in {path} as ADMIN_PASSWORD" in block[1]
    assert block[2].startswith("Pages: sign in at /login/ (password ")
    assert password not in out
    assert admin_password_in(path) == password

    _, again = seed("--env-file", str(path))  # nothing new to show: no block

    assert rule not in again
    assert admin_password_in(path) == password
    assert User.objects.get(username="admin").check_password(password)


def admin_password_in(path) -> str:
    """ADMIN_PASSWORD as a POSIX shell holds it after sourcing the env file."""
    import subprocess

    return subprocess.run(
        ["sh", "-c", f'. "{path}"; printf %s "$ADMIN_PASSWORD"'],
        env={"PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=True,
    ).stdout
