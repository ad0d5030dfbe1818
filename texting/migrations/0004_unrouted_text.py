"""Issue 36 part 4, "one sending number, one organization": the place a lead's text to a
number of several organizations is kept (``UnroutedText``, since a ``Text`` belongs to an
account's thread), and a report of the numbers shared across organizations today.

The rule is not imposed on stored rows here: a migration cannot refuse data it finds, and
which account should keep a shared number is support's decision. The conflicts are
computed live (``texting.selectors.number_conflicts``) and listed in the admin overview;
while one remains nothing is texted from the number and texts to it land here. This
migration only names them once, on ``migrate``'s output.
"""

from collections import defaultdict

from django.db import migrations, models


def report_shared_numbers(apps, schema_editor):
    Account = apps.get_model("accounts", "Account")
    TextingSettings = apps.get_model("texting", "TextingSettings")
    organizations = defaultdict(set)
    for number, organization in Account.objects.exclude(caller_id="").values_list(
        "caller_id", "organization__name"
    ):
        organizations[number].add(organization)
    for number, organization in TextingSettings.objects.exclude(sender="").values_list(
        "sender", "account__organization__name"
    ):
        organizations[number].add(organization)
    for number, names in sorted(organizations.items()):
        if len(names) > 1:
            print(
                f"\n  {number} is used by accounts of {len(names)} organizations "
                f"({', '.join(sorted(names))}): nothing is texted from it until support "
                "settles it (admin overview, 'Numbers of several organizations').",
                end="",
            )


class Migration(migrations.Migration):
    dependencies = [
        ("texting", "0003_drop_pattern_indexes"),
    ]

    operations = [
        migrations.CreateModel(
            name="UnroutedText",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True,
                        primary_key=True,
                        serialize=False,
                        verbose_name="ID",
                    ),
                ),
                ("to_number", models.CharField(max_length=34)),
                ("from_number", models.CharField(max_length=34)),
                ("body", models.TextField()),
                ("reason", models.TextField(help_text="Why it reached no thread.")),
                ("provider", models.CharField(blank=True, max_length=16)),
                ("provider_id", models.CharField(blank=True, max_length=64)),
                ("received_at", models.DateTimeField(auto_now_add=True)),
            ],
            options={
                "verbose_name": "text not routed",
                "verbose_name_plural": "texts not routed",
                "ordering": ["-received_at", "-id"],
                "constraints": [
                    models.UniqueConstraint(
                        condition=models.Q(("provider_id", ""), _negated=True),
                        fields=("provider", "provider_id"),
                        name="texting_unrouted_provider_id_unique",
                    )
                ],
            },
        ),
        migrations.RunPython(report_shared_numbers, migrations.RunPython.noop),
    ]
