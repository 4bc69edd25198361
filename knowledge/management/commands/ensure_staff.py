"""manage.py ensure_staff: the first staff account, created with a random password if none exists; and, as
`make run` starts serving, which collection the chat serves."""

import secrets
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandParser

from knowledge.models import Article, Collection


class Command(BaseCommand):
    help = "Create the first staff account (with a random password, saved for the operator) if none exists."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--username", default="admin")
        parser.add_argument(
            "--base-url", default="http://127.0.0.1:8000", help="where the server will listen (for the printed links)"
        )

    def _served(self, base_url: str) -> None:
        """Which collection the chat widget and the help pages serve (CHAT_COLLECTION); a warning when it does
        not exist, since the chat then refuses every visitor."""
        name = settings.CHAT_COLLECTION
        if not Collection.objects.filter(name=name).exists():
            existing = ", ".join(sorted(Collection.objects.values_list("name", flat=True))) or "none yet"
            self.stderr.write(
                self.style.WARNING(
                    f"warning: the chat serves CHAT_COLLECTION={name!r}, which does not exist (collections: "
                    f"{existing}): it refuses every visitor until it is loaded: "
                    f".venv/bin/python manage.py ingest FOLDER --collection {name}"
                )
            )
            return
        live = Article.objects.filter(collection__name=name, retired_at__isnull=True).count()
        self.stdout.write(
            f"The chat ({base_url}/) and the help pages ({base_url}/help/) serve the collection {name!r}: "
            f"{live} live article(s). CHAT_COLLECTION chooses another."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        self._served(options["base_url"].rstrip("/"))
        username = options["username"]
        where_to = f"{options['base_url'].rstrip('/')}/staff/queue (queue) and /admin/ (admin)"
        credentials = Path(settings.BASE_DIR) / "var" / "admin-credentials.txt"
        users = get_user_model().objects
        if users.filter(username=username).exists():
            where = f" (password in {credentials})" if credentials.exists() else ""
            self.stdout.write(
                f"Staff login: {where_to} as {username!r}{where}. "
                f"Reset with: .venv/bin/python manage.py changepassword {username}"
            )
            return
        password = secrets.token_urlsafe(12)
        users.create_superuser(username=username, email="", password=password)
        credentials.parent.mkdir(parents=True, exist_ok=True)
        credentials.write_text(f"username: {username}\npassword: {password}\n")
        credentials.chmod(0o600)
        self.stdout.write(
            self.style.SUCCESS(
                f"Created staff account. Log in at {where_to} as {username!r} with password "
                f"{password!r} (also saved in {credentials})."
            )
        )
