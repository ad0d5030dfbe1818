"""Telephony providers behind one small interface (``base.Provider``).

The pipeline (``calls.services``) asks a provider to dial and hang up legs; providers
report what happened as provider-neutral ``Event``s to ``calls.services.call_event``,
which answers with an ``Instruction`` (prompt the agent, connect the lead, hang up).
"""

from __future__ import annotations

from django.conf import settings
from django.utils.module_loading import import_string

from calls.telephony.base import Provider

PROVIDERS = {
    "simulator": "calls.telephony.simulator.SimulatorProvider",
    "twilio": "calls.telephony.twilio.TwilioProvider",
}


def provider_named(name: str) -> Provider:
    """The provider registered under ``name``."""
    provider: Provider = import_string(PROVIDERS[name])()
    return provider


def provider_for(*, is_test: bool) -> Provider:
    """The configured provider; a test account's calls always go to the simulator."""
    return provider_named("simulator" if is_test else settings.TELEPHONY_PROVIDER)
