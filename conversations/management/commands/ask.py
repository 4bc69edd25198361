"""manage.py ask: one full answer turn from the shell, with its citations, decision and per-stage latency."""

import json
from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from conversations.errors import TurnError
from conversations.models import Conversation
from conversations.records.turns import answer_turn
from customers.models import Customer
from knowledge.models import Collection
from knowledge.scope import VISIBLE_AUDIENCES
from supportbot.arguments import iso_date


class Command(BaseCommand):
    help = "Run one full answer turn from the shell: the reply, its citations, the decision and per-stage latency."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("question")
        parser.add_argument("--audience", choices=tuple(VISIBLE_AUDIENCES), default=None, help="Default: public")
        parser.add_argument("--collection", default="helpcentre")
        parser.add_argument("--conversation", default=None, help="Continue this conversation (its id)")
        parser.add_argument(
            "--customer", default=None, help="Ask as this verified customer (their id); audience follows them"
        )
        parser.add_argument(
            "--as-of",
            type=iso_date,
            default=None,
            help="Ask as if on this date (YYYY-MM-DD): the article versions in force then answer",
        )
        parser.add_argument("--json", action="store_true")

    def _conversation(self, options: dict[str, Any]) -> Conversation:
        if options["conversation"]:
            try:
                chat = Conversation.objects.select_related("collection").get(public_id=options["conversation"])
            except (Conversation.DoesNotExist, ValidationError):
                raise CommandError(f"No conversation {options['conversation']!r}.") from None
            if options["audience"] and options["audience"] != chat.audience:
                raise CommandError(f"Conversation {chat.public_id} is a {chat.audience} conversation.")
            if options["customer"] and (chat.customer is None or chat.customer.external_id != options["customer"]):
                raise CommandError(
                    f"Conversation {chat.public_id} does not belong to customer {options['customer']!r}."
                )
            return chat
        try:
            collection = Collection.objects.get(name=options["collection"])
        except Collection.DoesNotExist:
            raise CommandError(f"No collection {options['collection']!r}; run `manage.py ingest` first.") from None
        customer = None
        if options["customer"]:
            customer = Customer.objects.filter(external_id=options["customer"], erased_at__isnull=True).first()
            if customer is None:
                raise CommandError(f"No customer {options['customer']!r}; load them with `manage.py customers load`.")
            if options["audience"]:
                raise CommandError("--audience and --customer do not go together: a customer's audience follows them.")
        audience = options["audience"] or ("member" if customer is not None and customer.is_member else "public")
        return Conversation.objects.create(collection=collection, audience=audience, customer=customer)

    def handle(self, *args: Any, **options: Any) -> None:
        chat = self._conversation(options)
        try:
            result = answer_turn(chat, options["question"], today=options["as_of"])
        except TurnError as exc:
            raise CommandError(str(exc)) from None
        if options["json"]:
            self.stdout.write(json.dumps({"conversation": str(chat.public_id), **result.as_json()}, indent=2))
            return
        self.stdout.write(result.reply)
        self.stdout.write(
            f"\ndecision: {result.decision} · generator: {result.generator or '-'} · "
            f"evidence score: {result.evidence_score}"
        )
        if result.units:
            self.stdout.write("quoted units: " + ", ".join(f"{u['kind']} [{u['passage']}]" for u in result.units))
        for citation in result.citations:
            self.stdout.write(f"  [{citation.number}] {citation.label}")
        for claim in result.claims:
            self.stdout.write(f"  claim ({'✓' if claim.supported else '✗'} {claim.tier.value}): {claim.text}")
        timings = ", ".join(f"{name} {ms:.0f}" for name, ms in result.latency_ms.items())
        self.stdout.write(f"latency ms: {timings}")
        self.stdout.write(f"conversation: {chat.public_id} (continue with --conversation)")
