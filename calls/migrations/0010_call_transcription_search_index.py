"""A GIN index for searching what was said on calls (the call browser's "said on the
call"): PostgreSQL full-text search over ``to_tsvector('english', transcription)``. Other
databases search without an index; there the migration does nothing."""

from django.db import migrations

INDEX = "calls_call_transcription_fts"


def forward(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(
            f"CREATE INDEX IF NOT EXISTS {INDEX} ON calls_call "
            "USING GIN (to_tsvector('english'::regconfig, transcription))"
        )


def backward(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f"DROP INDEX IF EXISTS {INDEX}")


class Migration(migrations.Migration):
    dependencies = [("calls", "0009_call_transcript_turns_recording")]
    operations = [migrations.RunPython(forward, backward)]
