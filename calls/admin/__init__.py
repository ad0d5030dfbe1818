"""Support's screens for calls and dialing settings.

Calls are read-only here: the pipeline (``calls.services``) owns every field of a call.
The one thing support does to calls, cancelling those not connected yet, goes through
``calls.services.call_cancel``.

Importing this package registers them all: ``calls`` (calls, attempts, recordings) and
``dialing`` (dialing settings, on their own and on the account's page).
"""

from calls.admin.calls import CallAdmin
from calls.admin.dialing import AccountWithDialingAdmin, DialingSettingsAdmin

__all__ = ["AccountWithDialingAdmin", "CallAdmin", "DialingSettingsAdmin"]
