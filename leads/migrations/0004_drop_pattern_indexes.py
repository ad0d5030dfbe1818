"""Drop the ``varchar_pattern_ops`` copies of the indexes of leads_lead.outcome and
leads_lead.dedupe_key (the calls, notify, texting and webhooks apps'
``*_drop_pattern_indexes`` migrations drop those of their tables). Django's PostgreSQL
backend adds such a copy beside the index of every indexed or unique text column. They
serve only ``LIKE 'prefix%'`` searches, which nothing runs on these columns (the admin's
searches are ``icontains``, which no b-tree serves), yet every row written to these
tables paid for them. The plain index stays. SQLite has no such indexes (``IF EXISTS``);
going back leaves them dropped. ``tests/test_pattern_indexes.py`` keeps them from coming
back."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("leads", "0003_lead_outcome_not_adf")]

    operations = [
        migrations.RunSQL(
            [
                "DROP INDEX IF EXISTS leads_lead_outcome_9df45b05_like",
                "DROP INDEX IF EXISTS leads_lead_dedupe_key_2b11d3ca_like",
            ],
            reverse_sql=migrations.RunSQL.noop,
        ),
    ]
