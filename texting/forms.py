"""The reply form of the call page's thread (the reply service checks everything again)."""

from __future__ import annotations

from django import forms

from texting.services import MAX_BODY


class ReplyForm(forms.Form):
    body = forms.CharField(
        label="Reply to the lead",
        max_length=MAX_BODY,
        strip=True,
        widget=forms.Textarea(attrs={"rows": 3}),
        error_messages={"required": "Write the text first."},
    )
