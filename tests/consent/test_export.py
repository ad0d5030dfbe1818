"""The ledger exported as CSV for an audit: the rows asked for (an organization's, when
support filters by it), with who and when, every value safe to open in a spreadsheet."""

import csv
import io
from datetime import UTC, datetime

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from consent.models import Source
from consent.services import consent_give, consent_revoke
from core.text import spreadsheet_safe
from tests.consent.conftest import LEAD
from tests.users.factories import UserFactory

pytestmark = pytest.mark.django_db

CHANGELIST = reverse("admin:consent_consentevent_changelist")
AT = datetime(2026, 12, 1, 17, 5, tzinfo=UTC)


def exported(admin_client, query="", selected=(), across=False):
    response = admin_client.post(
        CHANGELIST + query,
        {
            "action": "export_csv",
            "_selected_action": [str(pk) for pk in selected] or ["0"],
            "select_across": "1" if across else "0",
            "index": "0",
        },
    )
    assert response.status_code == 200
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert response["Content-Disposition"].startswith('attachment; filename="consent-')
    content = b"".join(response.streaming_content).decode()
    return list(csv.reader(io.StringIO(content)))


def test_the_export_holds_who_and_when_and_runs_no_formula(
    admin_client, tenant, other_tenant
):
    account = tenant.account
    given = consent_give(
        account=account,
        source=Source.LEAD,
        at=AT,
        phone=LEAD,
        email="maria@example.com",
        texts=False,
        detail='=HYPERLINK("http://evil.example","Lead")',
        reference="lead 7",
    )
    assert given is not None
    manager = UserFactory(account=account, first_name="@Dana", last_name="Kim")
    (mark,) = consent_revoke(
        accounts=[account],
        source=Source.MANAGER,
        phone=LEAD,
        calls=True,
        texts=False,
        at=AT.replace(hour=18),
        detail="+1 asked\x07 not to be called",
        by=manager,
    )
    consent_revoke(
        accounts=[other_tenant.account],
        source=Source.MANAGER,
        phone=LEAD,
        calls=True,
        texts=False,
    )

    header, *lines = exported(
        admin_client,
        f"?account__organization__id__exact={tenant.organization.pk}",
        selected=[given.pk],
        across=True,
    )

    assert header == [
        "id", "organization", "account", "phone", "email", "kind", "calls", "texts",
        "e-mails", "source", "at (UTC)", "who", "detail", "reference", "recorded at (UTC)",
    ]  # fmt: skip
    assert [line[:-1] for line in lines] == [
        [
            str(given.pk), tenant.organization.name, account.name, LEAD,
            "maria@example.com", "Consent", "yes", "no", "no", "Lead submission",
            "2026-12-01T17:05:00+00:00", "The person",
            '\'=HYPERLINK("http://evil.example","Lead")', "lead 7",
        ],
        [
            str(mark.pk), tenant.organization.name, account.name, LEAD, "",
            "Revocation", "yes", "no", "no", "Marked by a manager",
            "2026-12-01T18:05:00+00:00", "'@Dana Kim",
            "'+1 asked not to be called", "",
        ],
    ]  # fmt: skip


def test_the_export_holds_only_the_rows_selected(admin_client, tenant):
    first, second = (
        consent_give(account=tenant.account, source=Source.SUPPORT, at=AT, phone=phone)
        for phone in (LEAD, "+13035550124")
    )
    assert first is not None
    assert second is not None

    _, *lines = exported(admin_client, selected=[second.pk])

    assert [line[0] for line in lines] == [str(second.pk)]


@pytest.mark.parametrize(
    ("value", "safe"),
    [
        ("=1+1", "'=1+1"),
        ("+SUM(A1)", "'+SUM(A1)"),
        ("-2+3", "'-2+3"),
        ("@cmd", "'@cmd"),
        ("\t=1", "'\t=1"),
        ("+13035550123", "+13035550123"),  # a number in E.164 is no formula
        ("-5", "-5"),
        ("Maria", "Maria"),
        ("a\x00b\x7f", "ab"),
    ],
)
def test_spreadsheet_safe_turns_a_formula_into_text(value, safe):
    assert spreadsheet_safe(value) == safe


def test_the_ledgers_admin_page_costs_the_same_queries_however_many_rows(
    admin_client, tenant, django_assert_num_queries
):
    def add(count):
        for n in range(count):
            consent_give(
                account=tenant.account,
                source=Source.SUPPORT,
                at=AT,
                phone=f"+1303555{n:04d}",
                by=UserFactory(account=tenant.account),
            )

    add(2)
    admin_client.get(CHANGELIST)  # warms what a process reads once
    with CaptureQueriesContext(connection) as few:
        assert admin_client.get(CHANGELIST).status_code == 200
    add(20)
    with django_assert_num_queries(len(few.captured_queries)):
        assert admin_client.get(CHANGELIST).status_code == 200
