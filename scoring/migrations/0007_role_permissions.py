"""Roles by permission: the four permissions of scoring.Score, granted to the permission
templates that held each role by name (groups since renamed or removed are left alone)."""

from django.db import migrations

# Frozen here, as this migration granted them (scoring.defaults.TEMPLATE_PERMISSIONS is
# what the code holds today).
GRANTS = {
    "Agent": "take_calls",
    "Scorer": "score_calls",
    "Manager": "coach_account_calls",
    "Global Manager": "coach_organization_calls",
}
NAMES = {
    "score_calls": "Can score the calls of the accounts in reach",
    "coach_account_calls": "Can coach and browse the calls of their accounts",
    "coach_organization_calls": (
        "Can coach and browse the calls of every account of their organizations"
    ),
    "take_calls": "Takes calls (offered as an agent in the call browser)",
}


def grant(apps, schema_editor):
    # Django creates a model's permissions after migrating (post_migrate), too late for
    # this grant on a fresh database: create them here, as it would.
    ContentType = apps.get_model("contenttypes", "ContentType")
    Permission = apps.get_model("auth", "Permission")
    Group = apps.get_model("auth", "Group")
    content_type, _ = ContentType.objects.get_or_create(app_label="scoring", model="score")
    for name, codename in GRANTS.items():
        permission, _ = Permission.objects.get_or_create(
            content_type=content_type, codename=codename, defaults={"name": NAMES[codename]}
        )
        for group in Group.objects.filter(name=name):
            group.permissions.add(permission)


def revoke(apps, schema_editor):
    Permission = apps.get_model("auth", "Permission")
    Permission.objects.filter(
        content_type__app_label="scoring", codename__in=list(NAMES)
    ).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("scoring", "0006_default_appointment_call_ends"),
        ("scoring", "0002_scorer_template_and_default_scorecards"),
        ("accounts", "0002_permission_templates"),
        ("contenttypes", "0002_remove_content_type_name"),
        ("auth", "0012_alter_user_first_name_max_length"),
    ]
    operations = [
        migrations.AlterModelOptions(
            name="score",
            options={
                "ordering": ["-scored_at", "-id"],
                "permissions": [
                    ("score_calls", "Can score the calls of the accounts in reach"),
                    (
                        "coach_account_calls",
                        "Can coach and browse the calls of their accounts",
                    ),
                    (
                        "coach_organization_calls",
                        "Can coach and browse the calls of every account of their organizations",
                    ),
                    ("take_calls", "Takes calls (offered as an agent in the call browser)"),
                ],
            },
        ),
        migrations.RunPython(grant, revoke),
    ]
