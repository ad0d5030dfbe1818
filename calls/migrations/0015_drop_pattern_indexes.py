"""Drop the ``varchar_pattern_ops`` copies of the indexes of calls_call.status and
calls_callattempt.provider_id (why: leads/migrations/0004_drop_pattern_indexes.py)."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("calls", "0014_call_account_source_index")]

    operations = [
        migrations.RunSQL(
            [
                "DROP INDEX IF EXISTS calls_call_status_43801aaf_like",
                "DROP INDEX IF EXISTS calls_callattempt_provider_id_82f7984c_like",
            ],
            reverse_sql=migrations.RunSQL.noop,
        ),
    ]
