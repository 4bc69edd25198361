"""End-to-end answer evaluation on a golden question set: full turns, scored, each failure placed on the
branch of the pipeline it came from (coverage → retrieval → assembly → generation), so the next fix is
aimed at the right stage."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

from answering.services import TurnServices
from conversations.models import Claim, Conversation, Turn, Verdict
from conversations.records.turns import answer_turn
from knowledge.chunking import HEADING_SEPARATOR
from knowledge.models import ArticleVersion, Chunk, Collection
from knowledge.scope import VISIBLE_AUDIENCES
from lab.errors import GoldenSetError
from lab.jsonl import json_lines

GOLDEN_SET = Path(__file__).resolve().parent / "sample" / "golden.jsonl"
CATEGORIES = (
    "plain",
    "paraphrase",
    "typo",
    "identifier",
    "audience",
    "superseded",
    "follow-up",
    "hinglish",
    "unanswerable",
)
# The failure tree's branches, in pipeline order; "ok" when nothing failed. "suggested" reached the customer
# through a suggestion's quote: not a failure, but not the direct answer either.
BRANCHES = (
    "coverage",
    "retrieval",
    "assembly",
    "generation: abstained",
    "generation: referred",
    "generation: suggested without the fact",
    "generation: wrong",
    "suggested",
)
KINDS = ("answered", "suggested", "abstained", "referred")
TOP_K = 3


@dataclass(frozen=True)
class GoldChunk:
    article: str
    heading_path: str

    def matches(self, article: str, heading_path: str) -> bool:
        # A gold section also covers the chunks of its subsections.
        return article == self.article and (
            heading_path == self.heading_path or heading_path.startswith(self.heading_path + HEADING_SEPARATOR)
        )


@dataclass(frozen=True)
class GoldenQuestion:
    id: str
    category: str
    audience: str
    question: str
    answerable: bool
    gold: tuple[GoldChunk, ...] = ()
    facts: tuple[str, ...] = ()
    history: tuple[str, ...] = ()
    as_of: date | None = None
    leak_probe: bool = False


def _question(data: Any, where: str) -> GoldenQuestion:
    if not isinstance(data, dict):
        raise GoldenSetError(f"{where}: expected a JSON object")
    try:
        category, audience, answerable = data["category"], data.get("audience", "public"), data["answerable"]
        text, qid = data["question"], data["id"]
    except KeyError as exc:
        raise GoldenSetError(f"{where}: missing field {exc.args[0]!r}") from None
    if category not in CATEGORIES:
        raise GoldenSetError(f"{where}: category {category!r} is not one of {', '.join(CATEGORIES)}")
    if audience not in VISIBLE_AUDIENCES:
        raise GoldenSetError(f"{where}: audience {audience!r} is not one of {', '.join(VISIBLE_AUDIENCES)}")
    if not isinstance(text, str) or not text.strip() or not isinstance(answerable, bool):
        raise GoldenSetError(f"{where}: question must be text and answerable true or false")
    gold = tuple(GoldChunk(g["article"], g["heading_path"]) for g in data.get("gold") or [])
    fact = data.get("fact")
    facts = tuple(fact if isinstance(fact, list) else [fact] if fact else [])
    if answerable and (not gold or not facts):
        raise GoldenSetError(f"{where}: an answerable question needs gold chunks and a fact")
    try:
        as_of = date.fromisoformat(data["as_of"]) if data.get("as_of") else None
    except ValueError:
        raise GoldenSetError(f"{where}: as_of {data['as_of']!r} is not a YYYY-MM-DD date") from None
    return GoldenQuestion(
        qid,
        category,
        audience,
        text,
        answerable,
        gold,
        facts,
        tuple(data.get("history") or []),
        as_of,
        bool(data.get("leak_probe")),
    )


def read_golden_set(path: Path) -> list[GoldenQuestion]:
    questions = [_question(data, where) for data, where in json_lines(path, GoldenSetError)]
    if len({q.id for q in questions}) != len(questions):
        raise GoldenSetError(f"{path}: question ids must be unique")
    return questions


@dataclass
class QuestionResult:
    id: str
    category: str
    answerable: bool
    decision: str
    reply: str
    rank: int | None = None  # 1-based rank of the first gold chunk among the turn's candidates
    in_index: bool = False
    in_context: bool = False
    correct: bool = False  # answered, and the answer states the fact
    reached: bool = False  # the fact reached the customer: in an answer, or in a suggestion's quoted unit
    leaked: bool = False
    shipped_claims: int = 0
    supported_shipped_claims: int = 0
    citations: int = 0
    valid_citations: int = 0
    branch: str = "ok"
    signals: dict[str, float] = field(default_factory=dict)  # the abstention decision's inputs and probability
    reading: list[dict[str, Any]] = field(default_factory=list)  # the statements the reader weighed
    units: list[dict[str, Any]] = field(default_factory=list)  # the whole units the reply quoted, with their kind


def version_in_force(collection: Collection, article: str, on: date) -> str | None:
    version = (
        ArticleVersion.objects.filter(article__collection=collection, article__slug=article, effective_date__lte=on)
        .exclude(status__in=["draft", "review"])
        .order_by("-effective_date", "-pk")
        .first()
    )
    return version.version_label if version else None


def versions_then(question: GoldenQuestion, collection: Collection) -> dict[str, str | None]:
    """For a question asked on a past day, the version of each gold article in force that day."""
    if question.as_of is None:
        return {}
    return {g.article: version_in_force(collection, g.article, question.as_of) for g in question.gold}


def is_gold(question: GoldenQuestion, record: dict[str, Any], versions: dict[str, str | None]) -> bool:
    article, heading = record.get("article", ""), record.get("heading_path", "")
    if not any(g.matches(article, heading) for g in question.gold):
        return False
    # A question about the past is answered only by the version in force then.
    return question.as_of is None or record.get("version") == versions.get(article)


def _in_index(question: GoldenQuestion, collection: Collection, versions: dict[str, str | None]) -> bool:
    chunks = Chunk.objects.filter(
        version__article__collection=collection, version__article__slug__in=[g.article for g in question.gold]
    ).values_list("version__article__slug", "heading_path", "version__version_label", "version__status")
    # A question about the present needs the published version; one about the past, the version then.
    return any(
        is_gold(question, {"article": article, "heading_path": heading, "version": label}, versions)
        and (question.as_of is not None or status == "published")
        for article, heading, label, status in chunks
    )


def _leaked(question: GoldenQuestion, turn: Turn) -> bool:
    chunk_ids = {c["chunk"] for c in turn.candidates} | {p["chunk_id"] for p in turn.context if p.get("chunk_id")}
    audiences = set(Chunk.objects.filter(pk__in=chunk_ids).values_list("version__audience", flat=True))
    return bool(audiences - set(VISIBLE_AUDIENCES[question.audience]))


def _branch(result: QuestionResult) -> str:
    if not result.answerable:
        return "ok" if result.decision != "answered" else "generation: wrong"
    if not result.in_index:
        return "coverage"
    if result.rank is None:
        return "retrieval"
    if not result.in_context:
        return "assembly"
    if result.decision == "abstained":
        return "generation: abstained"
    if result.decision == "referred":
        return "generation: referred"
    if result.decision == "suggested":
        return "suggested" if result.reached else "generation: suggested without the fact"
    return "ok" if result.correct else "generation: wrong"


def evaluate_question(question: GoldenQuestion, collection: Collection, services: TurnServices) -> QuestionResult:
    conversation = Conversation.objects.create(collection=collection, audience=question.audience, from_lab=True)
    for earlier in question.history:
        answer_turn(conversation, earlier, services=services, today=question.as_of)
    turn_result = answer_turn(conversation, question.question, services=services, today=question.as_of)
    turn = Turn.objects.get(pk=turn_result.turn_id)
    versions = versions_then(question, collection)
    result = QuestionResult(
        question.id,
        question.category,
        question.answerable,
        turn.decision,
        turn.reply,
        signals=turn.signals,
        reading=turn.reading,
        units=turn.units,
    )
    ranks = [i for i, c in enumerate(turn.candidates, start=1) if is_gold(question, c, versions)]
    result.rank = ranks[0] if ranks else None
    result.in_index = question.answerable and _in_index(question, collection, versions)
    result.in_context = any(is_gold(question, p, versions) for p in turn.context if p.get("trust") == "retrieved")
    states_fact = any(f.lower() in turn.reply.lower() for f in question.facts)
    result.correct = question.answerable and turn.decision == "answered" and states_fact
    result.reached = question.answerable and turn.decision in ("answered", "suggested") and states_fact
    result.leaked = _leaked(question, turn)
    if turn.decision in ("answered", "suggested"):
        claims = list(Claim.objects.filter(turn=turn).exclude(tier="not_a_claim"))
        result.shipped_claims = len(claims)
        result.supported_shipped_claims = sum(c.verdict == Verdict.SUPPORTED for c in claims)
        numbered = {p["number"]: p for p in turn.context if p.get("number")}
        result.citations = len(turn.citations)
        result.valid_citations = sum(
            c["number"] in numbered and numbered[c["number"]].get("article") == c["article"] for c in turn.citations
        )
    result.branch = _branch(result)
    return result


def _share(part: int, whole: int) -> float | None:
    return round(part / whole, 3) if whole else None


def summarise(results: list[QuestionResult]) -> dict[str, Any]:
    answerable = [r for r in results if r.answerable]
    unanswerable = [r for r in results if not r.answerable]
    shipped = [r for r in results if r.decision in ("answered", "suggested")]
    claims = sum(r.shipped_claims for r in shipped)
    answered_wrong = sum(r.decision == "answered" and not r.correct for r in answerable)
    unanswerable_answered = sum(r.decision == "answered" for r in unanswerable)
    return {
        "questions": len(results),
        "answerable": len(answerable),
        "unanswerable": len(unanswerable),
        f"recall@{TOP_K}": _share(sum(r.rank is not None and r.rank <= TOP_K for r in answerable), len(answerable)),
        "mrr": round(sum(1 / r.rank for r in answerable if r.rank) / len(answerable), 3) if answerable else None,
        "answer_correct": _share(sum(r.correct for r in answerable), len(answerable)),
        "reached": _share(sum(r.reached for r in answerable), len(answerable)),
        # Of the replies given as answers, the share that answer an answerable question with its fact.
        "answer_precision": _share(sum(r.correct for r in answerable), sum(r.decision == "answered" for r in results)),
        # Answers the customer would take at their word and should not: answerable questions answered without
        # the fact, and unanswerable questions answered.
        "confident_wrong": answered_wrong + unanswerable_answered,
        "unanswerable_answered": _share(unanswerable_answered, len(unanswerable)),
        "abstention_correct": _share(sum(r.decision != "answered" for r in unanswerable), len(unanswerable)),
        "audience_leaks": sum(r.leaked for r in results),
        "unsupported_shipped": claims - sum(r.supported_shipped_claims for r in shipped),
        "faithfulness": _share(sum(r.supported_shipped_claims for r in shipped), claims),
        "citation_validity": _share(sum(r.valid_citations for r in shipped), sum(r.citations for r in shipped)),
        "referral_rate": _share(sum(r.decision == "referred" for r in results), len(results)),
        "failure_tree": dict(Counter(r.branch for r in results)),
        "kinds": {
            "answerable": {kind: sum(r.decision == kind for r in answerable) for kind in KINDS},
            "unanswerable": {kind: sum(r.decision == kind for r in unanswerable) for kind in KINDS},
        },
        "by_category": {
            category: {
                "questions": len(group),
                "correct": sum(r.correct if r.answerable else r.decision != "answered" for r in group),
                "reached": sum(r.reached if r.answerable else r.decision != "answered" for r in group),
                **{kind: sum(r.decision == kind for r in group) for kind in KINDS},
            }
            for category in CATEGORIES
            if (group := [r for r in results if r.category == category])
        },
    }


@dataclass
class AnswerEvaluation:
    summary: dict[str, Any]
    results: list[QuestionResult] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {**self.summary, "results": [asdict(r) for r in self.results]}


def evaluate_answers(
    questions: Iterable[GoldenQuestion],
    collection: Collection,
    services: TurnServices,
    *,
    progress: Callable[[QuestionResult, bool], None] | None = None,
    finished: dict[str, QuestionResult] | None = None,
) -> AnswerEvaluation:
    """Every question's result; those in ``finished`` (an interrupted run's) are reused, not redone.
    ``progress`` hears each result, and whether it is new."""
    results = []
    for question in questions:
        known = (finished or {}).get(question.id)
        result = known or evaluate_question(question, collection, services)
        results.append(result)
        if progress is not None:
            progress(result, known is None)
    return AnswerEvaluation(summarise(results), results)


def recall_at(results: list[QuestionResult], k: int) -> float:
    answerable = [r for r in results if r.answerable]
    return (
        round(sum(r.rank is not None and r.rank <= k for r in answerable) / len(answerable), 3) if answerable else 0.0
    )
