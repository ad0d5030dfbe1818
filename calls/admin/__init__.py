"""Support's screens for calls and dialing settings.

Calls are read-only here: the pipeline (``calls.services``) owns every field of a call.
The one thing support does to calls, cancelling those not connected yet, goes through
``calls.services.call_cancel``.

Importing this package registers them all but the call admin: ``calls`` (calls, attempts,
recordings) and ``dialing`` (dialing settings, on their own and the account page's inline).
``backoffice.admin`` registers the call admin and the account admin, with every app's inlines.
"""

from calls.admin.calls import CallAdmin
from calls.admin.dialing import DialingSettingsAdmin, DialingSettingsInline

__all__ = ["CallAdmin", "DialingSettingsAdmin", "DialingSettingsInline"]
