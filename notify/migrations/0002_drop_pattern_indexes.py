"""Drop the ``varchar_pattern_ops`` copies of the indexes of notify_message.key and
notify_message.status (why: leads/migrations/0004_drop_pattern_indexes.py)."""

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
