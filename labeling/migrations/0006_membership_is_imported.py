"""Membership.is_imported: accounts an import made for the labelers its file names.

The importer (``imports.pipeline``) makes them with an unusable password (``make_password(None)``,
which starts with "!") and an annotator membership without an invitation; nobody has logged in
with them and they are not staff. Existing memberships that match all of that are marked.
"""

from django.conf import settings
from django.contrib.auth.hashers import UNUSABLE_PASSWORD_PREFIX
from django.db import migrations, models


def mark_imported(apps, schema_editor):
    Membership = apps.get_model("labeling", "Membership")
    Membership.objects.filter(
        role="annotator",
        invitation__isnull=True,
        user__password__startswith=UNUSABLE_PASSWORD_PREFIX,
        user__last_login__isnull=True,
        user__is_staff=False,
        user__is_superuser=False,
    ).update(is_imported=True)


class Migration(migrations.Migration):
    dependencies = [
        ('labeling', '0005_prmmodel_activelearningrun_moved_out'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name='membership',
            name='is_imported',
            field=models.BooleanField(default=False, help_text='Made by an import for a labeler in its file; nobody logs in.'),
        ),
        migrations.RunPython(mark_imported, migrations.RunPython.noop),
    ]
