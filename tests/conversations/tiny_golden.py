"""A two-question golden set (one answerable, one not) for tests of the evaluation tools."""

import json
from pathlib import Path

QUESTIONS = [
    {
        "id": "card-days",
        "category": "plain",
        "question": "How long until a card refund shows on my statement?",
        "answerable": True,
        "gold": [{"article": "refunds", "heading_path": "Refunds › When the money arrives"}],
        "fact": "5 to 10 business days",
    },
    {"id": "mars", "category": "unanswerable", "question": "Do you deliver to Mars colonies?", "answerable": False},
]


def write_golden(folder: Path) -> Path:
    path = folder / "golden.jsonl"
    path.write_text("\n".join(json.dumps(q) for q in QUESTIONS) + "\n")
    return path
