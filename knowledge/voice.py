"""Whom the assistant speaks for: a collection's business name, what it helps with and a few tone lines,
as the widget's greeting, the help pages' title and a language model's prompt say them. A collection
without them is spoken for without a name, never as the demo shop."""

from __future__ import annotations

from dataclasses import dataclass

from knowledge.models import Collection


@dataclass(frozen=True)
class Voice:
    business_name: str = ""
    helps_with: str = ""
    tone: str = ""

    @classmethod
    def of(cls, collection: Collection | None) -> Voice:
        if collection is None:
            return cls()
        return cls(
            " ".join(collection.business_name.split()),
            " ".join(collection.helps_with.split()).rstrip("."),
            collection.tone.strip(),
        )

    @property
    def greeting(self) -> str:
        """The widget's first line: what to ask about, and how answers come."""
        ask = f"Ask us anything about {self.helps_with}." if self.helps_with else "Ask us anything."
        centre = f"the {self.business_name} help centre" if self.business_name else "our help centre"
        return (
            f"{ask} Answers come from {centre}, with links to the sources; if it doesn't cover your question, "
            "a person will help."
        )

    @property
    def help_title(self) -> str:
        return f"{self.business_name} help centre" if self.business_name else "Help centre"

    @property
    def assistant(self) -> str:
        """Who the assistant is, as a model's prompt opens."""
        if self.business_name:
            return f"You are the customer-support assistant of {self.business_name}"
        return "You are a customer-support assistant"


# Nobody named: a collection without a voice, or none at all.
NO_VOICE = Voice()
