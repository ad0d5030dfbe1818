"""An account's do-not-call list, uploaded by staff in the admin: a CSV (the number in the
first column) or one number per line, each read as E.164 in the account's country. Every
line is checked first: one bad line reports them all and records nothing; a good list
becomes one call revocation per number (source "do-not-call list"), in one statement."""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass

from django import forms
from django.contrib.auth.base_user import AbstractBaseUser
from django.db import transaction

from accounts.models import Account
from consent.models import ConsentEvent, Source
from consent.services import consent_revoke_many
from core.phones import to_e164

MOST_BYTES = 512 * 1024
MOST_NUMBERS = 5000
MOST_REPORTED = 50
HEADERS = {"phone", "phone number", "number", "telephone", "mobile", "cell"}


@dataclass(frozen=True)
class Reading:
    numbers: list[str]
    problems: list[str]


def numbers_read(text: str, *, region: str) -> Reading:
    """The list's numbers (E.164, each once, in order) and its bad lines, numbered from 1.
    Blank lines and a first line that is a column title are passed over."""
    numbers: dict[str, None] = {}
    problems: list[str] = []
    for at, row in enumerate(csv.reader(io.StringIO(text)), start=1):
        cell = (row[0] if row else "").strip().strip("\ufeff").strip()
        if not cell or (at == 1 and cell.lower() in HEADERS):
            continue
        number = to_e164(cell[:40], region)
        if number is None:
            problems.append(f'Line {at}: "{cell[:40]}" is not a phone number.')
        else:
            numbers[number] = None
    if len(numbers) > MOST_NUMBERS:
        problems.insert(
            0,
            f"The list has {len(numbers)} numbers; at most {MOST_NUMBERS} at a time: "
            "split it.",
        )
    return Reading(list(numbers), problems)


class DoNotCallForm(forms.Form):
    account = forms.ModelChoiceField(
        queryset=Account.objects.select_related("organization").order_by("name"),
        help_text="The account whose lead calls stop; its country reads national numbers.",
    )
    file = forms.FileField(
        required=False,
        help_text="A CSV (the number in the first column) or a text file, one a line.",
    )
    numbers = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 8}),
        help_text="Or paste the numbers, one a line.",
    )
    note = forms.CharField(
        required=False,
        max_length=500,
        help_text="Where the list comes from (kept with each entry).",
    )

    def clean(self) -> dict:
        cleaned = super().clean() or {}
        upload = cleaned.get("file")
        text = str(cleaned.get("numbers") or "")
        if upload is not None:
            if upload.size > MOST_BYTES:
                raise forms.ValidationError(
                    f"The file is over {MOST_BYTES // 1024} KiB: split it."
                )
            raw = upload.read()
            try:
                text = raw.decode("utf-8-sig")
            except UnicodeDecodeError:
                text = raw.decode("latin-1")
        if not text.strip():
            raise forms.ValidationError("Upload a file or paste the numbers.")
        account = cleaned.get("account")
        if account is None:
            return cleaned
        reading = numbers_read(text, region=account.country_code)
        if reading.problems:
            shown = reading.problems[:MOST_REPORTED]
            more = len(reading.problems) - len(shown)
            if more:
                shown.append(f"... and {more} more.")
            raise forms.ValidationError(
                ["Nothing was recorded. Correct the list and upload it again.", *shown]
            )
        if not reading.numbers:
            raise forms.ValidationError("The list has no numbers.")
        cleaned["reading"] = reading
        return cleaned


@transaction.atomic
def do_not_call_list_record(
    *, account: Account, numbers: list[str], note: str, by: AbstractBaseUser
) -> list[ConsentEvent]:
    """One call revocation of the account per number: its lead calls to them end CANCEL
    and click-to-call is refused, until the person sends a new lead."""
    return consent_revoke_many(
        account=account,
        phones=numbers,
        source=Source.DO_NOT_CALL,
        detail=note or "Do-not-call list",
        by=by,
    )
