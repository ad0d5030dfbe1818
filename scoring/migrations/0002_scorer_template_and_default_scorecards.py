"""The Scorer permission template, and the default scorecard for every existing account."""

from django.db import migrations

from scoring.defaults import DEFAULT_CATEGORIES, DEFAULT_CHOICES


def forward(apps, schema_editor):
    apps.get_model("auth", "Group").objects.get_or_create(name="Scorer")
    Account = apps.get_model("accounts", "Account")
    Scorecard = apps.get_model("scoring", "Scorecard")
    Category = apps.get_model("scoring", "ScorecardCategory")
    Choice = apps.get_model("scoring", "ScorecardChoice")
    for account in Account.objects.filter(scorecard__isnull=True).iterator():
        scorecard = Scorecard.objects.create(account=account)
        Category.objects.bulk_create(
            Category(scorecard=scorecard, slot=slot, name=name, guidance=guidance)
            for slot, (name, guidance) in enumerate(DEFAULT_CATEGORIES, start=1)
        )
        Choice.objects.bulk_create(
            Choice(scorecard=scorecard, kind=kind, name=name, position=index)
            for kind, names in DEFAULT_CHOICES.items()
            for index, name in enumerate(names)
        )


def backward(apps, schema_editor):
    apps.get_model("auth", "Group").objects.filter(name="Scorer").delete()


class Migration(migrations.Migration):
    dependencies = [("scoring", "0001_initial"), ("auth", "0012_alter_user_first_name_max_length")]
    operations = [migrations.RunPython(forward, backward)]
