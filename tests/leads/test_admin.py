import html
import json
from datetime import UTC, datetime, timedelta

import lxml.html
import pytest
from django.contrib.messages import get_messages
from django.urls import reverse

from calls.models import Call
from leads.models import (
    Lead,
    Operator,
    Outcome,
    ParsingRule,
    RuleAction,
    VendorRegistration,
)
from leads.services import NO_VENDOR, lead_receive
from tests.accounts.factories import (
    AccountFactory,
    OrganizationFactory,
    TeamFactory,
    issue_credential,
)
from tests.admin_pages import form_data, sign_in_support, typed
from tests.leads.factories import (
    VendorRegistrationFactory,
    adf,
    catch_all_rule,
    rule_with,
)

pytestmark = pytest.mark.django_db


def url(model: str, view: str, *args) -> str:
    return reverse(f"admin:leads_{model}_{view}", args=args)


def management(prefix: str, total: int = 0, initial: int = 0) -> dict[str, str]:
    return {
        f"{prefix}-TOTAL_FORMS": str(total),
        f"{prefix}-INITIAL_FORMS": str(initial),
        f"{prefix}-MIN_NUM_FORMS": "0",
        f"{prefix}-MAX_NUM_FORMS": "1000",
    }


def messages_of(response) -> list[str]:
    return [str(message) for message in get_messages(response.wsgi_request)]


def build_tenants(count: int, capture) -> None:
    """Organizations with two accounts each: registrations, rules with conditions, and leads
    of several outcomes (accepted ones with their queued call)."""
    for n in range(count):
        organization = OrganizationFactory()
        credential, _ = issue_credential(organization)
        for account in [AccountFactory(organization=organization) for _ in range(2)]:
            sales = TeamFactory(account=account, name="Sales")
            registration = VendorRegistrationFactory(account=account)
            rule_with(
                account,
                ("provider/name", Operator.EQUALS, "DNP"),
                action=RuleAction.DO_NOT_PROCESS,
            )
            catch_all_rule(account, team=sales)
            with capture():
                for document in (
                    adf(
                        prospect_id=f"A-{n}-{account.pk}",
                        vendor_id=registration.vendor_id,
                    ),
                    adf(
                        prospect_id=f"D-{n}-{account.pk}",
                        vendor_id=registration.vendor_id,
                        provider_name="DNP",
                    ),
                    adf(prospect_id=f"V-{n}-{account.pk}", vendor_id="UNKNOWN"),
                    "<adf><prospect>",
                ):
                    lead_receive(credential=credential, raw_xml=document)


@pytest.mark.parametrize(
    ("model", "max_queries"),
    # parsingrule: one more for the conditions of every rule listed, in words.
    [("vendorregistration", 7), ("parsingrule", 8), ("lead", 8)],
)
def test_changelist_loads_in_a_fixed_number_of_queries(
    admin_client,
    django_assert_max_num_queries,
    django_capture_on_commit_callbacks,
    model,
    max_queries,
):
    build_tenants(4, django_capture_on_commit_callbacks)

    with django_assert_max_num_queries(max_queries):
        response = admin_client.get(url(model, "changelist"))

    assert response.status_code == 200
    assert response.context["cl"].result_count >= 8


def test_lead_changelist_shows_outcomes_calls_and_vendors(
    admin_client, tenant, django_capture_on_commit_callbacks
):
    registration = VendorRegistrationFactory(
        account=tenant.account, vendor_id="DMN-1001"
    )
    catch_all_rule(tenant.account)
    with django_capture_on_commit_callbacks():
        lead_receive(
            credential=tenant.credential, raw_xml=adf(vendor_id=registration.vendor_id)
        )
    lead = Lead.objects.get()

    page = admin_client.get(url("lead", "changelist")).content.decode()

    assert reverse("admin:calls_call_change", args=[lead.call_id]) in page
    assert f"Call {lead.call_id} (QUEUED)" in page
    assert "DMN-1001 / Vendor 0" in page
    assert '<td class="field-outcome">Accepted</td>' in page
    assert (
        '<option value="rerun">Re-run through the current configuration</option>'
        in page
    )


@pytest.mark.parametrize("model", ["vendorregistration", "parsingrule", "lead"])
def test_change_page_loads(
    admin_client, tenant, model, django_capture_on_commit_callbacks
):
    registration = VendorRegistrationFactory(account=tenant.account)
    rule = rule_with(tenant.account, ("prospect/requesttype", Operator.EQUALS, "sales"))
    with django_capture_on_commit_callbacks():
        lead_receive(
            credential=tenant.credential, raw_xml=adf(vendor_id=registration.vendor_id)
        )
    obj = {
        "vendorregistration": registration,
        "parsingrule": rule,
        "lead": Lead.objects.get(),
    }[model]

    response = admin_client.get(url(model, "change", obj.pk))

    assert response.status_code == 200


@pytest.mark.parametrize("model", ["vendorregistration", "parsingrule"])
def test_add_page_loads(admin_client, model):
    assert admin_client.get(url(model, "add")).status_code == 200


# --- vendor registrations


def test_vendor_registration_takes_its_organization_from_the_account(
    admin_client, tenant
):
    response = admin_client.post(
        url("vendorregistration", "add"),
        {
            "account": tenant.account.pk,
            "vendor_id": " DMN-1001 ",
            "vendor_name": "Demo Motors North",
            "is_active": "on",
        },
    )

    assert response.status_code == 302
    registration = VendorRegistration.objects.get()
    assert registration.organization == tenant.organization
    assert (registration.account, registration.vendor_id) == (
        tenant.account,
        "DMN-1001",
    )


def test_vendor_registration_duplicates_in_the_organization_are_named(
    admin_client, tenant
):
    VendorRegistrationFactory(
        account=tenant.account, vendor_id="DMN-1001", vendor_name="Demo Motors North"
    )

    response = admin_client.post(
        url("vendorregistration", "add"),
        {
            "account": tenant.other_account.pk,
            "vendor_id": "DMN-1001",
            "vendor_name": "DEMO motors north",
        },
    )

    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    assert errors["vendor_id"] == [
        f"Vendor ID 'DMN-1001' is already registered in {tenant.organization.name} "
        f"(for {tenant.account.name}). A vendor ID routes to one account per organization."
    ]
    assert errors["vendor_name"] == [
        f"Vendor name 'Demo Motors North' is already registered in {tenant.organization.name} "
        f"(for {tenant.account.name}). A vendor name routes to one account per organization."
    ]
    assert VendorRegistration.objects.count() == 1


def test_vendor_registration_may_repeat_in_another_organization_and_be_edited(
    admin_client, tenant, other_tenant
):
    first = VendorRegistrationFactory(
        account=tenant.account, vendor_id="DMN-1001", vendor_name="North"
    )

    created = admin_client.post(
        url("vendorregistration", "add"),
        {
            "account": other_tenant.account.pk,
            "vendor_id": "DMN-1001",
            "vendor_name": "North",
        },
    )
    edited = admin_client.post(
        url("vendorregistration", "change", first.pk),
        {
            "account": tenant.account.pk,
            "vendor_id": "DMN-1001",
            "vendor_name": "North (renamed)",
            "is_active": "on",
        },
    )

    assert (created.status_code, edited.status_code) == (302, 302)
    assert VendorRegistration.objects.filter(vendor_id="DMN-1001").count() == 2
    first.refresh_from_db()
    assert first.vendor_name == "North (renamed)"


def test_vendor_registration_needs_an_id_or_a_name(admin_client, tenant):
    response = admin_client.post(
        url("vendorregistration", "add"),
        {"account": tenant.account.pk, "vendor_id": " ", "vendor_name": ""},
    )

    assert response.status_code == 200
    assert response.context["adminform"].form.errors == {
        "vendor_id": ["Give a vendor ID, a vendor name, or both."]
    }
    assert not VendorRegistration.objects.exists()


# --- parsing rules


def rule_post(account, team=None, conditions=(), **fields) -> dict[str, str]:
    data = {
        "account": str(account.pk),
        "name": "Service requests",
        "priority": "20",
        "is_active": "on",
        "action": RuleAction.PROCESS,
        "team": str(team.pk) if team else "",
        "source_label": "",
        "department": "",
        "lead_type": "",
        **management("conditions", total=len(conditions)),
        **fields,
    }
    for index, (field, operator, value) in enumerate(conditions):
        data |= {
            f"conditions-{index}-field": field,
            f"conditions-{index}-operator": operator,
            f"conditions-{index}-value": value,
        }
    return data


def test_rule_is_saved_with_its_conditions(admin_client, tenant):
    response = admin_client.post(
        url("parsingrule", "add"),
        rule_post(
            tenant.account,
            team=tenant.teams[1],
            conditions=[
                ("prospect/requesttype", "equals", "service"),
                ("customer/phone", "present", "ignored"),
                ("vehicle/make", "regex", "^(toyota|honda)$"),
            ],
        ),
    )

    assert response.status_code == 302
    rule = ParsingRule.objects.get()
    assert (rule.account, rule.team, rule.priority) == (
        tenant.account,
        tenant.teams[1],
        20,
    )
    assert list(rule.conditions.values_list("field", "operator", "value")) == [
        ("prospect/requesttype", "equals", "service"),
        ("customer/phone", "present", ""),
        ("vehicle/make", "regex", "^(toyota|honda)$"),
    ]


def test_rule_refuses_a_bad_regex_and_a_missing_value(admin_client, tenant):
    response = admin_client.post(
        url("parsingrule", "add"),
        rule_post(
            tenant.account,
            conditions=[
                ("vehicle/make", "regex", "(toyota"),
                ("vehicle/model", "equals", " "),
            ],
        ),
    )

    assert response.status_code == 200
    formset = response.context["inline_admin_formsets"][0].formset
    assert formset.forms[0].errors["value"] == [
        "Not a valid regular expression: missing ), unterminated subpattern at position 0."
    ]
    assert formset.forms[1].errors["value"] == [
        "“equals” needs a value to compare with (use “absent” to match an empty field)."
    ]
    assert not ParsingRule.objects.exists()


def test_rule_refuses_a_team_of_another_account(admin_client, tenant):
    foreign = tenant.other_teams[0]

    response = admin_client.post(
        url("parsingrule", "add"), rule_post(tenant.account, team=foreign)
    )

    assert response.status_code == 200
    assert response.context["adminform"].form.errors["team"] == [
        f"Sales is a team of {tenant.other_account.name}; choose one of {tenant.account.name}'s teams."
    ]
    assert not ParsingRule.objects.exists()


def test_rule_change_page_offers_only_the_accounts_teams(admin_client, tenant):
    rule = catch_all_rule(tenant.account)

    response = admin_client.get(url("parsingrule", "change", rule.pk))

    team_field = response.context["adminform"].form.fields["team"]
    assert set(team_field.queryset) == set(tenant.teams)


def test_rules_are_reordered_from_the_list(admin_client, tenant):
    first = rule_with(
        tenant.account, ("prospect/requesttype", "equals", "sales"), priority=10
    )
    second = catch_all_rule(tenant.account, priority=20)
    data = {
        "form-TOTAL_FORMS": "2",
        "form-INITIAL_FORMS": "2",
        "form-MIN_NUM_FORMS": "0",
        "form-MAX_NUM_FORMS": "1000",
        "form-0-id": str(first.pk),
        "form-0-priority": "30",
        "form-1-id": str(second.pk),
        "form-1-priority": "5",
        "_save": "Save",
    }

    response = admin_client.post(url("parsingrule", "changelist"), data)

    assert response.status_code == 302
    first.refresh_from_db()
    second.refresh_from_db()
    assert (first.priority, second.priority) == (30, 5)


def cell_text(cell) -> str:
    """A table cell's text as read, a line break as a space."""
    for br in cell.iter("br"):
        br.tail = " " + (br.tail or "")
    return " ".join(cell.text_content().split())


def test_rule_list_shows_conditions_in_words_and_links_the_tester(client, tenant):
    sign_in_support(client)
    rule_with(
        tenant.account,
        ("prospect/requesttype", "equals", "service"),
        ("provider/name", "contains", "cars"),
        name="Service",
    )
    rule_with(
        tenant.account,
        ("provider/name", "equals", "DNP"),
        ("customer/phone", "absent", ""),
        ("vehicle/make", "regex", "^(toyota|honda)$"),
        name="DNP",
    )
    catch_all_rule(tenant.account, name="Everything else")

    response = client.get(url("parsingrule", "changelist"))

    cells = {
        row.name: text
        for row, text in zip(
            response.context["cl"].result_list,
            [
                cell_text(cell)
                for cell in lxml.html.fromstring(response.content.decode()).find_class(
                    "field-conditions_in_words"
                )
            ],
            strict=True,
        )
    }
    assert cells == {
        "Service": "prospect/requesttype equals service (case-insensitive) "
        "and provider/name contains cars (case-insensitive)",
        "DNP": "provider/name equals DNP (case-insensitive) and customer/phone is absent "
        "and vehicle/make matches the regular expression ^(toyota|honda)$ (case-insensitive)",
        "Everything else": "all leads",
    }
    assert f'href="{url("parsingrule", "tester")}"' in response.content.decode()


def test_rule_list_escapes_condition_values(client, tenant):
    sign_in_support(client)
    rule_with(tenant.account, ("provider/name", "equals", "<b>x</b>"))

    page = client.get(url("parsingrule", "changelist")).content.decode()

    assert "provider/name equals &lt;b&gt;x&lt;/b&gt; (case-insensitive)" in page


def test_catch_all_rule_is_saved_from_the_add_page_as_a_browser_posts_it(
    client, tenant
):
    sign_in_support(client)
    page = client.get(url("parsingrule", "add"))
    data = typed(
        form_data(page, "parsingrule_form"),
        {"account": str(tenant.account.pk), "name": "Everything else"},
    )

    response = client.post(url("parsingrule", "add"), data)

    assert response.status_code == 302, response.context["errors"]
    rule = ParsingRule.objects.get()
    assert (rule.account, rule.name) == (tenant.account, "Everything else")
    assert not rule.conditions.exists()


def test_blank_condition_rows_are_ignored_beside_filled_ones(client, tenant):
    sign_in_support(client)
    rule = rule_with(tenant.account, ("prospect/requesttype", "equals", "sales"))
    page = client.get(url("parsingrule", "change", rule.pk))
    data = form_data(page, "parsingrule_form")
    # The page has the saved condition and one blank row; add two more blank rows the way
    # "Add another condition" does (a copy of the empty form), and fill the first blank one.
    data = typed(
        data,
        {
            "conditions-TOTAL_FORMS": "4",
            "conditions-1-field": "provider/name",
            "conditions-1-operator": "contains",
            "conditions-1-value": "cars",
            "conditions-2-field": "",
            "conditions-2-operator": "equals",
            "conditions-2-value": "",
            "conditions-3-field": "",
            "conditions-3-operator": "present",
            "conditions-3-value": " ",
        },
    )

    response = client.post(url("parsingrule", "change", rule.pk), data)

    assert response.status_code == 302
    assert list(rule.conditions.values_list("field", "operator", "value")) == [
        ("prospect/requesttype", "equals", "sales"),
        ("provider/name", "contains", "cars"),
    ]


def test_condition_row_with_a_field_but_no_value_is_still_refused(client, tenant):
    sign_in_support(client)
    page = client.get(url("parsingrule", "add"))
    data = typed(
        form_data(page, "parsingrule_form"),
        {
            "account": str(tenant.account.pk),
            "name": "Service",
            "conditions-0-field": "prospect/requesttype",
        },
    )

    response = client.post(url("parsingrule", "add"), data)

    assert response.status_code == 200
    formset = response.context["inline_admin_formsets"][0].formset
    assert formset.forms[0].errors == {
        "value": [
            "“equals” needs a value to compare with (use “absent” to match an empty field)."
        ]
    }
    assert not ParsingRule.objects.exists()


def test_condition_row_with_a_value_but_no_field_asks_for_the_field(client, tenant):
    sign_in_support(client)
    page = client.get(url("parsingrule", "add"))
    data = typed(
        form_data(page, "parsingrule_form"),
        {
            "account": str(tenant.account.pk),
            "name": "Service",
            "conditions-0-value": "service",
        },
    )

    response = client.post(url("parsingrule", "add"), data)

    assert response.status_code == 200
    formset = response.context["inline_admin_formsets"][0].formset
    assert formset.forms[0].errors == {"field": ["This field is required."]}
    assert not ParsingRule.objects.exists()


# --- the rule tester


@pytest.fixture
def north(tenant):
    """The contract's first demo account: DNP, service to Service, everything else to Sales."""
    sales, service = tenant.teams
    VendorRegistrationFactory(
        account=tenant.account, vendor_id="DMN-1001", vendor_name="Demo Motors North"
    )
    rule_with(
        tenant.account,
        ("provider/name", Operator.EQUALS, "DNP"),
        name="DNP",
        priority=10,
        action=RuleAction.DO_NOT_PROCESS,
    )
    rule_with(
        tenant.account,
        ("prospect/requesttype", Operator.EQUALS, "service"),
        name="Service",
        priority=20,
        team=service,
    )
    catch_all_rule(tenant.account, name="Everything else", priority=30, team=sales)
    return tenant


def run_tester(admin_client, xml, **choice):
    data = {"xml": xml, "organization": "", "credential": ""}
    data |= {name: str(value.pk) for name, value in choice.items()}
    response = admin_client.post(url("parsingrule", "tester"), data)
    assert response.status_code == 200
    return response


def rule_states(response, number=0) -> list[tuple[str, str]]:
    return [
        (row.rule.name, row.state)
        for row in response.context["trial"].prospects[number].rules
    ]


def test_tester_page_loads(admin_client):
    response = admin_client.get(url("parsingrule", "tester"))

    assert response.status_code == 200
    assert response.context["trial"] is None


def test_tester_accepts_a_sales_lead_and_shows_everything_without_storing(
    admin_client, north
):
    response = run_tester(
        admin_client,
        adf(vendor_id="DMN-1001", request_type="sales"),
        organization=north.organization,
    )

    prospect = response.context["trial"].prospects[0]
    page = response.content.decode()
    assert prospect.outcome == "Accepted"
    assert prospect.account == north.account
    assert (
        prospect.account_why
        == f"Vendor ID 'DMN-1001' is registered for {north.account.name}."
    )
    assert rule_states(response) == [
        ("DNP", "no match"),
        ("Service", "no match"),
        ("Everything else", "matched"),
    ]
    assert (
        prospect.rules[0].why
        == "provider/name equals DNP does not hold: the lead has 'Web Form'"
    )
    assert prospect.rule.name == "Everything else"
    assert prospect.phone == "+13035550123"
    assert prospect.whisper == "Sales lead. New 2025 Toyota Camry."
    assert "Customer comments: Can I test drive Saturday?" in prospect.call_notes
    assert ("Team", "Sales") in prospect.call
    assert '<pre class="parsed">' in page
    assert html.escape('"prospect_id": "P-1"', quote=True) in page
    assert "Sales lead. New 2025 Toyota Camry." in page
    assert not Lead.objects.exists()
    assert not Call.objects.exists()


def test_tester_routes_service_requests_to_the_service_team(admin_client, north):
    response = run_tester(
        admin_client,
        adf(vendor_id="DMN-1001", request_type="service"),
        credential=north.credential,
    )

    prospect = response.context["trial"].prospects[0]
    assert rule_states(response) == [
        ("DNP", "no match"),
        ("Service", "matched"),
        ("Everything else", "not reached"),
    ]
    assert ("Team", "Service") in prospect.call


def test_tester_shows_the_department_and_lead_type_the_call_would_get(
    admin_client, north
):
    """The preview's call is the call intake sets up: the rule's department and lead
    type included (they were left out)."""
    ParsingRule.objects.filter(name="Service").update(
        department="Service Drive", lead_type="Service"
    )
    document = adf(vendor_id="DMN-1001", request_type="service")

    prospect = (
        run_tester(admin_client, document, credential=north.credential)
        .context["trial"]
        .prospects[0]
    )
    lead_receive(credential=north.credential, raw_xml=document)

    call = Call.objects.get()
    assert ("Department", "Service Drive") in prospect.call
    assert ("Department", call.department) in prospect.call
    assert ("Lead type", call.lead_type) in prospect.call
    assert call.lead_type == "Service"


def test_tester_shows_a_do_not_process_lead(admin_client, north):
    response = run_tester(
        admin_client,
        adf(vendor_id="DMN-1001", provider_name="DNP"),
        organization=north.organization,
    )

    prospect = response.context["trial"].prospects[0]
    assert prospect.outcome == "Do not process"
    assert prospect.answer_status == 200
    assert (
        "Lead was successfully parsed as a Do Not Process lead." in prospect.answer_body
    )
    assert rule_states(response) == [
        ("DNP", "matched"),
        ("Service", "not reached"),
        ("Everything else", "not reached"),
    ]
    assert prospect.call == []
    assert not Lead.objects.exists()


def test_tester_explains_an_unregistered_vendor(admin_client, north):
    response = run_tester(
        admin_client,
        adf(vendor_id="XYZ-9", vendor_name="Demo Motors North"),
        organization=north.organization,
    )

    prospect = response.context["trial"].prospects[0]
    assert prospect.outcome == "No vendor"
    assert prospect.account is None
    assert prospect.account_why == (
        f"Vendor ID 'XYZ-9' is not registered in {north.organization.name}. "
        "Nor is its name 'Demo Motors North' registered without an ID "
        "(a name registered with another ID is another vendor's)."
    )
    assert (prospect.answer_status, NO_VENDOR in prospect.answer_body) == (422, True)
    assert prospect.rules == []


def test_tester_says_when_a_lead_is_routed_by_a_name_registered_alone(
    admin_client, north
):
    VendorRegistration.objects.update(vendor_id="")

    response = run_tester(
        admin_client,
        adf(vendor_id="XYZ-9", vendor_name="demo motors north"),
        organization=north.organization,
    )

    prospect = response.context["trial"].prospects[0]
    assert prospect.account == north.account
    assert prospect.account_why == (
        "Vendor name 'demo motors north' (its ID 'XYZ-9' is not registered) is "
        f"registered for {north.account.name}."
    )


def test_tester_explains_an_inactive_registration_and_a_credential_out_of_reach(
    admin_client, north
):
    registration = VendorRegistration.objects.get()
    narrowed, _ = issue_credential(north.organization, accounts=[north.other_account])

    out_of_reach = run_tester(
        admin_client, adf(vendor_id="DMN-1001"), credential=narrowed
    )
    registration.is_active = False
    registration.save()
    inactive = run_tester(
        admin_client, adf(vendor_id="DMN-1001"), organization=north.organization
    )

    assert out_of_reach.context["trial"].prospects[0].account_why == (
        f"Vendor ID 'DMN-1001' is registered for {north.account.name}, which credential "
        f"{narrowed.api_user} does not reach."
    )
    assert inactive.context["trial"].prospects[0].account_why == (
        f"Vendor ID 'DMN-1001' is registered for {north.account.name}, but the registration is inactive."
    )


def test_tester_shows_why_no_rule_matches(admin_client, tenant):
    VendorRegistrationFactory(account=tenant.account, vendor_id="DMS-1002")
    rule_with(
        tenant.account,
        ("prospect/requesttype", Operator.EQUALS, "sales"),
        name="Sales requests",
    )
    ParsingRule.objects.create(
        account=tenant.account, name="Switched off", priority=1, is_active=False
    )

    response = run_tester(
        admin_client,
        adf(vendor_id="DMS-1002", request_type="service"),
        organization=tenant.organization,
    )

    prospect = response.context["trial"].prospects[0]
    assert prospect.outcome == "No rule"
    assert rule_states(response) == [
        ("Switched off", "inactive"),
        ("Sales requests", "no match"),
    ]
    assert (
        prospect.rules[1].why
        == "prospect/requesttype equals sales does not hold: the lead has 'service'"
    )
    assert (
        "No parsing rule was found on the account for this lead."
        in prospect.answer_body
    )
    assert "<strong>none</strong>" in response.content.decode()


def test_tester_says_when_the_lead_has_no_phone(admin_client, north):
    response = run_tester(
        admin_client,
        adf(vendor_id="DMN-1001", phone=""),
        organization=north.organization,
    )

    prospect = response.context["trial"].prospects[0]
    assert (prospect.outcome, prospect.phone) == ("No phone", "")
    assert prospect.phone_why == "The lead has no phone number that can be called."
    assert "No usable phone number." in response.content.decode()


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ("<adf><prospect>", "The document is not well-formed XML."),
        (
            '<?xml version="1.0"?><!DOCTYPE adf [<!ENTITY x SYSTEM "file:///etc/passwd">]><adf>&x;</adf>',
            "The document declares a DTD, entities or an external reference; these are refused.",
        ),
    ],
)
def test_tester_shows_the_parsers_error_for_malformed_or_hostile_documents(
    admin_client, north, document, message
):
    response = run_tester(admin_client, document, organization=north.organization)

    trial = response.context["trial"]
    assert (trial.error, trial.answer_status, trial.prospects) == (message, 400, [])
    assert html.escape(message) in response.content.decode()
    assert "root:" not in response.content.decode()
    assert not Lead.objects.exists()


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ("<order><id>1</id></order>", "The document is not an ADF lead."),
        ("<adf><vendor/></adf>", "The document holds no prospect."),
    ],
)
def test_tester_answers_a_document_that_is_not_adf_with_the_422_intake_gives(
    admin_client, north, document, message
):
    response = run_tester(admin_client, document, organization=north.organization)

    trial = response.context["trial"]
    assert (trial.error, trial.answer_status, trial.prospects) == (message, 422, [])
    assert json.loads(trial.answer_body) == {
        "reason": "The document is not an ADF lead: no adf/prospect element."
    }
    assert not Lead.objects.exists()


def test_tester_needs_an_organization_or_a_credential_of_it(
    admin_client, tenant, other_tenant
):
    neither = admin_client.post(
        url("parsingrule", "tester"),
        {"xml": adf(), "organization": "", "credential": ""},
    )
    mismatched = admin_client.post(
        url("parsingrule", "tester"),
        {
            "xml": adf(),
            "organization": tenant.organization.pk,
            "credential": other_tenant.credential.pk,
        },
    )

    assert neither.context["form"].non_field_errors() == [
        "Choose an organization or a credential."
    ]
    assert mismatched.context["form"].errors["credential"] == [
        f"{other_tenant.credential.api_user} belongs to {other_tenant.organization.name}, not {tenant.organization.name}."
    ]
    assert neither.context["trial"] is None
    assert mismatched.context["trial"] is None


def test_tester_shows_each_prospect_of_a_document(admin_client, north):
    from tests.leads.factories import adf_many

    document = adf_many(
        adf(vendor_id="DMN-1001", prospect_id="P-1"),
        adf(vendor_id="DMN-1001", provider_name="DNP"),
    )

    response = run_tester(admin_client, document, organization=north.organization)

    assert [p.outcome for p in response.context["trial"].prospects] == [
        "Accepted",
        "Do not process",
    ]


def test_tester_needs_view_permission(client, tenant):
    from tests.users.factories import UserFactory

    staff = UserFactory(account=tenant.account, is_staff=True)
    client.force_login(staff)

    response = client.get(url("parsingrule", "tester"))

    assert response.status_code == 403


# --- leads


def test_lead_detail_shows_the_raw_xml_parsed_lead_and_answer_read_only(
    admin_client, tenant, django_capture_on_commit_callbacks
):
    VendorRegistrationFactory(account=tenant.account, vendor_id="DMN-1001")
    catch_all_rule(tenant.account)
    with django_capture_on_commit_callbacks():
        lead_receive(
            credential=tenant.credential,
            raw_xml=adf(
                vendor_id="DMN-1001",
                extra_customer="<whisper>Call after 5 <b>please</b></whisper>",
            ),
        )
    first = Lead.objects.get()
    with django_capture_on_commit_callbacks():
        lead_receive(credential=tenant.credential, raw_xml=adf(vendor_id="DMN-1001"))
    duplicate = Lead.objects.exclude(pk=first.pk).get()

    page = admin_client.get(url("lead", "change", first.pk)).content.decode()
    duplicate_page = admin_client.get(
        url("lead", "change", duplicate.pk)
    ).content.decode()

    assert '<pre class="raw-xml"' in page
    assert "&lt;requesttype&gt;sales&lt;/requesttype&gt;" in page
    assert "<b>please</b>" not in page
    assert "&quot;prospect_id&quot;: &quot;P-1&quot;" in page
    assert "Lead received successfully." in page
    assert reverse("admin:calls_call_change", args=[first.call_id]) in page
    assert 'name="_save"' not in page
    assert (
        f'<a href="{url("lead", "change", first.pk)}">Lead {first.pk}</a>'
        in duplicate_page
    )


def test_leads_cannot_be_added_changed_or_deleted(admin_client, tenant):
    lead_receive(credential=tenant.credential, raw_xml=adf())
    lead = Lead.objects.get()

    assert admin_client.get(url("lead", "add")).status_code == 403
    response = admin_client.post(
        url("lead", "change", lead.pk), {"reason": "edited", "outcome": "accepted"}
    )
    assert response.status_code == 403
    assert admin_client.get(url("lead", "delete", lead.pk)).status_code == 403
    lead.refresh_from_db()
    assert lead.outcome == Outcome.NO_VENDOR


def test_leads_are_found_by_prospect_and_vendor_but_not_by_raw_xml(
    admin_client, tenant
):
    lead_receive(
        credential=tenant.credential,
        raw_xml=adf(prospect_id="FIND-ME", vendor_id="V-77"),
    )
    lead_receive(
        credential=tenant.credential, raw_xml=adf(prospect_id="OTHER", vendor_id="V-78")
    )

    def found(q):
        response = admin_client.get(url("lead", "changelist"), {"q": q})
        return [lead.prospect_id for lead in response.context["cl"].result_list]

    assert found("FIND-ME") == ["FIND-ME"]
    assert found("V-78") == ["OTHER"]
    assert found("Maria") == []  # in every raw document, never searched


def test_rerun_turns_a_no_vendor_lead_into_an_accepted_one(
    admin_client, tenant, django_capture_on_commit_callbacks
):
    lead_receive(credential=tenant.credential, raw_xml=adf(vendor_id="DMN-1001"))
    lead_receive(credential=tenant.credential, raw_xml="<adf>")
    waiting, malformed = Lead.objects.order_by("id")
    assert waiting.outcome == Outcome.NO_VENDOR
    VendorRegistrationFactory(account=tenant.account, vendor_id="DMN-1001")
    catch_all_rule(tenant.account, team=tenant.teams[0])

    with django_capture_on_commit_callbacks() as callbacks:
        response = admin_client.post(
            url("lead", "changelist"),
            {"action": "rerun", "_selected_action": [waiting.pk, malformed.pk]},
        )

    assert response.status_code == 302
    waiting.refresh_from_db()
    assert waiting.outcome == Outcome.ACCEPTED
    assert waiting.account == tenant.account
    assert waiting.call is not None
    assert waiting.call.status == "QUEUED"
    assert waiting.call.team == tenant.teams[0]
    assert len(callbacks) == 1  # the call's dispatch, on commit; never run here
    assert messages_of(response) == [
        "Re-ran 2 leads: 1 accepted, 1 malformed. A lead processed before keeps its outcome; no lead is called twice."
    ]

    with django_capture_on_commit_callbacks() as again:
        admin_client.post(
            url("lead", "changelist"),
            {"action": "rerun", "_selected_action": [waiting.pk]},
        )

    assert again == []
    assert Call.objects.count() == 1


def test_tester_shows_a_lead_received_before_as_a_duplicate(
    admin_client, north, django_capture_on_commit_callbacks
):
    document = adf(vendor_id="DMN-1001")
    with django_capture_on_commit_callbacks():
        lead_receive(credential=north.credential, raw_xml=document)
    first = Lead.objects.get()

    response = run_tester(admin_client, document, credential=north.credential)

    prospect = response.context["trial"].prospects[0]
    assert (prospect.outcome, prospect.duplicate_of) == ("Duplicate", first)
    # The first answer's members in the order first written (jsonb reorders them).
    assert json.loads(prospect.answer_body) == {
        "result": "Success",
        "leadId": first.pk,
        "message": "Lead received successfully.",
        "duplicate": True,
    }
    assert list(json.loads(prospect.answer_body)) == [
        "result",
        "leadId",
        "message",
        "duplicate",
    ]
    assert url("lead", "change", first.pk) in response.content.decode()
    assert (Lead.objects.count(), Call.objects.count()) == (1, 1)


def test_tester_refuses_a_document_with_too_many_prospects(admin_client, north):
    from leads.services import MAX_PROSPECTS
    from tests.leads.factories import adf_many

    document = adf_many(*(adf(prospect_id=f"P-{n}") for n in range(MAX_PROSPECTS + 1)))

    response = run_tester(admin_client, document, organization=north.organization)

    trial = response.context["trial"]
    assert (trial.error, trial.prospects) == (
        f"The document holds more than {MAX_PROSPECTS} prospects.",
        [],
    )


def test_lead_of_a_documents_second_prospect_links_the_first(admin_client, tenant):
    from tests.leads.factories import adf_many

    lead_receive(
        credential=tenant.credential,
        raw_xml=adf_many(adf(prospect_id="P-1"), adf(prospect_id="P-2")),
    )
    first, second = Lead.objects.order_by("prospect_index")

    page = admin_client.get(url("lead", "change", second.pk)).content.decode()

    assert f'<a href="{url("lead", "change", first.pk)}">Lead {first.pk}</a>' in page


# --- times: the account's, labelled with its zone


def readonly_field(response, name: str) -> str:
    """The text of a read-only field of a change page."""
    page = lxml.html.fromstring(response.content.decode())
    row = page.find_class(f"field-{name}")[0]
    return " ".join(row.find_class("readonly")[0].text_content().split())


def test_lead_times_read_in_the_accounts_timezone_labelled_with_it(
    client, django_capture_on_commit_callbacks
):
    sign_in_support(client, tz="America/Chicago")
    organization = OrganizationFactory()
    credential, _ = issue_credential(organization)
    account = AccountFactory(organization=organization, timezone="America/Denver")
    registration = VendorRegistrationFactory(account=account)
    catch_all_rule(account)
    with django_capture_on_commit_callbacks():
        lead_receive(
            credential=credential, raw_xml=adf(vendor_id=registration.vendor_id)
        )
        lead_receive(credential=credential, raw_xml=adf(vendor_id="UNKNOWN"))
    received = datetime(2026, 11, 22, 16, 14, 3, tzinfo=UTC)
    Lead.objects.update(
        received_at=received, processed_at=received + timedelta(seconds=1)
    )
    routed = Lead.objects.get(account=account)
    unrouted = Lead.objects.get(account=None)

    listed = client.get(url("lead", "changelist"))

    cells = {
        lead.pk: " ".join(cell.text_content().split())
        for lead, cell in zip(
            listed.context["cl"].result_list,
            lxml.html.fromstring(listed.content.decode()).find_class("field-received"),
            strict=True,
        )
    }
    # A lead routed to no account reads in the signed-in user's timezone, labelled too.
    assert cells == {
        routed.pk: "2026-11-22 09:14:03 MST",
        unrouted.pk: "2026-11-22 10:14:03 CST",
    }
    detail = client.get(url("lead", "change", routed.pk))
    assert (
        readonly_field(detail, "received"),
        readonly_field(detail, "processed"),
    ) == ("2026-11-22 09:14:03 MST", "2026-11-22 09:14:04 MST")
