"""Texting on for every demo account, so ``make run`` shows it: a lead the simulator
cannot reach (the README's busy number) gets the "not reached" text, and the simulated
lead replies. A step of ``seed_demo`` (its ``SEED_STEPS``); safe to run again: an
account's settings are created once and never changed afterwards (support's changes stay)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from texting.models import TextingSettings

if TYPE_CHECKING:
    from demo.management.commands.seed_demo import DemoData


def seed_demo(demo: DemoData) -> None:
    for demo_org in demo.organizations:
        for demo_account in demo_org.accounts:
            account = demo_account.account
            # The demo's leads may arrive at any hour: the quiet hours are the default
            # 08:00-21:00 in production, here the whole day.
            _, created = TextingSettings.objects.get_or_create(
                account=account,
                defaults={
                    "enabled": True,
                    "quiet_start": "00:00",
                    "quiet_end": "23:59",
                },
            )
            if created:
                demo.log(f"{account.name}: texting on (from {account.caller_id})")
