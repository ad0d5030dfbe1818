"""Drop the ``varchar_pattern_ops`` copies PostgreSQL's backend adds beside the index of
an indexed or unique text column. They serve only ``LIKE 'prefix%'`` searches, which
nothing runs on these columns (the admin's searches are ``icontains``, which no b-tree
serves), yet every row written to these tables paid for them. The plain index stays.
SQLite has no such indexes (``IF EXISTS``); going back leaves them dropped.
``tests/test_pattern_indexes.py`` keeps them from coming back."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("notify", "0001_initial")]

    operations = [
        migrations.RunSQL(
            [
                "DROP INDEX IF EXISTS notify_message_key_824bd6b4_like",
                "DROP INDEX IF EXISTS notify_message_status_0a337f57_like",
            ],
            reverse_sql=migrations.RunSQL.noop,
        ),
    ]
