"""The default rules read what the call established and more ways people say things; the
"Unhappy customer" tag no longer hears a bare "cancel". Existing scorecards move to them
only where the entry still carries its default name and exactly the rule the defaults had
before (issue 38's, 0012): phrases, side or seconds a person changed, or emptied, are left
alone. The phrases' help text names the fact phrases ({vehicle}, {questions_answered},
{appointment})."""

from django.db import migrations, models

from scoring.defaults import (
    DEFAULT_CATEGORY_RULES,
    DEFAULT_CHOICE_RULES,
    RULES_BEFORE_0013_CATEGORIES,
    RULES_BEFORE_0013_CHOICES,
)

HELP_TEXT = (
    "One per line, matched without regard to case. {first_name}: the lead's first "
    "name; {weekday}: any weekday; a line starting with re: is a regular "
    "expression. A line alone of {vehicle}: a line naming the vehicle discussed; "
    "{questions_answered}: the agent's answers, when every question the lead asked "
    "was answered; {appointment}: the line that agreed an appointment's day and time."
)


def forward(apps, schema_editor):
    Category = apps.get_model("scoring", "ScorecardCategory")
    Choice = apps.get_model("scoring", "ScorecardChoice")
    for name, (phrases, side, within) in RULES_BEFORE_0013_CATEGORIES.items():
        new_phrases, new_side, new_within = DEFAULT_CATEGORY_RULES[name]
        Category.objects.filter(
            name=name, phrases=phrases, side=side, within_seconds=within
        ).update(phrases=new_phrases, side=new_side, within_seconds=new_within)
    for (kind, name), (phrases, side, within) in RULES_BEFORE_0013_CHOICES.items():
        new_phrases, new_side, new_within = DEFAULT_CHOICE_RULES[(kind, name)]
        Choice.objects.filter(
            kind=kind, name=name, phrases=phrases, side=side, within_seconds=within
        ).update(phrases=new_phrases, side=new_side, within_seconds=new_within)


class Migration(migrations.Migration):
    dependencies = [("scoring", "0012_every_default_has_a_rule")]
    operations = [
        migrations.AlterField(
            model_name="scorecardcategory",
            name="phrases",
            field=models.TextField(blank=True, help_text=HELP_TEXT),
        ),
        migrations.AlterField(
            model_name="scorecardchoice",
            name="phrases",
            field=models.TextField(blank=True, help_text=HELP_TEXT),
        ),
        migrations.RunPython(forward, migrations.RunPython.noop),
    ]
