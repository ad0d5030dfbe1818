"""CRM write-back on for every demo account, so ``make run`` shows it: each call's outcome
goes to the account's demo CRM address as an ADF document (on the console unless
EMAIL_URL names a mail server), and its managers hear of missed leads. A step of
``seed_demo`` (its ``SEED_STEPS``); safe to run again: an account's settings are created
once and never changed afterwards (support's changes stay)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.utils.text import slugify

from notify.models import CrmSendOn, NotifySettings

if TYPE_CHECKING:
    from demo.management.commands.seed_demo import DemoData


def seed_demo(demo: DemoData) -> None:
    for demo_org in demo.organizations:
        for demo_account in demo_org.accounts:
            account = demo_account.account
            address = f"leads@{slugify(account.name)}.crm.example"
            _, created = NotifySettings.objects.get_or_create(
                account=account,
                defaults={"crm_addresses": address, "crm_send_on": CrmSendOn.BOTH},
            )
            if created:
                demo.log(f"{account.name}: call outcomes written back to {address}")
