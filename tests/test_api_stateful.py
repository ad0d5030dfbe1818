"""The schema's links hold: schemathesis's stateful runs follow them through the service
(a created user to its get, update, delete and lookups by e-mail and phone; a click-to-call
to its call's scored data), and every answer on the way matches the schema. Lead intake,
which no link reaches, is searched on its own with each way it takes credentials and a
real ADF document, so its 200 is validated as well as its refusals.

Through Django's WSGI application, in-process and offline, as tests/test_api_fuzz.py
(whose fixtures, tests/fuzzing.py, these share). Bounded and derandomized: the same
scenarios on every run; each scenario's writes are rolled back before the next.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

import pytest
import schemathesis
from django.db import transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis.checks import not_a_server_error
from schemathesis.generation.stateful.state_machine import (
    APIStateMachine,
    StepInput,
    StepOutput,
)
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    ensure_resource_availability,
    response_schema_conformance,
    status_code_conformance,
    use_after_free,
)

from config.schema import LINKS
from config.wsgi import application
from leads.models import Lead
from tests.fuzzing import FORMS, XML_BODIES, XML_TEXT, Fuzzed, steer_lead_intake

schema = schemathesis.openapi.from_wsgi("/api/schema/", application)
schema.config.generation.update(
    modes=[schemathesis.GenerationMode.POSITIVE],
    deterministic=True,
    # Credentials are the steering's, in the style under test.
    with_security_parameters=False,
)
# Only the links the schema publishes: schemathesis would infer more from names alike.
schema.config.phases.stateful.inference.algorithms = []


def created_user_is_found(ctx: Any, response: Any, case: Any) -> bool | None:
    """Schemathesis's ``ensure_resource_availability`` (a created user is not answered
    404), except for the lookups: it knows a DELETE of ``/api/users/{user_id}`` removed
    that path, not that the user is no longer found by e-mail or phone either."""
    if case.operation.path.startswith("/api/users/find/"):
        return None
    return ensure_resource_availability(ctx, response, case)  # type: ignore[no-any-return]


CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
    # Stateful: a deleted user is not found again; a created one is.
    use_after_free,
    created_user_is_found,
]
STYLES = ["headers", "members"]
CUSTOMER_PHONE = "+17205550199"
AGENT_PHONE = "+13035550147"
# Refused in names (tests/test_api_fuzz.py searches that); a created user is what the
# links start from.
CONTROL = re.compile("[\x00-\x1f\x7f]")

# operationId -> (method, path) in schemathesis's labels.
LABELS = {
    "user_create": "POST /api/users",
    "user_get": "GET /api/users/{user_id}",
    "user_update": "PUT /api/users/{user_id}",
    "user_delete": "DELETE /api/users/{user_id}",
    "user_find_by_email": "GET /api/users/find/email",
    "user_find_by_phone": "GET /api/users/find/phone",
    "click_to_call": "POST /api/clicktocallv2",
    "scored_data": "GET /api/scoreddata",
}


def _steer(case: Any, fuzzed: Fuzzed, style: str) -> dict[str, str]:
    """Valid credentials in ``style``, and the tenant's real organization, accounts, teams
    and agent where a body names them; what a link filled in is left as it is. Returns
    the headers to send."""
    tenant = fuzzed.tenant
    path = case.operation.path
    body = case.body if isinstance(case.body, dict) else None
    if path == "/api/scoreddata":
        # The key's two spellings; the call is the link's.
        query = {**(case.query or {})}
        query.pop("apikey", None)
        query.pop("apiKey", None)
        query["apikey" if style == "headers" else "apiKey"] = fuzzed.scored_data_key
        case.query = query
        return {}
    if path == "/api/clicktocallv2":
        if body is not None:
            # The agent by id: a generated agent's phone number is rarely a number.
            body.pop("user_phone_number", None)
            body.update(account_id=str(tenant.account.pk), user_id=str(fuzzed.agent.pk))
            body.update(customer_phone_number=CUSTOMER_PHONE)
        if style == "headers" or body is None:
            if body is not None:
                body.pop("api_key", None)
            return {"api_key": tenant.key}
        body["api_key"] = tenant.key
        return {}
    # The User API takes its credentials as headers only.
    if body is not None and case.operation.method == "post":
        # A new user of the tenant's first account, its generated names and address
        # kept, and a phone number to be found by.
        for member in set(body) - {"firstName", "lastName", "emailAddress"}:
            del body[member]
        for member in ("firstName", "lastName"):
            body[member] = CONTROL.sub("", body[member]) or "Avery"
        body.update(
            organizationId=tenant.organization.pk,
            accountIds=[tenant.account.pk],
            phoneNumber=AGENT_PHONE,
        )
    elif body is not None:
        for member, value in {
            "organizationId": tenant.organization.pk,
            "accountIds": [tenant.account.pk],
            "teams": [team.pk for team in tenant.teams],
        }.items():
            if member in body:
                body[member] = value
    return {"apiuser": tenant.credential.api_user, "apikey": tenant.key}


def _machine(
    fuzzed: Fuzzed, style: str, steps: Counter[tuple[str, int, bool]]
) -> type[APIStateMachine]:
    class Steered(schema.as_state_machine()):  # type: ignore[misc]
        # Scenarios start where the links do, by creating a user or a call: a random
        # user id is a 404 (tests/test_api_fuzz.py sends those), and spends the steps.
        RANDOM__GET_api_users_user_id_ = None
        RANDOM__PUT_api_users_user_id_ = None

        def setup(self) -> None:
            # Each scenario starts from the fixture's data: its writes are rolled back.
            self._scenario = transaction.atomic()
            self._scenario.__enter__()

        def teardown(self) -> None:
            transaction.set_rollback(True)
            self._scenario.__exit__(None, None, None)

        def step(self, input: StepInput) -> StepOutput:
            output: StepOutput = super().step(input)
            linked = input.transition is not None and input.is_applied
            steps[
                (input.case.operation.label, output.response.status_code, linked)
            ] += 1
            return output

        def get_call_kwargs(self, case: Any) -> dict[str, Any]:
            return {"headers": _steer(case, fuzzed, style)}

        def validate_response(
            self, response: Any, case: Any, additional_checks: Any = None, **kwargs: Any
        ) -> None:
            case.validate_response(
                response,
                checks=CHECKS,
                transport_kwargs=kwargs or None,
                recorder=self.recorder,
            )

    return Steered


@pytest.mark.django_db
@pytest.mark.parametrize("style", STYLES)
def test_the_links_lead_to_answers_the_schema_describes(
    fuzzed, wsgi_in_the_test_transaction, style
):
    """Click-to-call's key as the `api_key` header or body member, scored data's as
    `apikey` or `apiKey`; the User API's are always headers."""
    steps: Counter[tuple[str, int, bool]] = Counter()

    _machine(fuzzed, style, steps).run(
        settings=settings(
            max_examples=25,
            stateful_step_count=8,
            derandomize=True,
            database=None,
            deadline=None,
            suppress_health_check=list(HealthCheck),
        )
    )

    followed = {(label, status) for label, status, linked in steps if linked}
    assert followed >= {
        (LABELS["user_get"], 200),
        (LABELS["user_update"], 200),
        (LABELS["user_delete"], 200),
        (LABELS["user_find_by_email"], 200),
        (LABELS["user_find_by_phone"], 200),
        (LABELS["scored_data"], 200),
    }, steps


# --- lead intake: the form's fields or the headers, a form or the document as the body ----


@pytest.mark.django_db
@pytest.mark.parametrize("media_type", FORMS + XML_BODIES)
def test_lead_intake_answers_as_the_schema_describes(
    fuzzed, wsgi_in_the_test_transaction, media_type
):
    """A form carries the credentials as its fields or as headers (a search each); an XML
    body always as headers. Mostly valid credentials and a real document, so the 200 of an
    accepted lead is validated, in each style, as well as the refusals; and a few cases
    with the credentials and the document fixed, so that neither the 200 nor the 403 rests
    on what the generator happens to draw."""
    operation = schema["/api/nl"]["POST"]
    answers: Counter[tuple[str, int]] = Counter()

    def search_with(
        in_form: bool | None,
        credentials: tuple[str, ...] = ("valid",) * 4 + ("wrong",),
        document: tuple[bool, ...] = (True,) * 4 + (False,),
        examples: int = 15,
    ) -> None:
        @given(case=operation.as_strategy(media_type=media_type), data=st.data())
        @settings(
            max_examples=examples,
            derandomize=True,
            database=None,
            deadline=None,
            suppress_health_check=list(HealthCheck),
        )
        def search(case, data):
            headers: dict[str, str] = {}
            steer_lead_intake(
                case,
                data,
                fuzzed,
                headers,
                credentials=data.draw(st.sampled_from(credentials)),
                document=data.draw(st.sampled_from(document)),
                text=XML_TEXT,
                in_form=in_form,
            )
            response = case.call(headers=headers)
            style = "headers" if "apiuser" in headers else "form fields"
            answers[(style, response.status_code)] += 1
            case.validate_response(response, checks=CHECKS[:4])

        search()

    for in_form in (True, False) if media_type in FORMS else (None,):
        search_with(in_form)
        search_with(in_form, credentials=("valid",), document=(True,), examples=3)
        search_with(in_form, credentials=("wrong",), examples=2)

    styles = ["form fields", "headers"] if media_type in FORMS else ["headers"]
    assert {(style, 200) for style in styles} <= set(answers), answers
    assert 403 in {status for _, status in answers}, answers
    assert Lead.objects.filter(account=fuzzed.tenant.account).exists()


# --- what the runs rely on --------------------------------------------------------------


def test_the_state_machine_follows_every_published_link():
    """Each link of the schema (config/schema.py) is a transition of the stateful runs:
    its operations resolve, and no other is inferred."""
    transitions = schema.as_state_machine()._transitions.operations  # type: ignore[attr-defined]
    followed = {
        (link.source.label, link.status_code, link.name, link.target.label)
        for operation in transitions.values()
        for link in operation.outgoing
    }

    assert followed == {
        (LABELS[source], status, name, LABELS[target])
        for source, statuses in LINKS.items()
        for status, links in statuses.items()
        for name, (target, _) in links.items()
    }
