"""``manage.py create_api_token USER [--name NAME]``: an API key for scripts, printed once."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from annotators import services


class Command(BaseCommand):
    help = "Create an API token for USER and print it (only its hash is stored)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("username")
        parser.add_argument("--name", default="script", help="what the token is for")

    def handle(self, *args, username: str, name: str, **options) -> None:
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"No user named {username!r}.")
        try:
            _, key = services.api_token_create(user=user, name=name)
        except services.ManageError as error:
            raise CommandError(str(error)) from error
        self.stdout.write(key)
