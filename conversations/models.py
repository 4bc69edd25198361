"""Conversations and everything a turn decided, kept so staff can see why a reply said what it said."""

import uuid
from datetime import datetime, timedelta

from django.conf import settings
from django.db import models

from answering.outcome import Decision, HandoffReason
from answering.privacy.masking import mask_pii
from knowledge.models import Audience, Collection


class SystemPolicy(models.Model):
    """Rules the assistant always works under (e.g. the refund policy): always in the context, never trimmed,
    never retrieved. Editing makes a new version; the newest version of a collection's policy is in force."""

    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="policies")
    version = models.PositiveIntegerField()
    text = models.TextField()
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["collection", "version"], name="unique_policy_version")]
        ordering = ["collection", "-version"]
        verbose_name_plural = "system policies"

    def __str__(self) -> str:
        return f"{self.collection} policy v{self.version}"


class ConversationStatus(models.TextChoices):
    OPEN = "open", "Open"
    REFERRED = "referred", "Waiting for a person"
    # A staff member took the conversation over: the assistant stays silent until it is resolved.
    HUMAN = "human", "With a person"
    CLOSED = "closed", "Closed"


class Conversation(models.Model):
    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    collection = models.ForeignKey(Collection, on_delete=models.PROTECT, related_name="conversations")
    audience = models.CharField(max_length=10, choices=Audience.choices, default=Audience.PUBLIC)
    # The verified customer (their signed token), or none for an anonymous visitor.
    customer = models.ForeignKey(
        "customers.Customer", null=True, blank=True, on_delete=models.CASCADE, related_name="conversations"
    )
    status = models.CharField(max_length=10, choices=ConversationStatus.choices, default=ConversationStatus.OPEN)
    # The staff member the hand-off is assigned to (round-robin among those online), if any.
    assignee = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="assigned_conversations",
    )
    assigned_at = models.DateTimeField(null=True, blank=True)
    # Given by the customer when no person was available: staff replies go there as well as to the widget.
    contact_email = models.EmailField(blank=True)
    # The customer asked for a person: the assistant answers nothing more until staff hand the conversation back.
    person_requested = models.BooleanField(default=False)
    # Asked by the evaluation lab or a benchmark, not a customer: kept for the run's report, but never in the
    # hand-off queue, assigned to staff, counted in the outcome analytics or mined for content gaps.
    from_lab = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-updated_at"]
        permissions = [("view_personal_data", "Can see customers' words unmasked")]

    def __str__(self) -> str:
        return f"conversation {self.public_id}"


class Role(models.TextChoices):
    CUSTOMER = "customer", "Customer"
    ASSISTANT = "assistant", "Assistant"
    STAFF = "staff", "Staff"


class Message(models.Model):
    """What was said, as said: the only place a customer's raw words (personal data included) are kept."""

    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="messages")
    role = models.CharField(max_length=10, choices=Role.choices)
    text = models.TextField()
    # The chat client's id for a customer message: a resend after a reconnect finds the stored one.
    client_id = models.CharField(max_length=64, blank=True, default="")
    author = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    # Set by the worker that answers this customer message, so two processes never answer it twice.
    answer_started_at = models.DateTimeField(null=True, blank=True)
    # A staff reply whose e-mail copy did not go out, and why (shown on the queue card until a send works).
    email_error = models.CharField(max_length=300, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["conversation", "created_at", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["conversation", "client_id"],
                condition=~models.Q(client_id=""),
                name="unique_client_message",
            )
        ]

    def __str__(self) -> str:
        return f"{self.role}: {self.text[:60]}"

    def words_for(self, *, unmasked: bool) -> str:
        """The text as a staff member may see it. The assistant's words are built from masked input and
        quoted articles, so they are shown as stored; a customer's (and a staff reply, which may repeat
        them) are masked unless the viewer holds the personal-data permission."""
        if unmasked or self.role == Role.ASSISTANT:
            return self.text
        return mask_pii(self.text).text


class Turn(models.Model):
    """One customer message and the reply to it, with every step in between. Text sent to a third party or
    stored here for analysis is masked; the raw message lives only in Message."""

    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="turns")
    customer_message = models.OneToOneField(Message, on_delete=models.CASCADE, related_name="turn")
    reply_message = models.OneToOneField(
        Message, null=True, blank=True, on_delete=models.SET_NULL, related_name="answered_turn"
    )
    rewritten_query = models.TextField(blank=True)
    candidates = models.JSONField(default=list, help_text="Retrieved chunks with each stage's rank and score.")
    context = models.JSONField(default=list, help_text="The passages given to the generator, with trust labels.")
    # "extractive", "gatekeeper", or the provider and model that wrote it ("openai:llama3.2").
    generator = models.CharField(max_length=200, blank=True)
    draft = models.TextField(blank=True)
    reply = models.TextField(blank=True)
    decision = models.CharField(max_length=10, choices=Decision.choices, blank=True)
    citations = models.JSONField(default=list, help_text="The passages the shipped reply cites, numbered.")
    evidence_score = models.FloatField(null=True, blank=True)
    signals = models.JSONField(
        default=dict, blank=True, help_text="The abstention decision's inputs and the probability it gave."
    )
    reading = models.JSONField(
        default=list, blank=True, help_text="The statements the reader weighed: scores, and which it said."
    )
    units = models.JSONField(
        default=list,
        blank=True,
        help_text="The whole units the reply quoted (kind, passage, text) and, for a suggestion, each section's "
        "title and link.",
    )
    latency_ms = models.JSONField(default=dict)
    notes = models.JSONField(default=list, help_text="What went wrong on the way (provider failures, fallbacks).")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["conversation", "created_at", "id"]

    def __str__(self) -> str:
        return f"turn {self.pk} ({self.decision or 'in progress'})"


class Verdict(models.TextChoices):
    SUPPORTED = "supported", "Supported"
    UNSUPPORTED = "unsupported", "Unsupported"


class Claim(models.Model):
    turn = models.ForeignKey(Turn, on_delete=models.CASCADE, related_name="claims")
    ordinal = models.PositiveIntegerField()
    text = models.TextField()
    citations = models.JSONField(default=list)
    verdict = models.CharField(max_length=12, choices=Verdict.choices)
    tier = models.CharField(max_length=20, help_text="The grounding tier that settled the verdict.")
    score = models.FloatField(null=True, blank=True)
    reason = models.TextField(blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["turn", "ordinal"], name="unique_claim_ordinal")]
        ordering = ["turn", "ordinal"]

    def __str__(self) -> str:
        return f"{self.verdict} ({self.tier}): {self.text[:60]}"


class ReferralStatus(models.TextChoices):
    OPEN = "open", "Open"
    CLAIMED = "claimed", "Claimed"
    RESOLVED = "resolved", "Resolved"


class Referral(models.Model):
    """A conversation handed to a person, with the draft and its verdicts so they see what was doubted."""

    turn = models.OneToOneField(Turn, on_delete=models.CASCADE, related_name="referral")
    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="referrals")
    reason_code = models.CharField(max_length=20, choices=HandoffReason.choices, default=HandoffReason.NO_KNOWLEDGE)
    reason = models.TextField(help_text="The details behind reason_code.")
    status = models.CharField(max_length=10, choices=ReferralStatus.choices, default=ReferralStatus.OPEN)
    assignee = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)
    resolved_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["status", "created_at"]

    def __str__(self) -> str:
        return f"referral {self.pk} ({self.status})"


class StaffActionKind(models.TextChoices):
    REPLY = "reply", "Sent a reply"
    TAKE_OVER = "take_over", "Took the conversation over"
    RESOLVE = "resolve", "Resolved"
    HAND_BACK = "hand_back", "Handed back to the assistant"
    ASSIGNED = "assigned", "Was assigned the conversation"


class StaffAction(models.Model):
    """Who did what to a referred conversation, and when: the hand-off queue's audit trail."""

    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="staff_actions")
    referral = models.ForeignKey(Referral, null=True, blank=True, on_delete=models.SET_NULL, related_name="actions")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL)
    # Kept when the account is deleted, so the trail still names who acted.
    username = models.CharField(max_length=150)
    kind = models.CharField(max_length=10, choices=StaffActionKind.choices)
    message = models.ForeignKey(Message, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["conversation", "created_at", "id"]

    def __str__(self) -> str:
        return f"{self.username} {self.get_kind_display().lower()} at {self.created_at:%Y-%m-%d %H:%M}"


class AbstentionThreshold(models.Model):
    """A collection's abstention decision fitted by `manage.py calibrate`: the model and its cut (the
    probability below which the assistant abstains); the newest row of a collection is in force."""

    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="abstention_thresholds")
    signal = models.CharField(max_length=40)
    threshold = models.FloatField()
    model = models.JSONField(default=dict, blank=True, help_text="The fitted logistic regression.")
    answered_rate = models.FloatField(help_text="Share of answerable calibration questions answered.")
    wrongly_answered_rate = models.FloatField(help_text="Share of unanswerable ones answered anyway.")
    dataset = models.CharField(max_length=300)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["collection", "-created_at"]

    def __str__(self) -> str:
        return f"{self.collection}: {self.signal} ≥ {self.threshold:.3f}"


class ConversationSummary(models.Model):
    """A short summary of one past conversation, offered to later turns as background (model trust), never
    as evidence for a claim. Built from masked text."""

    customer = models.ForeignKey("customers.Customer", on_delete=models.CASCADE, related_name="summaries")
    conversation = models.OneToOneField(Conversation, on_delete=models.CASCADE, related_name="summary")
    text = models.TextField()
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["customer", "-updated_at"]
        verbose_name_plural = "conversation summaries"

    def __str__(self) -> str:
        return f"summary of {self.conversation}"


class RefundDecision(models.Model):
    """What the gatekeeper decided about one refund request, and why: rules are certified, not retrieved."""

    order = models.ForeignKey("customers.Order", on_delete=models.CASCADE, related_name="refund_decisions")
    amount = models.DecimalField(max_digits=10, decimal_places=2)
    approved = models.BooleanField()
    reason = models.TextField()
    requested_via = models.CharField(
        max_length=20,
        help_text='The provider whose tool call asked ("anthropic", "openai"; older rows: "claude"), or "intent".',
    )
    conversation = models.ForeignKey(
        Conversation, null=True, blank=True, on_delete=models.SET_NULL, related_name="refunds"
    )
    decided_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-decided_at"]

    def __str__(self) -> str:
        return f"refund {self.amount} on #{self.order.number}: {'approved' if self.approved else 'to staff'}"


class FeedbackRating(models.TextChoices):
    UP = "up", "Helpful"
    DOWN = "down", "Not helpful"


class TurnFeedback(models.Model):
    """The customer's thumbs up or down on one assistant reply: one per reply, changeable."""

    turn = models.OneToOneField(Turn, on_delete=models.CASCADE, related_name="feedback")
    rating = models.CharField(max_length=4, choices=FeedbackRating.choices)
    reason = models.CharField(max_length=300, blank=True, help_text="The customer's short reason, on a thumbs down.")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-updated_at"]
        verbose_name_plural = "turn feedback"

    def __str__(self) -> str:
        return f"{self.get_rating_display()} on turn {self.turn_id}"


class PresenceStatus(models.TextChoices):
    ONLINE = "online", "Online"
    AWAY = "away", "Away"


# Each open queue socket says every PRESENCE_HEARTBEAT_S that it is still there. A person none of whose
# sockets has said so for PRESENCE_LAPSES_AFTER_S is not online, whatever the row says: the server process
# holding their sockets stopped without closing them (a crash, a kill), so its counts can no longer be trusted.
PRESENCE_HEARTBEAT_S = 20
PRESENCE_LAPSES_AFTER_S = 90


def presence_cutoff(now: datetime) -> datetime:
    """A person last heard from before this is no longer online."""
    return now - timedelta(seconds=PRESENCE_LAPSES_AFTER_S)


class StaffPresenceQuerySet(models.QuerySet["StaffPresence"]):
    def taking_handoffs(self, now: datetime) -> "StaffPresenceQuerySet":
        """Online, an active staff account, and heard from by a queue socket lately."""
        return self.filter(
            status=PresenceStatus.ONLINE, user__is_active=True, user__is_staff=True, seen_at__gte=presence_cutoff(now)
        )

    def lapsed(self, now: datetime) -> "StaffPresenceQuerySet":
        """Online by the row, but no socket of theirs has been heard from lately."""
        stale = models.Q(seen_at__isnull=True) | models.Q(seen_at__lt=presence_cutoff(now))
        return self.filter(stale, status=PresenceStatus.ONLINE)


class StaffPresence(models.Model):
    """Whether a staff member takes hand-offs now: set in the queue, dropped to away when their last queue
    socket closes, or when none of their sockets has been heard from lately."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="presence")
    status = models.CharField(max_length=6, choices=PresenceStatus.choices, default=PresenceStatus.AWAY)
    open_sockets = models.PositiveIntegerField(default=0)
    seen_at = models.DateTimeField(
        null=True, blank=True, help_text="When a queue socket of theirs last said it is open."
    )
    max_conversations = models.PositiveSmallIntegerField(
        default=5, help_text="At most this many open hand-offs are assigned to the person at once."
    )
    # Round-robin: the next hand-off goes to the online person assigned one longest ago.
    last_assigned_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = StaffPresenceQuerySet.as_manager()

    class Meta:
        ordering = ["user__username"]
        verbose_name_plural = "staff presence"

    def __str__(self) -> str:
        return f"{self.user} ({self.status})"


class BusinessHours(models.Model):
    """When people answer a collection's hand-offs: weekly opening periods in a time zone, and closed days.
    A collection without business hours is staffed whenever someone is online."""

    collection = models.OneToOneField(Collection, on_delete=models.CASCADE, related_name="business_hours")
    time_zone = models.CharField(max_length=64, default="UTC", help_text='An IANA name, e.g. "Europe/Berlin".')

    class Meta:
        verbose_name_plural = "business hours"

    def __str__(self) -> str:
        return f"{self.collection} hours ({self.time_zone})"


class Weekday(models.IntegerChoices):
    MONDAY = 0, "Monday"
    TUESDAY = 1, "Tuesday"
    WEDNESDAY = 2, "Wednesday"
    THURSDAY = 3, "Thursday"
    FRIDAY = 4, "Friday"
    SATURDAY = 5, "Saturday"
    SUNDAY = 6, "Sunday"


class OpeningPeriod(models.Model):
    hours = models.ForeignKey(BusinessHours, on_delete=models.CASCADE, related_name="periods")
    weekday = models.PositiveSmallIntegerField(choices=Weekday.choices)
    opens = models.TimeField()
    closes = models.TimeField()

    class Meta:
        ordering = ["hours", "weekday", "opens"]
        constraints = [
            models.CheckConstraint(condition=models.Q(opens__lt=models.F("closes")), name="period_opens_before_closing")
        ]

    def __str__(self) -> str:
        return f"{self.get_weekday_display()} {self.opens:%H:%M}–{self.closes:%H:%M}"


class ClosedDay(models.Model):
    hours = models.ForeignKey(BusinessHours, on_delete=models.CASCADE, related_name="closed_days")
    date = models.DateField()
    note = models.CharField(max_length=200, blank=True)

    class Meta:
        ordering = ["hours", "date"]
        constraints = [models.UniqueConstraint(fields=["hours", "date"], name="unique_closed_day")]

    def __str__(self) -> str:
        return f"closed {self.date:%Y-%m-%d}"
