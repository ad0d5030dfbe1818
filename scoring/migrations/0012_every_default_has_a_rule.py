"""Every default category, call-end reason and alert tag gets its suggestion rule (issue
38) on existing scorecards: only where the entry still carries its default name and its
rule is still the previous default or empty (phrases a person wrote are left alone)."""

from django.db import migrations

from scoring.defaults import (
    DEFAULT_CATEGORY_RULES,
    DEFAULT_CHOICE_RULES,
    PREVIOUS_CATEGORY_RULES,
    PREVIOUS_CHOICE_RULES,
)


def _untouched(model, previous, **names):
    """The rows with the default name whose rule is empty or still the previous default."""
    rows = model.objects.filter(**names)
    if previous is None:
        return rows.filter(phrases="")
    phrases, side, within = previous
    return rows.filter(phrases="") | rows.filter(
        phrases=phrases, side=side, within_seconds=within
    )


def forward(apps, schema_editor):
    Category = apps.get_model("scoring", "ScorecardCategory")
    Choice = apps.get_model("scoring", "ScorecardChoice")
    for name, (phrases, side, within) in DEFAULT_CATEGORY_RULES.items():
        _untouched(Category, PREVIOUS_CATEGORY_RULES.get(name), name=name).update(
            phrases=phrases, side=side, within_seconds=within
        )
    for (kind, name), (phrases, side, within) in DEFAULT_CHOICE_RULES.items():
        _untouched(
            Choice, PREVIOUS_CHOICE_RULES.get((kind, name)), kind=kind, name=name
        ).update(phrases=phrases, side=side, within_seconds=within)


class Migration(migrations.Migration):
    dependencies = [("scoring", "0011_learnt_suggester")]
    operations = [migrations.RunPython(forward, migrations.RunPython.noop)]
