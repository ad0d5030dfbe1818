"""Drop the ``varchar_pattern_ops`` copies of the indexes of texting_text.provider_id
(why: leads/migrations/0004_drop_pattern_indexes.py)."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("texting", "0002_alter_text_purpose")]

    operations = [
        migrations.RunSQL(
            [
                "DROP INDEX IF EXISTS texting_text_provider_id_35f6629b_like",
            ],
            reverse_sql=migrations.RunSQL.noop,
        ),
    ]
