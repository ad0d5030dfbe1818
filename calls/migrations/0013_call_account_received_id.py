"""An account's calls by (received_at, id), replacing the index on (account, received_at):
the export reads an account's calls in that order from it without sorting them first."""

from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0003_key_last_used_at"),
        ("calls", "0012_alter_call_origin"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddIndex(
            model_name="call",
            index=models.Index(
                fields=["account", "received_at", "id"], name="call_account_received"
            ),
        ),
        migrations.RemoveIndex(
            model_name="call",
            name="calls_call_account_4f63b2_idx",
        ),
    ]
