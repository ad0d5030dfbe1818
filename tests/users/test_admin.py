from datetime import time

import pytest
from django.contrib.auth.models import Group
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.urls import reverse

from accounts.models import Team
from tests.accounts.factories import AccountFactory, OrganizationFactory, TeamFactory
from tests.users.factories import UserFactory
from users.models import Membership, User, UserScheduleDay

pytestmark = pytest.mark.django_db

CHANGELIST = reverse("admin:users_user_changelist")


def change_url(user: User) -> str:
    return reverse("admin:users_user_change", args=[user.pk])


def management(prefix: str, total: int = 0, initial: int = 0) -> dict[str, str]:
    return {
        f"{prefix}-TOTAL_FORMS": str(total),
        f"{prefix}-INITIAL_FORMS": str(initial),
        f"{prefix}-MIN_NUM_FORMS": "0",
        f"{prefix}-MAX_NUM_FORMS": "1000",
    }


def change_data(user: User, **overrides) -> dict:
    """The change form as a browser would post it, without inline rows."""
    data = {
        "username": user.username,
        "first_name": user.first_name,
        "last_name": user.last_name,
        "email": user.email,
        "phone_number": user.phone_number,
        "timezone": user.timezone,
        "country": user.country,
        "accounts": [a.pk for a in user.accounts.all()],
        "teams": [t.pk for t in user.teams.all()],
        "is_active": "on",
        "date_joined_0": "2025-01-01",
        "date_joined_1": "00:00:00",
        **management("memberships"),
        **management("schedule_days"),
    }
    data.update(overrides)
    return data


def build_users(count: int) -> None:
    agent = Group.objects.get(name="Agent")
    for _ in range(count):
        account = AccountFactory()
        TeamFactory(account=account)
        for _ in range(3):
            user = UserFactory(account=account)
            user.groups.add(agent)
            user.teams.set(account.teams.all())


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


def test_change_page_loads_with_memberships_and_schedule(admin_client):
    user = UserFactory()
    UserScheduleDay.objects.create(
        user=user, weekday=0, start_time=time(9), end_time=time(17)
    )

    response = admin_client.get(change_url(user))

    assert response.status_code == 200
    prefixes = {
        f.formset.prefix: f.formset for f in response.context["inline_admin_formsets"]
    }
    assert set(prefixes) == {"memberships", "schedule_days"}
    assert [
        form.initial.get("weekday") for form in prefixes["schedule_days"].extra_forms
    ] == [1, 2, 3, 4, 5, 6]


def test_add_page_loads(admin_client):
    assert admin_client.get(reverse("admin:users_user_add")).status_code == 200


def test_add_creates_user_with_case_sensitive_username(admin_client):
    UserFactory(username="Avery@Example.com", email="Avery@Example.com")

    response = admin_client.post(
        reverse("admin:users_user_add"),
        {
            "username": "avery@example.com",
            "usable_password": "true",
            "password1": "Secret-Pass1",
            "password2": "Secret-Pass1",
        },
    )

    assert response.status_code == 302
    user = User.objects.get(username="avery@example.com")
    assert user.check_password("Secret-Pass1")


def test_add_refuses_exact_duplicate_username_and_simple_password(admin_client):
    UserFactory(username="avery@example.com")

    taken = admin_client.post(
        reverse("admin:users_user_add"),
        {
            "username": "avery@example.com",
            "usable_password": "true",
            "password1": "Secret-Pass1",
            "password2": "Secret-Pass1",
        },
    )
    simple = admin_client.post(
        reverse("admin:users_user_add"),
        {
            "username": "new@example.com",
            "usable_password": "true",
            "password1": "secretpass",
            "password2": "secretpass",
        },
    )

    assert taken.context["adminform"].form.errors["username"] == [
        "The username has already been taken."
    ]
    assert "password2" in simple.context["adminform"].form.errors
    assert (
        User.objects.filter(
            username__in=["avery@example.com", "new@example.com"]
        ).count()
        == 1
    )


def test_change_saves_accounts_teams_schedule_and_normalized_code(admin_client):
    account = AccountFactory()
    sales = TeamFactory(account=account, name="Sales")
    user = UserFactory(account=account)
    membership = user.memberships.get()
    data = change_data(
        user,
        phone_number="+13035550123",
        timezone="America/Chicago",
        teams=[sales.pk],
        schedule_active="true",
        **management("memberships", 1, 1),
        **{"memberships-0-id": membership.pk, "memberships-0-user": user.pk},
        **{
            "memberships-0-organization": account.organization_id,
            "memberships-0-code": "42",
        },
        **management("schedule_days", 1),
        **{"schedule_days-0-weekday": "3", "schedule_days-0-active": "on"},
        **{"schedule_days-0-start_time": "00:00", "schedule_days-0-end_time": "23:59"},
    )

    response = admin_client.post(change_url(user), data)

    assert response.status_code == 302, response.context and response.context["errors"]
    user.refresh_from_db()
    assert (user.phone_number, user.timezone, user.schedule_active) == (
        "+13035550123",
        "America/Chicago",
        True,
    )
    assert list(user.teams.all()) == [sales]
    assert user.memberships.get().code == "0042"
    assert list(
        user.schedule_days.values_list("weekday", "start_time", "end_time")
    ) == [(3, time(0), time(23, 59))]


def test_blank_code_gets_the_next_free_code(admin_client):
    organization = OrganizationFactory()
    account = AccountFactory(organization=organization)
    UserFactory(account=account, account__code="0041")
    user = UserFactory(account=AccountFactory())
    data = change_data(
        user,
        **management("memberships", 2, 1),
        **{
            "memberships-0-id": user.memberships.get().pk,
            "memberships-0-user": user.pk,
        },
        **{
            "memberships-0-organization": user.memberships.get().organization_id,
            "memberships-0-code": "0005",
        },
        **{
            "memberships-1-user": user.pk,
            "memberships-1-organization": organization.pk,
            "memberships-1-code": "",
        },
    )

    response = admin_client.post(change_url(user), data)

    assert response.status_code == 302
    assert Membership.objects.get(user=user, organization=organization).code == "0042"


def test_code_must_be_digits_and_free(admin_client):
    account = AccountFactory()
    UserFactory(account=account, account__code="0007")
    user = UserFactory(account=account)
    membership = user.memberships.get()

    def post(code: str):
        data = change_data(
            user,
            **management("memberships", 1, 1),
            **{"memberships-0-id": membership.pk, "memberships-0-user": user.pk},
            **{
                "memberships-0-organization": account.organization_id,
                "memberships-0-code": code,
            },
        )
        return admin_client.post(change_url(user), data)

    letters = post("12a")
    taken = post("7")

    assert "digits only" in str(
        letters.context["inline_admin_formsets"][0].formset.errors
    )
    assert "already exists" in str(
        taken.context["inline_admin_formsets"][0].formset.errors
    )
    membership.refresh_from_db()
    assert membership.code is None


def test_teams_must_belong_to_the_users_accounts(admin_client):
    account = AccountFactory()
    foreign_team = TeamFactory(name="Elsewhere")
    user = UserFactory(account=account)

    response = admin_client.post(
        change_url(user), change_data(user, teams=[foreign_team.pk])
    )

    assert response.status_code == 200
    assert "Elsewhere" in str(response.context["adminform"].form.errors["teams"])
    assert not user.teams.exists()


def test_account_outside_the_users_organizations_is_saved_with_a_warning(admin_client):
    user = UserFactory(account=AccountFactory())
    foreign = AccountFactory(name="Far Away Motors")

    response = admin_client.post(
        change_url(user),
        change_data(
            user,
            accounts=[foreign.pk],
            **management("memberships", 1, 1),
            **{
                "memberships-0-id": user.memberships.get().pk,
                "memberships-0-user": user.pk,
            },
            **{
                "memberships-0-organization": user.memberships.get().organization_id,
                "memberships-0-code": "1",
            },
        ),
        follow=True,
    )

    assert "Far Away Motors" in response.content.decode()
    assert "is not a member of that organization" in response.content.decode()


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


def test_teams_are_labelled_with_their_account(admin_client):
    account = AccountFactory(name="Demo Motors North")
    TeamFactory(account=account, name="Sales")
    user = UserFactory(account=account)

    page = admin_client.get(change_url(user)).content.decode()

    assert "Demo Motors North / Sales" in page
    assert Team.objects.count() == 1
