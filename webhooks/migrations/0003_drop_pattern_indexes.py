"""Drop the ``varchar_pattern_ops`` copies of the indexes of
webhooks_webhookevent.public_id (why: leads/migrations/0004_drop_pattern_indexes.py)."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("webhooks", "0002_alter_webhookevent_type")]

    operations = [
        migrations.RunSQL(
            [
                "DROP INDEX IF EXISTS webhooks_webhookevent_public_id_5d79d3c3_like",
            ],
            reverse_sql=migrations.RunSQL.noop,
        ),
    ]
