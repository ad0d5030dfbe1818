"""The rule engine: which conditions hold for a parsed lead, and which rule a lead matches."""

import pytest

from leads.adf import FIELDS, parse_adf
from leads.models import Operator, ParsingRule, RuleCondition
from leads.rules import condition_holds, rule_verdict, rules_evaluate
from tests.accounts.factories import AccountFactory
from tests.leads.factories import ParsingRuleFactory, RuleConditionFactory, rule_with

# The trade-in comes first on purpose: vehicle/* must still read the buy vehicle.
RICH = parse_adf(
    """<adf><prospect status="resend">
  <id sequence="1" source="CRM">P-77</id>
  <requestdate>2026-11-20T10:15:00</requestdate>
  <requesttype>sales</requesttype>
  <vehicle interest="trade-in"><year>2015</year><make>Honda</make><model>Civic</model>
    <vin>TRADEVIN</vin><odometer units="km" status="original">90000</odometer></vehicle>
  <vehicle interest="buy" status="new"><year>2025</year><make>Toyota</make><model>Camry</model>
    <vin>BUYVIN</vin><license_plate>ABC123</license_plate><stock>S-1</stock><trim>XLE</trim>
    <doors>4</doors><bodystyle>Sedan</bodystyle><transmission>Automatic</transmission>
    <fueltype>Hybrid</fueltype><type>car</type><odometer units="km">12</odometer>
    <price type="quote" currency="EUR">31000</price>
    <colorcombination><interiorcolor>Black</interiorcolor><exteriorcolor>Blue</exteriorcolor></colorcombination>
    <comments>Blue please</comments></vehicle>
  <customer>
    <contact><name part="full">Maria Lopez</name><email>maria@example.com</email>
      <phone type="cellphone">303-555-0123</phone><language>es</language>
      <address><street line="1">1 Main St</street><city>Denver</city><regioncode>CO</regioncode>
        <postalcode>80202</postalcode><country>US</country></address></contact>
    <comments>Test drive?</comments><whisper>Call after 5</whisper>
  </customer>
  <vendor><id sequence="1" source="dealerId">DLR-42</id><vendorname>Front Range Toyota</vendorname>
    <contact><name part="full">Sam Seller</name></contact></vendor>
  <provider><id source="bucket">B-7</id><name part="full">Web Form</name><service>Test drive</service>
    <url>https://crm.example.com/lead/1</url></provider>
  <lms><name part="full">DealerSocket</name></lms>
</prospect></adf>"""
)[0]
BARE = parse_adf("<adf><prospect></prospect></adf>")[0]

RICH_VALUES = {
    "prospect/id": "P-77",
    "prospect/id@source": "CRM",
    "prospect@status": "resend",
    "prospect/requestdate": "2026-11-20T10:15:00",
    "prospect/requesttype": "sales",
    "vehicle/status": "new",
    "vehicle/year": "2025",
    "vehicle/make": "Toyota",
    "vehicle/model": "Camry",
    "vehicle/vin": "BUYVIN",
    "vehicle/license_plate": "ABC123",
    "vehicle/stock": "S-1",
    "vehicle/trim": "XLE",
    "vehicle/doors": "4",
    "vehicle/bodystyle": "Sedan",
    "vehicle/transmission": "Automatic",
    "vehicle/fueltype": "Hybrid",
    "vehicle/type": "car",
    "vehicle/odometer": "12",
    "vehicle/price": "31000",
    "vehicle/interiorcolor": "Black",
    "vehicle/exteriorcolor": "Blue",
    "vehicle/comments": "Blue please",
    "tradein/year": "2015",
    "tradein/make": "Honda",
    "tradein/model": "Civic",
    "tradein/vin": "TRADEVIN",
    "tradein/odometer": "90000",
    "customer/name": "Maria Lopez",
    "customer/email": "maria@example.com",
    "customer/phone": "303-555-0123",
    "customer/phone@type": "cellphone",
    "customer/language": "es",
    "customer/address/street": "1 Main St",
    "customer/address/city": "Denver",
    "customer/address/regioncode": "CO",
    "customer/address/postalcode": "80202",
    "customer/address/country": "US",
    "customer/comments": "Test drive?",
    "customer/whisper": "Call after 5",
    "vendor/id": "DLR-42",
    "vendor/id@source": "dealerId",
    "vendor/vendorname": "Front Range Toyota",
    "vendor/contact/name": "Sam Seller",
    "provider/id": "B-7",
    "provider/id@source": "bucket",
    "provider/name": "Web Form",
    "provider/service": "Test drive",
    "provider/url": "https://crm.example.com/lead/1",
    "lms/name": "DealerSocket",
}


def condition(field, operator, value=""):
    """An unsaved condition: condition_holds needs no database."""
    return RuleCondition(field=field, operator=operator, value=value)


# --- conditions -------------------------------------------------------------------------------


def test_every_field_path_is_covered_here():
    """A new FIELDS path must be added to RICH_VALUES (and so to the tests below)."""
    assert set(RICH_VALUES) == set(FIELDS)


@pytest.mark.parametrize(("field", "value"), sorted(RICH_VALUES.items()))
def test_every_field_path_reads_its_value(field, value):
    assert RICH.field(field) == value
    assert BARE.field(field) == ""


@pytest.mark.parametrize(("field", "value"), sorted(RICH_VALUES.items()))
def test_equals_holds_on_every_field_path_whatever_the_case(field, value):
    assert condition_holds(condition(field, Operator.EQUALS, value.upper()), RICH)
    assert condition_holds(condition(field, Operator.EQUALS, value.lower()), RICH)
    assert not condition_holds(condition(field, Operator.EQUALS, value + "x"), RICH)
    assert not condition_holds(condition(field, Operator.EQUALS, value), BARE)


@pytest.mark.parametrize("field", sorted(FIELDS))
def test_present_and_absent_on_every_field_path(field):
    assert condition_holds(condition(field, Operator.PRESENT), RICH)
    assert not condition_holds(condition(field, Operator.ABSENT), RICH)
    assert condition_holds(condition(field, Operator.ABSENT), BARE)
    assert not condition_holds(condition(field, Operator.PRESENT), BARE)


@pytest.mark.parametrize(
    ("field", "operator", "value", "holds"),
    [
        # equals: the whole value, case-insensitively, surrounding spaces ignored
        ("prospect/requesttype", Operator.EQUALS, "SALES", True),
        ("prospect/requesttype", Operator.EQUALS, "  Sales  ", True),
        ("prospect/requesttype", Operator.EQUALS, "sale", False),
        ("vendor/vendorname", Operator.EQUALS, "front range toyota", True),
        ("vendor/vendorname", Operator.EQUALS, "Front Range", False),
        ("tradein/make", Operator.EQUALS, "HONDA", True),
        ("vehicle/make", Operator.EQUALS, "honda", False),
        ("prospect@status", Operator.EQUALS, "Resend", True),
        ("customer/phone@type", Operator.EQUALS, "CellPhone", True),
        # contains
        ("provider/name", Operator.CONTAINS, "WEB", True),
        ("provider/name", Operator.CONTAINS, "b f", True),
        ("provider/name", Operator.CONTAINS, "phone", False),
        ("lms/name", Operator.CONTAINS, "socket", True),
        ("customer/comments", Operator.CONTAINS, "TEST DRIVE", True),
        ("vehicle/comments", Operator.CONTAINS, "red", False),
        # starts_with
        ("vehicle/make", Operator.STARTS_WITH, "toy", True),
        ("vehicle/make", Operator.STARTS_WITH, "TOYOTA", True),
        ("vehicle/make", Operator.STARTS_WITH, "oyota", False),
        ("customer/email", Operator.STARTS_WITH, "MARIA@", True),
        ("tradein/model", Operator.STARTS_WITH, "civ", True),
        ("tradein/model", Operator.STARTS_WITH, "camry", False),
        # regex: searched anywhere, case-insensitively
        ("customer/email", Operator.REGEX, r"^MARIA@example\.COM$", True),
        ("customer/email", Operator.REGEX, r"example", True),
        ("customer/email", Operator.REGEX, r"^example", False),
        ("vehicle/year", Operator.REGEX, r"^20(2[4-9])$", True),
        ("tradein/year", Operator.REGEX, r"^20(2[4-9])$", False),
        ("provider/url", Operator.REGEX, r"CRM\.EXAMPLE\.com/lead/\d+", True),
        ("customer/address/postalcode", Operator.REGEX, r"^8\d{4}$", True),
        # present and absent ignore the value
        ("customer/whisper", Operator.PRESENT, "anything", True),
        ("customer/whisper", Operator.ABSENT, "", False),
        ("vendor/contact/name", Operator.PRESENT, "", True),
    ],
)
def test_each_operator(field, operator, value, holds):
    assert condition_holds(condition(field, operator, value), RICH) is holds


@pytest.mark.parametrize("pattern", ["(unclosed", "[a-", "*make"])
def test_a_broken_regex_matches_nothing(pattern):
    assert not condition_holds(condition("vehicle/make", Operator.REGEX, pattern), RICH)
    assert not condition_holds(condition("vehicle/make", Operator.REGEX, pattern), BARE)


def test_empty_value_with_text_operators():
    """An empty value: equals holds only for an empty field; contains and starts_with always hold."""
    assert condition_holds(condition("vehicle/vin", Operator.EQUALS, ""), BARE)
    assert not condition_holds(condition("vehicle/vin", Operator.EQUALS, ""), RICH)
    assert condition_holds(condition("vehicle/vin", Operator.CONTAINS, ""), RICH)
    assert condition_holds(condition("vehicle/vin", Operator.STARTS_WITH, ""), BARE)


def test_vehicle_fields_read_the_buy_vehicle_and_tradein_fields_the_trade_in():
    only_trade_in = parse_adf(
        '<prospect><vehicle interest="trade-in"><make>Ford</make></vehicle></prospect>'
    )[0]

    assert condition_holds(
        condition("tradein/make", Operator.EQUALS, "ford"), only_trade_in
    )
    assert condition_holds(condition("vehicle/make", Operator.ABSENT), only_trade_in)
    assert condition_holds(condition("vehicle/status", Operator.ABSENT), only_trade_in)


def test_vehicle_status_defaults_to_used():
    lead = parse_adf("<prospect><vehicle><make>Ford</make></vehicle></prospect>")[0]

    assert condition_holds(condition("vehicle/status", Operator.EQUALS, "USED"), lead)


def test_customer_phone_skips_fax_and_pager():
    lead = parse_adf(
        "<prospect><customer><contact>"
        '<phone type="fax">303-555-0100</phone><phone type="pager">303-555-0101</phone>'
        "</contact></customer></prospect>"
    )[0]

    assert condition_holds(condition("customer/phone", Operator.ABSENT), lead)
    assert condition_holds(condition("customer/phone@type", Operator.ABSENT), lead)


# --- rules ------------------------------------------------------------------------------------


@pytest.fixture
def account(db):
    return AccountFactory()


def test_no_rules_match_nothing(account):
    assert rules_evaluate([], RICH) == (None, [])


def test_a_rule_without_conditions_matches_every_lead(account):
    rule = ParsingRuleFactory(account=account)

    for lead in (RICH, BARE):
        matched, verdicts = rules_evaluate([rule], lead)
        assert matched == rule
        assert [(v.rule, v.matched, v.why) for v in verdicts] == [
            (rule, True, "no conditions: matches all")
        ]


def test_every_condition_of_a_rule_must_hold(account):
    both = rule_with(
        account,
        ("vehicle/make", Operator.EQUALS, "toyota"),
        ("tradein/make", Operator.EQUALS, "honda"),
    )
    one_fails = rule_with(
        account,
        ("vehicle/make", Operator.EQUALS, "toyota"),
        ("tradein/make", Operator.EQUALS, "ford"),
    )

    assert rule_verdict(both, RICH).matched is True
    assert rule_verdict(both, RICH).why == "every condition holds"
    verdict = rule_verdict(one_fails, RICH)
    assert verdict.matched is False
    assert verdict.why == "tradein/make equals ford does not hold: the lead has 'Honda'"


def test_verdict_names_an_empty_field(account):
    rule = rule_with(account, ("vehicle/make", Operator.PRESENT, ""))

    assert rule_verdict(rule, BARE).why == (
        "vehicle/make present does not hold: the lead has '(empty)'"
    )


def test_rules_run_in_priority_order_lower_first(account):
    late = ParsingRuleFactory(account=account, priority=20)
    early = rule_with(
        account, ("prospect/requesttype", Operator.EQUALS, "sales"), priority=10
    )
    earliest_but_unmet = rule_with(
        account, ("prospect/requesttype", Operator.EQUALS, "service"), priority=5
    )

    matched, verdicts = rules_evaluate([late, early, earliest_but_unmet], RICH)

    assert matched == early
    assert [(v.rule, v.matched) for v in verdicts] == [
        (earliest_but_unmet, False),
        (early, True),
    ]


def test_equal_priorities_run_in_creation_order(account):
    first = ParsingRuleFactory(account=account, priority=10)
    second = ParsingRuleFactory(account=account, priority=10)

    assert rules_evaluate([second, first], RICH)[0] == first


def test_an_inactive_rule_is_skipped(account):
    inactive = ParsingRuleFactory(account=account, priority=1, is_active=False)
    active = ParsingRuleFactory(account=account, priority=2)

    matched, verdicts = rules_evaluate([inactive, active], RICH)

    assert matched == active
    assert [(v.rule, v.matched, v.why) for v in verdicts] == [
        (inactive, False, "inactive"),
        (active, True, "no conditions: matches all"),
    ]


def test_no_matching_rule_gives_a_verdict_for_each(account):
    rules = [
        rule_with(account, ("vehicle/make", Operator.EQUALS, "ford"), priority=1),
        ParsingRuleFactory(account=account, priority=2, is_active=False),
    ]

    matched, verdicts = rules_evaluate(rules, RICH)

    assert matched is None
    assert [(v.rule, v.matched) for v in verdicts] == [
        (rules[0], False),
        (rules[1], False),
    ]


def test_conditions_are_read_from_the_database(account):
    rule = ParsingRuleFactory(account=account)
    RuleConditionFactory(
        rule=rule, field="lms/name", operator=Operator.CONTAINS, value="SOCKET"
    )

    fresh = ParsingRule.objects.get(pk=rule.pk)

    assert rules_evaluate([fresh], RICH)[0] == fresh
    assert rules_evaluate([fresh], BARE)[0] is None
