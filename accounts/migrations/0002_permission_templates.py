"""The permission templates of the User API, as Django groups."""

from django.db import migrations

TEMPLATES = ("Agent", "Manager", "Global Manager")


def create(apps, schema_editor):
    Group = apps.get_model("auth", "Group")
    for name in TEMPLATES:
        Group.objects.get_or_create(name=name)


def remove(apps, schema_editor):
    apps.get_model("auth", "Group").objects.filter(name__in=TEMPLATES).delete()


class Migration(migrations.Migration):
    dependencies = [("accounts", "0001_initial"), ("auth", "0012_alter_user_first_name_max_length")]
    operations = [migrations.RunPython(create, remove)]
