"""Demo data for lead intake (CONTRACT.md, "Demo data: manage.py seed_demo"): a vendor
registration for every demo account and the parsing rules the contract lists.

A step of ``seed_demo`` (its ``SEED_STEPS``); safe to run again: registrations are found
by account and vendor ID, rules by account and name, and a rule's conditions are replaced
only when they differ from the ones below.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from django.template.defaultfilters import pluralize

from leads.models import (
    Operator,
    ParsingRule,
    RuleAction,
    RuleCondition,
    VendorRegistration,
)
from leads.services import routing

if TYPE_CHECKING:
    from demo.management.commands.seed_demo import DemoAccount, DemoData


@dataclass(frozen=True)
class RuleSpec:
    name: str
    priority: int
    action: str = RuleAction.PROCESS
    team: str | None = None  # a team name of the account
    conditions: tuple[tuple[str, str, str], ...] = ()  # (field, operator, value)


# Organization 1's first account, in order (CONTRACT.md). Demo rules set no source label.
FIRST_ACCOUNT_RULES = (
    RuleSpec(
        "Do not process DNP leads",
        10,
        RuleAction.DO_NOT_PROCESS,
        conditions=(("provider/name", Operator.EQUALS, "DNP"),),
    ),
    RuleSpec(
        "Service requests",
        20,
        team="Service",
        conditions=(("prospect/requesttype", Operator.EQUALS, "service"),),
    ),
    RuleSpec("Everything else", 30, team="Sales"),
)
# Organization 1's second account: one rule only.
SECOND_ACCOUNT_RULES = (
    RuleSpec(
        "Sales requests",
        10,
        conditions=(("prospect/requesttype", Operator.EQUALS, "sales"),),
    ),
)
# The contract lists rules for organization 1 only. Without a rule every lead of the other
# organizations' accounts would be refused ("no parsing rule"), so they get a catch-all
# routed to Sales: a demo lead there is always called.
OTHER_ACCOUNT_RULES = (RuleSpec("Everything else", 10, team="Sales"),)


def seed_demo(demo: DemoData) -> None:
    """Register every demo account's vendor and give each account its parsing rules."""
    for org_index, demo_org in enumerate(demo.organizations):
        for account_index, demo_account in enumerate(demo_org.accounts):
            _register_vendor(demo_account)
            if org_index == 0:
                rules = (
                    FIRST_ACCOUNT_RULES if account_index == 0 else SECOND_ACCOUNT_RULES
                )
            else:
                rules = OTHER_ACCOUNT_RULES
            for spec in rules:
                _rule(demo_account, spec)
            demo.log(
                f"{demo_account.account.name}: vendor {demo_account.vendor_id}, "
                f"{len(rules)} parsing rule{pluralize(len(rules))}"
            )


def _register_vendor(demo_account: DemoAccount) -> None:
    """The account's registration of its demo vendor ID; the JSON then shows the real row."""
    account = demo_account.account
    registration, _ = VendorRegistration.objects.get_or_create(
        account=account,
        vendor_id=demo_account.vendor_id,
        defaults={
            "organization_id": account.organization_id,
            "vendor_name": demo_account.vendor_name,
        },
    )
    demo_account.vendor_id = registration.vendor_id
    demo_account.vendor_name = registration.vendor_name


def _rule(demo_account: DemoAccount, spec: RuleSpec) -> ParsingRule:
    team = demo_account.teams[spec.team] if spec.team else None
    rule, _ = ParsingRule.objects.update_or_create(
        account=demo_account.account,
        name=spec.name,
        defaults={
            "priority": spec.priority,
            "action": spec.action,
            "team": team,
            "is_active": True,
            "source_label": "",
            "department": "",
            "lead_type": "",
        },
    )
    have = list(
        rule.conditions.order_by("id").values_list("field", "operator", "value")
    )
    if have != [tuple(str(part) for part in c) for c in spec.conditions]:
        rule.conditions.all().delete()
        RuleCondition.objects.bulk_create(
            RuleCondition(rule=rule, field=field, operator=operator, value=value)
            for field, operator, value in spec.conditions
        )
        routing.changed()  # bulk_create sends no signal
    return rule
