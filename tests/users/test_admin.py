"""The users admin, through its pages: GET a page, post its form as a browser would (see
tests/admin_pages.py), then check what was stored and what support was told."""

from datetime import time

import pytest
from django.contrib.auth.models import Group
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.urls import reverse

from accounts.forms import BLANK_TIMES
from accounts.models import Team
from tests.accounts.factories import AccountFactory, OrganizationFactory, TeamFactory
from tests.admin_pages import form_data, sign_in_support, text_of, typed
from tests.users.factories import UserFactory
from users.models import Membership, User, UserScheduleDay

pytestmark = pytest.mark.django_db

CHANGELIST = reverse("admin:users_user_changelist")
ADD = reverse("admin:users_user_add")
FORM = "user_form"


def change_url(user: User) -> str:
    return reverse("admin:users_user_change", args=[user.pk])


def errors_of(response) -> dict:
    return response.context["adminform"].form.errors


def formset(response, prefix: str):
    return next(
        f.formset
        for f in response.context["inline_admin_formsets"]
        if f.formset.prefix == prefix
    )


def page_and_form(client, url: str):
    page = client.get(url)
    assert page.status_code == 200
    return page, form_data(page, FORM)


def build_users(count: int) -> None:
    agent = Group.objects.get(name="Agent")
    for _ in range(count):
        account = AccountFactory()
        TeamFactory(account=account)
        for _ in range(3):
            user = UserFactory(account=account)
            user.groups.add(agent)
            user.teams.set(account.teams.all())


# --- the list


def test_changelist_loads_in_a_fixed_number_of_queries(
    admin_client, django_assert_max_num_queries
):
    build_users(6)

    with django_assert_max_num_queries(13):
        response = admin_client.get(CHANGELIST)

    assert response.status_code == 200
    assert response.context["cl"].result_count == 19  # with the admin


def test_changelist_shows_organizations_codes_accounts_and_template(admin_client):
    organization = OrganizationFactory(name="Demo Motors Group")
    account = AccountFactory(organization=organization, name="Demo Motors North")
    user = UserFactory(
        account=account,
        first_name="Avery",
        last_name="Lopez",
        phone_number="+13035550101",
        account__code="0007",
    )
    user.groups.add(Group.objects.get(name="Manager"))

    page = admin_client.get(CHANGELIST).content.decode()

    for text in [
        "Avery Lopez",
        "+13035550101",
        "Demo Motors Group #0007",
        "Demo Motors North",
        "Manager",
    ]:
        assert text in page


@pytest.mark.parametrize(
    ("query", "found"),
    [
        ("+13035550101", True),
        ("avery", True),
        ("LOPEZ", True),
        ("0007", True),
        ("avery.lopez@example.com", True),
        ("nobody", False),
    ],
)
def test_search_by_name_email_phone_username_and_code(admin_client, query, found):
    account = AccountFactory()
    user = UserFactory(
        account=account,
        account__code="0007",
        first_name="Avery",
        last_name="Lopez",
        email="avery.lopez@example.com",
        phone_number="+13035550101",
    )
    UserFactory(account=account, first_name="Other", last_name="Person")

    response = admin_client.get(CHANGELIST, {"q": query})

    assert list(response.context["cl"].result_list) == ([user] if found else [])


def test_filters_by_organization_account_and_permission_template(admin_client):
    account = AccountFactory()
    other_account = AccountFactory()
    manager = UserFactory(account=account)
    manager.groups.add(Group.objects.get(name="Manager"))
    agent = UserFactory(account=other_account)

    by_org = admin_client.get(
        CHANGELIST, {"organizations__id__exact": account.organization_id}
    )
    by_account = admin_client.get(CHANGELIST, {"accounts__id__exact": other_account.pk})
    by_group = admin_client.get(
        CHANGELIST, {"groups__id__exact": Group.objects.get(name="Manager").pk}
    )

    assert list(by_org.context["cl"].result_list) == [manager]
    assert list(by_account.context["cl"].result_list) == [agent]
    assert list(by_group.context["cl"].result_list) == [manager]
    assert "permission template" in by_group.content.decode()


# --- adding an agent


def agent_add_form(client, **fields) -> dict:
    """The add page's form as a browser posts it, with ``fields`` typed or chosen."""
    _, data = page_and_form(client, ADD)
    lists = {k: v for k, v in fields.items() if isinstance(v, list)}
    data = typed(data, {k: v for k, v in fields.items() if not isinstance(v, list)})
    data.update({k: [str(x) for x in v] for k, v in lists.items()})
    return data


def test_add_page_asks_what_an_agent_needs_and_no_django_internals(client):
    sign_in_support(client)

    page = client.get(ADD)

    form = page.context["adminform"].form
    assert set(form.fields) == {
        "first_name",
        "last_name",
        "email",
        "phone_number",
        "accounts",
        "teams",
        "permission_template",
        "schedule",
        "username",
        "password1",
        "password2",
    }
    assert [name for name, _ in form.fields["permission_template"].choices] == list(
        Group.objects.order_by("name").values_list("name", flat=True)
    )
    assert form.fields["permission_template"].initial == "Agent"
    text = text_of(page)
    assert "Accounts, teams and permission template" in text
    assert "A copy of the first account's schedule" in text


def test_add_agent_creates_member_with_code_teams_template_and_the_accounts_schedule(
    client,
):
    sign_in_support(client)
    organization = OrganizationFactory(name="Demo Motors Group")
    account = AccountFactory(
        organization=organization, country="US", timezone="America/Chicago"
    )
    sales = TeamFactory(account=account, name="Sales")
    service = TeamFactory(account=account, name="Service")
    UserFactory(account=account, account__code="0041")

    response = client.post(
        ADD,
        agent_add_form(
            client,
            first_name="Avery",
            last_name="Lopez",
            email="avery@example.com",
            phone_number="(303) 555-0142",
            accounts=[account.pk],
            permission_template="Manager",
        ),
    )

    assert response.status_code == 302, errors_of(response)
    user = User.objects.get(username="avery@example.com")
    # Saving leads to the agent's page, where the copied schedule can be adjusted.
    assert response["Location"] == change_url(user)
    assert (user.first_name, user.last_name, user.email, user.phone_number) == (
        "Avery",
        "Lopez",
        "avery@example.com",
        "+13035550142",
    )
    assert (user.timezone, user.country) == ("America/Chicago", "United States")
    assert list(user.accounts.all()) == [account]
    assert set(user.teams.all()) == {sales, service}
    assert [g.name for g in user.groups.all()] == ["Manager"]
    assert user.memberships.get().code == "0042"
    assert user.memberships.get().organization == organization
    assert not user.has_usable_password()
    assert not user.is_staff
    assert user.schedule_active is True
    assert list(
        user.schedule_days.values_list("weekday", "active", "start_time", "end_time")
    ) == [(d, d < 5, time(8), time(18)) for d in range(7)]


def test_add_agent_with_chosen_teams_password_and_no_schedule_of_their_own(client):
    sign_in_support(client)
    account = AccountFactory()
    sales = TeamFactory(account=account, name="Sales")
    TeamFactory(account=account, name="Service")

    response = client.post(
        ADD,
        agent_add_form(
            client,
            first_name="Blake",
            last_name="Kim",
            email="blake@example.com",
            username="blake",
            password1="Agent-Pass-9",
            password2="Agent-Pass-9",
            accounts=[account.pk],
            teams=[sales.pk],
            schedule="none",
        ),
    )

    assert response.status_code == 302, errors_of(response)
    user = User.objects.get(username="blake")
    assert user.check_password("Agent-Pass-9")
    assert list(user.teams.all()) == [sales]
    assert [g.name for g in user.groups.all()] == ["Agent"]
    assert user.schedule_active is None
    assert not user.schedule_days.exists()


def test_add_agent_with_accounts_of_two_organizations_joins_both_with_codes(client):
    sign_in_support(client)
    north = AccountFactory(organization=OrganizationFactory(name="A Group"))
    south = AccountFactory(organization=OrganizationFactory(name="B Group"))
    south_sales = TeamFactory(account=south, name="Sales")
    UserFactory(account=south, account__code="0007")

    response = client.post(
        ADD,
        agent_add_form(
            client,
            first_name="Casey",
            last_name="Ng",
            email="casey@example.com",
            accounts=[north.pk, south.pk],
        ),
    )

    assert response.status_code == 302, errors_of(response)
    user = User.objects.get(username="casey@example.com")
    assert set(user.accounts.all()) == {north, south}
    assert list(user.teams.all()) == [south_sales]
    assert {m.organization_id: m.code for m in user.memberships.all()} == {
        north.organization_id: "0001",
        south.organization_id: "0008",
    }


def test_add_agent_refuses_a_taken_username_even_when_it_comes_from_the_email(client):
    sign_in_support(client)
    account = AccountFactory()
    UserFactory(account=account, username="avery@example.com")
    fields = {
        "first_name": "Avery",
        "last_name": "Lopez",
        "accounts": [account.pk],
    }

    defaulted = client.post(
        ADD, agent_add_form(client, email="avery@example.com", **fields)
    )
    chosen = client.post(
        ADD,
        agent_add_form(
            client, email="other@example.com", username="avery@example.com", **fields
        ),
    )
    other_case = client.post(
        ADD, agent_add_form(client, email="Avery@Example.com", **fields)
    )

    assert errors_of(defaulted)["username"] == [
        "The username has already been taken. It is this email address: enter another username."
    ]
    assert errors_of(chosen)["username"] == ["The username has already been taken."]
    # Usernames are compared case-sensitively, as in the User API.
    assert other_case.status_code == 302
    assert User.objects.filter(username="Avery@Example.com").exists()
    assert not User.objects.filter(email="other@example.com").exists()


@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        (
            {"phone_number": "555"},
            "phone_number",
            "“555” is not a phone number. Enter it in E.164 (+13035550100) or as a national "
            "number of United States.",
        ),
        ({"first_name": ""}, "first_name", "This field is required."),
        ({"email": "not-an-email"}, "email", "Enter a valid email address."),
        (
            {"password1": "simplepass", "password2": "simplepass"},
            "password1",
            "The password must contain at least one digit, one lowercase letter, one uppercase "
            "letter and one special character.",
        ),
        (
            {"password1": "Agent-Pass-9", "password2": "Agent-Pass-8"},
            "password2",
            "The two passwords differ.",
        ),
        ({"accounts": []}, "accounts", "This field is required."),
    ],
)
def test_add_agent_refuses_bad_input_on_the_form(client, fields, field, message):
    sign_in_support(client)
    account = AccountFactory()
    values = {
        "first_name": "Avery",
        "last_name": "Lopez",
        "email": "avery@example.com",
        "accounts": [account.pk],
        **fields,
    }

    response = client.post(ADD, agent_add_form(client, **values))

    assert response.status_code == 200
    assert message in errors_of(response)[field]
    assert not User.objects.filter(email="avery@example.com").exists()
    assert (
        not Membership.objects.filter(organization=account.organization)
        .exclude(user__in=User.objects.exclude(email="avery@example.com"))
        .exists()
    )


def test_add_agent_refuses_teams_of_accounts_not_chosen(client):
    sign_in_support(client)
    account = AccountFactory(name="Demo Motors North")
    elsewhere = TeamFactory(
        account=AccountFactory(name="Far Away Motors"), name="Sales"
    )

    response = client.post(
        ADD,
        agent_add_form(
            client,
            first_name="Avery",
            last_name="Lopez",
            email="avery@example.com",
            accounts=[account.pk],
            teams=[elsewhere.pk],
        ),
    )

    assert response.status_code == 200
    assert errors_of(response)["teams"] == [
        "Teams must belong to the chosen accounts; not so: Far Away Motors / Sales."
    ]
    assert not User.objects.filter(email="avery@example.com").exists()


def test_add_agent_losing_a_race_for_the_username_saves_nothing_and_says_so(
    client, monkeypatch
):
    """The form found the username free; another save took it before user_create ran."""
    sign_in_support(client)
    account = AccountFactory()
    data = agent_add_form(
        client,
        first_name="Avery",
        last_name="Lopez",
        email="avery@example.com",
        accounts=[account.pk],
    )
    from users import forms as agent_forms

    real_clean = agent_forms.AgentAddForm.clean

    def clean_then_lose_the_race(form):
        cleaned = real_clean(form)
        User.objects.create(username="avery@example.com")
        return cleaned

    monkeypatch.setattr(agent_forms.AgentAddForm, "clean", clean_then_lose_the_race)

    response = client.post(ADD, data, follow=True)

    assert response.status_code == 200
    assert "Nothing was saved: The username has already been taken." in text_of(
        response
    )
    assert not Membership.objects.filter(organization=account.organization).exists()
    assert not User.objects.filter(username="avery@example.com").exists()


# --- an agent's page


def test_change_page_shows_agent_fields_first_and_no_django_internals_to_staff(client):
    sign_in_support(client)
    user = UserFactory()

    page = client.get(change_url(user))

    assert page.status_code == 200
    assert [name for name, _ in page.context["adminform"].fieldsets] == [
        "Agent",
        "Contact",
        "Accounts, teams and permission template",
        "Profile",
        "Schedule",
    ]
    form = page.context["adminform"].form
    for internal in (
        "username",
        "is_staff",
        "is_superuser",
        "groups",
        "user_permissions",
    ):
        assert internal not in form.fields
    assert [f.formset.prefix for f in page.context["inline_admin_formsets"]] == [
        "schedule_days",
        "memberships",
    ]
    assert "Sign-in and Django permissions" not in text_of(page)


def test_superusers_see_django_internals_collapsed_after_the_agent(admin_client):
    user = UserFactory()

    page = admin_client.get(change_url(user))

    names = [name for name, _ in page.context["adminform"].fieldsets]
    assert names[-1] == "Sign-in and Django permissions (superusers only)"
    html = page.content.decode()
    internals = html.index("Sign-in and Django permissions")
    assert html.index("Accounts, teams and permission template") < internals
    assert html.index('id="schedule_days-group"') < internals
    assert html.index('id="memberships-group"') < internals
    assert "collapse" in page.context["adminform"].fieldsets[-1][1]["classes"]


def test_staff_cannot_make_anyone_a_superuser(client):
    sign_in_support(client)
    user = UserFactory()
    _, data = page_and_form(client, change_url(user))

    response = client.post(
        change_url(user),
        typed(data, {"is_superuser": "on", "is_staff": "on", "username": "hijacked"}),
    )

    assert response.status_code == 302
    user.refresh_from_db()
    assert (user.is_superuser, user.is_staff) == (False, False)
    assert user.username != "hijacked"


def test_saving_an_agent_unchanged_changes_nothing(client):
    sign_in_support(client)
    account = AccountFactory()
    sales = TeamFactory(account=account, name="Sales")
    user = UserFactory(account=account, account__code="0005")
    user.teams.set([sales])
    user.groups.set([Group.objects.get(name="Manager")])
    UserScheduleDay.objects.bulk_create(
        UserScheduleDay(user=user, weekday=d, start_time=time(7), end_time=time(15))
        for d in range(7)
    )
    user.schedule_active = True
    user.save(update_fields=["schedule_active"])
    _, data = page_and_form(client, change_url(user))

    response = client.post(change_url(user), data)

    assert response.status_code == 302, errors_of(response)
    user.refresh_from_db()
    assert list(user.accounts.all()) == [account]
    assert list(user.teams.all()) == [sales]
    assert [g.name for g in user.groups.all()] == ["Manager"]
    assert [m.code for m in user.memberships.all()] == ["0005"]
    assert user.schedule_days.count() == 7
    assert user.schedule_active is True


def test_assigning_an_account_of_another_organization_makes_the_agent_a_member(client):
    sign_in_support(client)
    home = AccountFactory(organization=OrganizationFactory(name="A Group"))
    user = UserFactory(account=home, account__code="0003")
    far = AccountFactory(
        organization=OrganizationFactory(name="B Group"), name="Far Away Motors"
    )
    far_sales = TeamFactory(account=far, name="Sales")
    UserFactory(account=far, account__code="0019")
    _, data = page_and_form(client, change_url(user))
    data["accounts"] = [str(home.pk), str(far.pk)]
    data["teams"] = [str(far_sales.pk)]

    response = client.post(change_url(user), data, follow=True)

    assert response.status_code == 200
    assert "was changed successfully" in text_of(response)
    assert "not a member" not in text_of(response)
    assert set(user.accounts.all()) == {home, far}
    assert list(user.teams.all()) == [far_sales]
    assert {m.organization_id: m.code for m in user.memberships.all()} == {
        home.organization_id: "0003",
        far.organization_id: "0020",
    }


def test_changing_one_organizations_accounts_keeps_the_other_organizations(client):
    sign_in_support(client)
    north = AccountFactory(organization=OrganizationFactory(name="A Group"))
    north_two = AccountFactory(organization=north.organization)
    south = AccountFactory(organization=OrganizationFactory(name="B Group"))
    south_sales = TeamFactory(account=south, name="Sales")
    user = UserFactory(account=north)
    user.accounts.add(south)
    user.teams.add(south_sales)
    Membership.objects.create(user=user, organization=south.organization, code="0009")
    _, data = page_and_form(client, change_url(user))
    data["accounts"] = [str(north_two.pk), str(south.pk)]

    response = client.post(change_url(user), data)

    assert response.status_code == 302, errors_of(response)
    assert set(user.accounts.all()) == {north_two, south}
    assert list(user.teams.all()) == [south_sales]
    assert user.memberships.count() == 2


def test_a_user_api_update_from_one_organization_keeps_the_users_other_organization(
    tenant, other_tenant
):
    """The service user_update replaces only the calling organization's accounts and teams."""
    user = UserFactory(account=tenant.account)
    user.accounts.add(other_tenant.account)
    user.teams.set([tenant.teams[0], other_tenant.teams[0]])
    Membership.objects.create(user=user, organization=other_tenant.organization)

    response = tenant.client().put(
        f"/api/users/{user.pk}",
        {"accountIds": [tenant.other_account.pk]},
        format="json",
    )

    assert response.status_code == 200, response.content
    assert set(user.accounts.all()) == {tenant.other_account, other_tenant.account}
    assert set(user.teams.all()) == {other_tenant.teams[0]}


def test_change_reads_a_national_phone_in_the_first_accounts_country(client):
    sign_in_support(client)
    user = UserFactory(account=AccountFactory(country="GB", timezone="Europe/London"))
    _, data = page_and_form(client, change_url(user))

    saved = client.post(
        change_url(user), typed(data, {"phone_number": "020 7946 0958"})
    )
    user.refresh_from_db()
    stored = user.phone_number
    refused = client.post(change_url(user), typed(data, {"phone_number": "call me"}))

    assert saved.status_code == 302, errors_of(saved)
    assert stored == "+442079460958"
    assert errors_of(refused)["phone_number"] == [
        "“call me” is not a phone number. Enter it in E.164 (+13035550100) or as a national "
        "number of United Kingdom."
    ]
    user.refresh_from_db()
    assert user.phone_number == "+442079460958"


def test_change_sets_the_permission_template_through_the_service(client):
    sign_in_support(client)
    user = UserFactory()
    user.groups.set([Group.objects.get(name="Agent")])
    _, data = page_and_form(client, change_url(user))

    response = client.post(
        change_url(user), typed(data, {"permission_template": "Global Manager"})
    )

    assert response.status_code == 302, errors_of(response)
    assert [g.name for g in user.groups.all()] == ["Global Manager"]


def test_superuser_cannot_change_template_and_groups_at_once(admin_client):
    user = UserFactory()
    user.groups.set([Group.objects.get(name="Agent")])
    _, data = page_and_form(admin_client, change_url(user))
    data = typed(data, {"permission_template": "Manager"})
    data["groups"] = [str(Group.objects.get(name="Global Manager").pk)]

    response = admin_client.post(change_url(user), data)

    assert response.status_code == 200
    assert errors_of(response)["permission_template"] == [
        "You changed both the permission template and the groups: change one of them."
    ]
    assert [g.name for g in user.groups.all()] == ["Agent"]


def test_superuser_can_still_change_username_and_staff_flags(admin_client):
    user = UserFactory()
    _, data = page_and_form(admin_client, change_url(user))

    response = admin_client.post(
        change_url(user), typed(data, {"username": "renamed", "is_staff": "on"})
    )

    assert response.status_code == 302, errors_of(response)
    user.refresh_from_db()
    assert (user.username, user.is_staff) == ("renamed", True)


def test_a_user_in_no_organization_is_edited_too(client):
    """Support staff are users in no organization: their page saves like an agent's."""
    sign_in_support(client)
    staff = User.objects.create_user(username="helper", is_staff=True)
    _, data = page_and_form(client, change_url(staff))

    response = client.post(
        change_url(staff),
        typed(
            data,
            {
                "first_name": "Hana",
                "phone_number": "+13035550177",
                "permission_template": "Manager",
            },
        ),
    )

    assert response.status_code == 302, errors_of(response)
    staff.refresh_from_db()
    assert (staff.first_name, staff.phone_number, staff.is_staff) == (
        "Hana",
        "+13035550177",
        True,
    )
    assert [g.name for g in staff.groups.all()] == ["Manager"]
    assert not staff.memberships.exists()


def test_change_teams_must_belong_to_the_agents_accounts(client):
    sign_in_support(client)
    user = UserFactory(account=AccountFactory())
    foreign_team = TeamFactory(name="Elsewhere")
    _, data = page_and_form(client, change_url(user))
    data["teams"] = [str(foreign_team.pk)]

    response = client.post(change_url(user), data)

    assert response.status_code == 200
    assert "Elsewhere" in str(errors_of(response)["teams"])
    assert not user.teams.exists()


def test_teams_are_labelled_with_their_account(client):
    sign_in_support(client)
    account = AccountFactory(name="Demo Motors North")
    TeamFactory(account=account, name="Sales")
    user = UserFactory(account=account)

    page = client.get(change_url(user)).content.decode()

    assert "Demo Motors North / Sales" in page
    assert Team.objects.count() == 1


# --- memberships and codes


def test_blank_code_gets_the_next_free_code(client):
    sign_in_support(client)
    organization = OrganizationFactory()
    UserFactory(account=AccountFactory(organization=organization), account__code="0041")
    user = UserFactory(account=AccountFactory())
    _, data = page_and_form(client, change_url(user))
    data = typed(
        data,
        {
            "memberships-TOTAL_FORMS": "2",
            "memberships-1-user": str(user.pk),
            "memberships-1-organization": str(organization.pk),
            "memberships-1-code": "",
        },
    )

    response = client.post(change_url(user), data)

    assert response.status_code == 302, errors_of(response)
    assert Membership.objects.get(user=user, organization=organization).code == "0042"


def test_code_is_stored_zero_padded(client):
    sign_in_support(client)
    user = UserFactory()
    _, data = page_and_form(client, change_url(user))

    response = client.post(change_url(user), typed(data, {"memberships-0-code": "42"}))

    assert response.status_code == 302, errors_of(response)
    assert user.memberships.get().code == "0042"


def test_code_must_be_digits_and_free(client):
    sign_in_support(client)
    account = AccountFactory()
    UserFactory(account=account, account__code="0007")
    user = UserFactory(account=account)
    _, data = page_and_form(client, change_url(user))

    letters = client.post(change_url(user), typed(data, {"memberships-0-code": "12a"}))
    taken = client.post(change_url(user), typed(data, {"memberships-0-code": "7"}))

    assert "digits only" in str(formset(letters, "memberships").errors)
    assert "already exists" in str(formset(taken, "memberships").errors)
    assert user.memberships.get().code is None


def test_leaving_an_organization_while_keeping_its_accounts_is_refused(client):
    sign_in_support(client)
    account = AccountFactory(name="Demo Motors North")
    user = UserFactory(account=account)
    _, data = page_and_form(client, change_url(user))

    response = client.post(
        change_url(user), typed(data, {"memberships-0-DELETE": "on"})
    )

    assert response.status_code == 200
    assert formset(response, "memberships").non_form_errors() == [
        "To take the agent out of an organization, also remove its accounts there: "
        f"{account.organization.name} / Demo Motors North."
    ]
    assert user.memberships.exists()


def test_leaving_an_organization_with_its_accounts(client):
    sign_in_support(client)
    user = UserFactory(account=AccountFactory())
    _, data = page_and_form(client, change_url(user))
    data = typed(data, {"memberships-0-DELETE": "on", "accounts": None, "teams": None})

    response = client.post(change_url(user), data)

    assert response.status_code == 302, errors_of(response)
    assert not user.memberships.exists()
    assert not user.accounts.exists()


# --- the user's weekly schedule


def test_user_schedule_is_offered_as_a_week_at_default_hours_and_stored_as_shown(
    client,
):
    sign_in_support(client)
    user = UserFactory()
    page, data = page_and_form(client, change_url(user))

    rows = formset(page, "schedule_days").extra_forms
    response = client.post(change_url(user), typed(data, {"schedule_active": "true"}))

    assert [(f.initial["weekday"], f.initial["active"]) for f in rows] == [
        (d, True) for d in range(7)
    ]
    assert response.status_code == 302, errors_of(response)
    user.refresh_from_db()
    assert user.schedule_active is True
    assert list(
        user.schedule_days.values_list("weekday", "active", "start_time", "end_time")
    ) == [(d, True, time(9), time(17)) for d in range(7)]


def test_user_schedule_refuses_a_ticked_day_left_without_times(client):
    sign_in_support(client)
    user = UserFactory()
    _, data = page_and_form(client, change_url(user))

    response = client.post(
        change_url(user),
        typed(
            data,
            {"schedule_days-2-start_time": "", "schedule_days-2-end_time": ""},
        ),
    )

    assert response.status_code == 200
    errors = formset(response, "schedule_days").errors
    assert errors[2] == {"__all__": [BLANK_TIMES]}
    assert [e for i, e in enumerate(errors) if i != 2] == [{}] * 6
    assert BLANK_TIMES in text_of(response)
    assert not user.schedule_days.exists()


def test_user_schedule_keeps_missing_days_off_unless_ticked(client):
    sign_in_support(client)
    user = UserFactory()
    UserScheduleDay.objects.bulk_create(
        UserScheduleDay(user=user, weekday=d, start_time=time(8), end_time=time(16))
        for d in range(5)
    )
    page, data = page_and_form(client, change_url(user))

    unchanged = client.post(change_url(user), data)
    weekend_rows = formset(page, "schedule_days").extra_forms
    ticked = client.post(
        change_url(user), typed(data, {"schedule_days-5-active": "on"})
    )

    assert [(f.initial["weekday"], f.initial["active"]) for f in weekend_rows] == [
        (5, False),
        (6, False),
    ]
    assert unchanged.status_code == 302
    assert ticked.status_code == 302, errors_of(ticked)
    assert list(
        user.schedule_days.values_list("weekday", "active", "start_time", "end_time")
    ) == [
        *[(d, True, time(8), time(16)) for d in range(5)],
        (5, True, time(9), time(17)),
    ]


# --- deleting


def test_delete_goes_through_user_delete_and_removes_the_picture(
    admin_client, django_capture_on_commit_callbacks
):
    user = UserFactory()
    name = default_storage.save(
        "profile-pictures/admin-delete-test.png", ContentFile(b"png")
    )
    User.objects.filter(pk=user.pk).update(profile_picture=name)

    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post(
            reverse("admin:users_user_delete", args=[user.pk]), {"post": "yes"}
        )

    assert response.status_code == 302
    assert not User.objects.filter(pk=user.pk).exists()
    assert not Membership.objects.filter(user_id=user.pk).exists()
    assert not default_storage.exists(name)


def test_bulk_delete_action_deletes_each_user(
    admin_client, django_capture_on_commit_callbacks
):
    users = [UserFactory(), UserFactory()]

    with django_capture_on_commit_callbacks(execute=True):
        admin_client.post(
            CHANGELIST,
            {
                "action": "delete_selected",
                "_selected_action": [u.pk for u in users],
                "post": "yes",
            },
        )

    assert not User.objects.filter(pk__in=[u.pk for u in users]).exists()
