"""The default suggestion rules for existing scorecards: only on categories and list
entries that still carry a default name and have no phrases of their own."""

from django.db import migrations

from scoring.defaults import DEFAULT_CATEGORY_RULES, DEFAULT_CHOICE_RULES


def forward(apps, schema_editor):
    Category = apps.get_model("scoring", "ScorecardCategory")
    Choice = apps.get_model("scoring", "ScorecardChoice")
    for name, (phrases, side, within) in DEFAULT_CATEGORY_RULES.items():
        Category.objects.filter(name=name, phrases="").update(
            phrases=phrases, side=side, within_seconds=within
        )
    for (kind, name), (phrases, side, within) in DEFAULT_CHOICE_RULES.items():
        Choice.objects.filter(kind=kind, name=name, phrases="").update(
            phrases=phrases, side=side, within_seconds=within
        )


class Migration(migrations.Migration):
    dependencies = [("scoring", "0003_score_accepted_suggestions_scorecardcategory_phrases_and_more")]
    operations = [migrations.RunPython(forward, migrations.RunPython.noop)]
