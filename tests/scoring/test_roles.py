"""Roles come from permissions, held through a permission template or directly: a
template's name does not matter."""

import pytest
from django.contrib.auth.models import Group, Permission

from scoring.selectors import (
    Roles,
    accounts_coachable_by,
    accounts_scorable_by,
    roles_of,
    users_filterable_by,
)
from tests.accounts.factories import AccountFactory
from tests.scoring.factories import in_role
from tests.users.factories import UserFactory

pytestmark = pytest.mark.django_db


def permission(codename: str) -> Permission:
    return Permission.objects.get(content_type__app_label="scoring", codename=codename)


def test_each_permission_template_holds_its_role():
    held = {
        group.name: sorted(
            p.codename
            for p in group.permissions.filter(content_type__app_label="scoring")
        )
        for group in Group.objects.filter(
            name__in=["Agent", "Scorer", "Manager", "Global Manager"]
        )
    }
    assert held == {
        "Agent": ["take_calls"],
        "Scorer": ["score_calls"],
        "Manager": ["coach_account_calls"],
        "Global Manager": ["coach_organization_calls"],
    }


def test_renaming_the_manager_template_keeps_a_managers_access():
    account = AccountFactory()
    manager = in_role("Manager", accounts=[account])
    Group.objects.filter(name="Manager").update(name="Store Manager")
    manager.refresh_from_db()
    assert roles_of(manager).manager
    assert list(accounts_coachable_by(manager)) == [account]


def test_renaming_the_agent_template_keeps_agents_in_the_filter():
    account = AccountFactory()
    agent = in_role("Agent", accounts=[account])
    manager = in_role("Manager", accounts=[account])
    Group.objects.filter(name="Agent").update(name="Sales Agent")
    assert list(users_filterable_by(manager)) == [agent]


def test_a_permission_given_directly_grants_the_role():
    account = AccountFactory()
    user = UserFactory(account=account)
    user.groups.clear()
    user.user_permissions.add(permission("score_calls"))
    assert roles_of(user).scorer
    assert not roles_of(user).manager
    assert list(accounts_scorable_by(user)) == [account]


def test_a_group_without_the_permission_grants_nothing():
    account = AccountFactory()
    user = UserFactory(account=account)
    user.groups.set([Group.objects.create(name="Scorer team")])
    assert roles_of(user) == Roles(scorer=False, manager=False, staff=False)
    assert not accounts_scorable_by(user).exists()
    assert not accounts_coachable_by(user).exists()


def test_roles_cost_one_query_per_user_object(django_assert_num_queries):
    account = AccountFactory()
    scorer = in_role("Scorer", accounts=[account])
    with django_assert_num_queries(1):
        roles_of(scorer)
        roles_of(scorer)
        accounts_scorable_by(scorer)
        accounts_coachable_by(scorer)
