from typing import Any

import factory

from accounts.models import Account
from leads.models import (
    Operator,
    ParsingRule,
    RuleAction,
    RuleCondition,
    VendorRegistration,
)
from tests.accounts.factories import AccountFactory
from tests.factories import ModelFactory


class VendorRegistrationFactory(ModelFactory[VendorRegistration]):
    class Meta:
        model = VendorRegistration

    account = factory.SubFactory(AccountFactory)
    organization = factory.SelfAttribute("account.organization")
    vendor_id = factory.Sequence(lambda n: f"V-{1000 + n}")
    vendor_name = factory.Sequence(lambda n: f"Vendor {n}")


class ParsingRuleFactory(ModelFactory[ParsingRule]):
    class Meta:
        model = ParsingRule

    account = factory.SubFactory(AccountFactory)
    name = factory.Sequence(lambda n: f"Rule {n}")
    priority = 100  # ties run in creation order
    action = RuleAction.PROCESS


class RuleConditionFactory(ModelFactory[RuleCondition]):
    class Meta:
        model = RuleCondition

    rule = factory.SubFactory(ParsingRuleFactory)
    field = "prospect/requesttype"
    operator = Operator.EQUALS
    value = "sales"


def adf(
    *,
    prospect_id: str = "P-1",
    source: str = "CRM",
    vendor_id: str = "V-1000",
    vendor_name: str = "Vendor 0",
    phone: str = "303-555-0123",
    request_type: str = "sales",
    provider_name: str = "Web Form",
    extra_customer: str = "",
) -> str:
    """A small, realistic ADF document."""
    id_element = (
        f'<id sequence="1" source="{source}">{prospect_id}</id>' if prospect_id else ""
    )
    phone_element = f'<phone type="voice">{phone}</phone>' if phone else ""
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<?adf version="1.0"?>
<adf>
  <prospect status="new">
    {id_element}
    <requestdate>2026-11-20T10:15:00</requestdate>
    <requesttype>{request_type}</requesttype>
    <vehicle interest="buy" status="new">
      <year>2025</year><make>Toyota</make><model>Camry</model>
      <bodystyle>Sedan</bodystyle><comments>Blue please</comments>
    </vehicle>
    <vehicle interest="trade-in" status="used">
      <year>2015</year><make>Honda</make><model>Civic</model>
    </vehicle>
    <customer>
      <contact>
        <name part="first">Maria</name><name part="last">Lopez</name>
        <email>maria@example.com</email>
        {phone_element}
      </contact>
      <comments>Can I test drive Saturday?</comments>
      {extra_customer}
    </customer>
    <vendor>
      <id sequence="1" source="dealerId">{vendor_id}</id>
      <vendorname>{vendor_name}</vendorname>
    </vendor>
    <provider><name part="full">{provider_name}</name><url>https://crm.example.com/lead/1</url></provider>
  </prospect>
</adf>"""


def adf_many(*documents: str) -> str:
    """One ADF document holding the prospects of several `adf()` documents, in order."""
    import re

    prospects = []
    for document in documents:
        prospect = re.search(r"<prospect\b.*?</prospect>", document, re.DOTALL)
        assert prospect is not None, document
        prospects.append(prospect.group(0))
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n<adf>\n'
        + "\n".join(prospects)
        + "\n</adf>"
    )


def catch_all_rule(account: Account, **kwargs: Any) -> ParsingRule:
    """A rule without conditions (it matches every lead) for the account."""
    kwargs.setdefault("name", "Everything else")
    kwargs.setdefault("priority", 1000)
    return ParsingRuleFactory(account=account, **kwargs)


def rule_with(
    account: Account, *conditions: tuple[str, str, str], **kwargs: Any
) -> ParsingRule:
    """A rule whose conditions are (field, operator, value) triples, all of which must hold."""
    rule = ParsingRuleFactory(account=account, **kwargs)
    for field, operator, value in conditions:
        RuleConditionFactory(rule=rule, field=field, operator=operator, value=value)
    return rule
