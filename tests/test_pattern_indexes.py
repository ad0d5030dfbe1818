"""The tables written for every lead and call carry no ``varchar_pattern_ops`` index.

Django's PostgreSQL backend adds one beside the index of every indexed or unique text
column, for ``LIKE 'prefix%'`` searches that nothing runs on these columns; each row
written paid for it. The migrations named ``*_drop_pattern_indexes`` drop them; the plain
indexes the columns were declared with stay."""

import pytest
from django.db import connection

from calls.models import Call, CallAttempt
from leads.models import Lead
from notify.models import Message
from texting.models import Text
from webhooks.models import WebhookEvent

pytestmark = pytest.mark.django_db

# Each model written as a lead becomes a call, with its indexed or unique text columns.
HOT = {
    Lead: ["outcome", "dedupe_key"],
    Call: ["status"],
    CallAttempt: ["provider_id"],
    Message: ["key", "status"],
    Text: ["provider_id"],
    WebhookEvent: ["public_id"],
}


def _indexes(table: str) -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT indexdef FROM pg_indexes WHERE schemaname = current_schema() "
            "AND tablename = %s",
            [table],
        )
        return [row[0] for row in cursor.fetchall()]


@pytest.mark.parametrize("model", list(HOT), ids=lambda model: model.__name__)
def test_no_pattern_index_and_every_plain_index_kept(model):
    indexes = _indexes(model._meta.db_table)
    assert not [index for index in indexes if "pattern_ops" in index]
    for name in HOT[model]:
        column = model._meta.get_field(name).column
        assert f"USING btree ({column})" in " ".join(indexes), (name, indexes)


def test_every_hot_text_column_with_an_index_is_listed():
    # A column indexed later gets its pattern copy back: list it here and drop it too.
    for model, names in HOT.items():
        indexed = [
            field.name
            for field in model._meta.concrete_fields
            if field.get_internal_type() in {"CharField", "SlugField", "TextField"}
            and (field.db_index or field.unique)  # type: ignore[attr-defined]  # not in the stubs
        ]
        assert sorted(indexed) == sorted(names), model.__name__
