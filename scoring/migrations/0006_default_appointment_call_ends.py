"""Existing scorecards' default "Appointment set" call ends need the appointment date."""

from django.db import migrations

from scoring.defaults import DEFAULT_APPOINTMENT_CALL_ENDS


def forward(apps, schema_editor):
    Choice = apps.get_model("scoring", "ScorecardChoice")
    Choice.objects.filter(kind="call_end", name__in=DEFAULT_APPOINTMENT_CALL_ENDS).update(
        needs_appointment=True
    )


class Migration(migrations.Migration):
    dependencies = [("scoring", "0005_scorecardchoice_needs_appointment")]
    operations = [migrations.RunPython(forward, migrations.RunPython.noop)]
