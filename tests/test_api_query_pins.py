"""Query counts pinned for the integrators' interfaces and the service's other JSON
endpoints (issue 22): each request, with a real key, costs an exact number of queries on a
realistic tenant, and the same number once the tenant holds several times more users
(with teams, schedules and memberships), accounts in the key's reach, and scored calls
with their legs, so an N+1 fails here. A key's first request reads it from the database
and records its use (cold); the next one finds it in the shared cache (warm): both are
pinned. (The User API read and find by phone, and the lead intake, are pinned in their
own modules.)"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from django.core.cache import cache
from rest_framework.test import APIClient

from calls.models import AttemptOutcome, CallAttempt, Leg
from scoring.services import score_save
from tests.accounts.factories import AccountFactory, TeamFactory, issue_scored_data_key
from tests.conftest import Tenant
from tests.scoring.factories import CallFactory, in_role
from tests.users.factories import agent

pytestmark = pytest.mark.django_db

DENVER = ZoneInfo("America/Denver")
DAY = "2026-11-20"


class Integrator(Tenant):
    """A tenant with agents in teams on a schedule, a scored-data key for its account and
    a day of scored calls with both legs; ``grow(times)`` adds that many more of each."""

    def __init__(self) -> None:
        super().__init__()
        self.scored_data_key = issue_scored_data_key(self.account)
        self.scorer = in_role("Scorer", accounts=[self.account])
        self.agents: list[Any] = []
        self.calls: list[Any] = []
        self.grow(1)

    def grow(self, times: int) -> None:
        start = datetime.fromisoformat(f"{DAY}T09:00").replace(tzinfo=DENVER)
        for _ in range(times):
            n = len(self.agents)
            person = agent(
                self.account,
                phone=f"+1303555{4000 + n:04d}",
                teams=self.teams,
                account__code=f"{100 + n}",
            )
            person.accounts.add(self.other_account)
            self.agents.append(person)
            TeamFactory(account=AccountFactory(organization=self.organization))
            call = CallFactory(
                account=self.account,
                agent=person,
                received_at=start + timedelta(minutes=n),
            )
            CallAttempt.objects.create(
                call=call,
                leg=Leg.AGENT,
                agent=person,
                number=person.phone_number,
                provider="simulator",
                outcome=AttemptOutcome.ACCEPTED,
            )
            CallAttempt.objects.create(
                call=call,
                leg=Leg.LEAD,
                number=call.phone,
                provider="simulator",
                outcome=AttemptOutcome.ANSWERED,
            )
            score_save(call=call, scorer=self.scorer, values={"cat1": True})
            self.calls.append(call)
            CallFactory(
                account=self.account, received_at=start + timedelta(hours=2, minutes=n)
            )


# method, path, JSON body (or a GET's query), headers
Prepared = tuple[str, str, dict[str, Any], dict[str, Any]]


@dataclass(frozen=True)
class Request:
    """One request of an integrator: ``prepare(integrator, n)`` sets up, uncounted, what
    the n-th request acts on and returns its method, path, JSON body (or query) and
    headers."""

    id: str
    prepare: Callable[[Integrator, int], Prepared]
    cold: int
    warm: int
    status: int = 200


def user_api(tenant: Integrator) -> dict[str, Any]:
    return {"HTTP_APIUSER": tenant.credential.api_user, "HTTP_APIKEY": tenant.key}


def create(tenant: Integrator, n: int) -> Prepared:
    body = {
        "organizationId": tenant.organization.pk,
        "firstName": "Jane",
        "lastName": "Doe",
        "emailAddress": f"jane{n}@example.com",
        "accountIds": [tenant.account.pk, tenant.other_account.pk],
        "teams": [team.pk for team in tenant.teams],
        "permissionTemplate": "Agent",
        "code": f"9{n}",
    }
    return "post", "/api/users", body, user_api(tenant)


def update(tenant: Integrator, n: int) -> Prepared:
    user = tenant.agents[n]
    body = {
        "firstName": "Janet",
        "accountIds": [tenant.account.pk],
        "teams": [tenant.teams[0].pk],
        "permissionTemplate": "Manager",
    }
    return "put", f"/api/users/{user.pk}", body, user_api(tenant)


def delete(tenant: Integrator, n: int) -> Prepared:
    user = agent(tenant.account, phone=f"+1720555{1000 + n:04d}", teams=tenant.teams)
    return "delete", f"/api/users/{user.pk}", {}, user_api(tenant)


def find_email(tenant: Integrator, n: int) -> Prepared:
    query = {
        "organizationId": str(tenant.organization.pk),
        "emailAddress": tenant.agents[n].email,
    }
    return "get", "/api/users/find/email", query, user_api(tenant)


def code_available(tenant: Integrator, n: int) -> Prepared:
    query = {"organizationId": str(tenant.organization.pk)}
    return "get", "/api/users/find/available-user-code", query, user_api(tenant)


def click_to_call(tenant: Integrator, n: int) -> Prepared:
    body = {
        "account_id": str(tenant.account.pk),
        "customer_phone_number": "+17205550199",
        "customer_first_name": "Pat",
        "customer_last_name": "Lee",
        "user_id": str(tenant.agents[n].pk),
    }
    return "post", "/api/clicktocallv2", body, {"HTTP_API_KEY": tenant.key}


def scored_data(
    **params: str,
) -> Callable[[Integrator, int], Prepared]:
    def prepare(tenant: Integrator, n: int) -> Prepared:
        query = {"apikey": tenant.scored_data_key, **params}
        if params.get("callId") == "scored":
            query["callId"] = str(tenant.calls[n].pk)
        return "get", "/api/scoreddata", query, {}

    return prepare


def anonymous(
    path: str,
) -> Callable[[Integrator, int], Prepared]:
    return lambda tenant, n: ("get", path, {}, {})


REQUESTS = [
    Request("user create", create, 26, 24, 201),
    Request("user update", update, 24, 22),
    # texting_optout.decided_by, who set or changed an appointment, who recorded a
    # consent ledger entry, who closed a handoff, who decided a spoken revocation, and who
    # stopped a lead's follow-up steps, set null too
    Request("user delete", delete, 31, 29),
    Request("user find by email", find_email, 3, 1),
    Request("user code available", code_available, 3, 1),
    # the consent ledger read for a revocation of calls, and the request's consent added
    # (cold: its consent_given event reads the organization's webhook endpoints once)
    Request("click to call", click_to_call, 10, 7, 201),
    Request("scored data, one call, JSON", scored_data(callId="scored"), 5, 4),
    Request(
        "scored data, one call, XML",
        scored_data(callId="scored", returnType="xml"),
        5,
        4,
    ),
    # A range's export runs on a serial plan: one SET LOCAL more (scoring/exports.py).
    Request("scored data, a day, JSON", scored_data(fromDate=DAY, toDate=DAY), 6, 5),
    Request(
        "scored data, a day, XML",
        scored_data(fromDate=DAY, toDate=DAY, returnType="xml"),
        6,
        5,
    ),
    Request("health check", anonymous("/healthz"), 0, 0),
    Request("API schema", anonymous("/api/schema/"), 0, 0),
    Request("API docs", anonymous("/api/docs/"), 0, 0),
]


def send(
    client: APIClient,
    method: str,
    path: str,
    data: dict[str, Any],
    headers: dict[str, Any],
) -> int:
    """Send the request (a body as JSON; a GET's data as its query) and read the whole
    answer; its status."""
    if method == "get":
        response = client.get(path, data, **headers)
    else:
        response = getattr(client, method)(path, data, format="json", **headers)
    if response.streaming:
        b"".join(response.streaming_content)  # type: ignore[attr-defined]
    return response.status_code


# A tenant with one of everything, then one with five: the same counts for both.
SIZES = [1, 5]


@pytest.mark.parametrize("times", SIZES)
@pytest.mark.parametrize("request_", REQUESTS, ids=lambda request_: request_.id)
def test_the_request_costs_the_same_exact_queries_however_big_the_tenant(
    django_assert_num_queries, request_, times
):
    tenant = Integrator()
    tenant.grow(times)
    client = APIClient()
    for n, queries in enumerate((request_.cold, request_.warm)):
        method, path, data, headers = request_.prepare(tenant, n)
        if n == 0:
            cache.clear()  # the key read from the database
        with django_assert_num_queries(queries):
            status = send(client, method, path, data, headers)
        assert status == request_.status
