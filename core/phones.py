"""Phone numbers: every interface stores and compares them in E.164."""

import phonenumbers


def to_e164(value: str, region: str | None = None) -> str | None:
    """``value`` as E.164 when it is a valid number, read in ``region`` ("US") when it is
    national (``None``: only full international numbers); else ``None``."""
    try:
        number = phonenumbers.parse(value, region)
    except phonenumbers.NumberParseException:
        return None
    if not phonenumbers.is_valid_number(number):
        return None
    return phonenumbers.format_number(number, phonenumbers.PhoneNumberFormat.E164)
