"""The appointment figures on hand-counted data: set rate per answered lead (a moved
appointment counted once, a proposal not at all), show and no-show rates of the
appointments due, the outcome missing, by agent and by account, each account's day in
its own timezone."""

import datetime as dt
from zoneinfo import ZoneInfo

import pytest
from django.utils import timezone

from accounts.models import Account
from appointments.figures import (
    appointment_figures,
    appointment_figures_by,
    outcome_missing,
)
from appointments.models import Actor, Status
from appointments.services import (
    appointment_change,
    appointment_make,
    appointment_set_for_call,
)
from calls.models import CallStatus
from tests.scoring.factories import AccountFactory, CallFactory
from tests.users.factories import UserFactory

pytestmark = pytest.mark.django_db

DAY = dt.date(2026, 11, 23)


def at(zone: str, hour: int, day: dt.date = DAY) -> dt.datetime:
    return dt.datetime.combine(day, dt.time(hour), ZoneInfo(zone))


def test_the_figures_count_what_happened_each_in_its_accounts_day():
    denver = AccountFactory(timezone="America/Denver")
    tokyo = AccountFactory(timezone="Asia/Tokyo")
    alex, kim = UserFactory(account=denver), UserFactory(account=denver)
    received = at("America/Denver", 9)
    answered = [
        CallFactory(account=denver, agent=alex, received_at=received),
        CallFactory(account=denver, agent=alex, received_at=received),
        CallFactory(account=denver, agent=kim, received_at=received),
        CallFactory(account=denver, agent=kim, received_at=received),
    ]
    CallFactory(account=denver, status=CallStatus.NOANSWER, received_at=received)
    # Alex: one kept, one moved then a no-show (one lead, set twice); Kim: one proposal
    # never accepted, one set and never marked.
    kept = appointment_set_for_call(
        call=answered[0], starts_at=at("America/Denver", 15), by=Actor.AGENT
    )
    appointment_change(appointment=kept, to=Status.KEPT, by=Actor.MANAGER)
    moved = appointment_set_for_call(
        call=answered[1], starts_at=at("America/Denver", 11), by=Actor.AGENT
    )
    moved = appointment_set_for_call(
        call=answered[1], starts_at=at("America/Denver", 16), by=Actor.AGENT
    )
    appointment_change(appointment=moved, to=Status.NO_SHOW, by=Actor.MANAGER)
    appointment_make(
        call=answered[2],
        starts_at=at("America/Denver", 17),
        by=Actor.SERVICE,
        status=Status.PROPOSED,
    )
    forgotten = appointment_set_for_call(
        call=answered[3], starts_at=at("America/Denver", 18), by=Actor.AGENT
    )
    # Tokyo's call and appointment fall on its own 23rd (the 22nd in Denver).
    tokyo_call = CallFactory(account=tokyo, received_at=at("Asia/Tokyo", 8))
    tokyo_kept = appointment_set_for_call(
        call=tokyo_call, starts_at=at("Asia/Tokyo", 10), by=Actor.AGENT
    )
    appointment_change(appointment=tokyo_kept, to=Status.KEPT, by=Actor.MANAGER)
    accounts = Account.objects.filter(pk__in=[denver.pk, tokyo.pk])
    evening = at("America/Denver", 23)

    figures = appointment_figures(accounts=accounts, first=DAY, last=DAY, now=evening)

    assert (figures.answered, figures.set) == (5, 4)
    assert (figures.due, figures.kept, figures.no_show, figures.missing) == (4, 2, 1, 1)
    assert figures.set_rate == pytest.approx(4 / 5)
    assert figures.show_rate == pytest.approx(2 / 4)
    assert figures.no_show_rate == pytest.approx(1 / 4)
    assert outcome_missing(accounts=accounts, first=DAY, last=DAY, now=evening) == [
        forgotten
    ]

    by_agent = appointment_figures_by(
        accounts=accounts, first=DAY, last=DAY, by="agent", now=evening
    )
    assert (
        by_agent[alex.pk].set,
        by_agent[alex.pk].kept,
        by_agent[alex.pk].no_show,
    ) == (2, 1, 1)
    assert (by_agent[kim.pk].answered, by_agent[kim.pk].set, by_agent[kim.pk].due) == (
        2,
        1,
        1,
    )
    by_account = appointment_figures_by(
        accounts=accounts, first=DAY, last=DAY, by="account", now=evening
    )
    assert (by_account[tokyo.pk].answered, by_account[tokyo.pk].kept) == (1, 1)
    assert by_account[denver.pk].due == 3

    # Before the afternoon's appointments began, none of them was due yet.
    noon = at("America/Denver", 12)
    assert (
        appointment_figures(accounts=accounts, first=DAY, last=DAY, now=noon).due == 1
    )


def test_no_data_gives_no_rates():
    accounts = Account.objects.filter(pk=AccountFactory().pk)
    figures = appointment_figures(
        accounts=accounts, first=DAY, last=DAY, now=timezone.now()
    )
    assert (figures.set_rate, figures.show_rate, figures.no_show_rate) == (
        None,
        None,
        None,
    )
