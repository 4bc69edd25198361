"""Claim-by-claim grounding: every substantive sentence of a draft must be supported by a passage it cites.

Tiers, cheapest first; the first that settles a claim is recorded:
citation check → exact (normalised) match → embedding similarity → entailment (an NLI model where one
is configured, otherwise the support verifier) → LLM judge (only with an API key) → a person.
The support verifier is not entailment: it is the cross-encoder's relevance score of (claim, best
sentence) plus number and negation consistency; `evaluate grounding` measures what it is worth.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass
from enum import StrEnum

import numpy as np

from answering.evidence.context import Context
from answering.ground.claims import ClaimText, is_negated, missing_numbers, normalise, split_claims
from answering.providers.base import ProviderUnavailable
from answering.read.reader import passage_sentences, quotable_forms
from knowledge.embeddings import Embedder
from knowledge.injection import without_instructions
from knowledge.rerank import CrossEncoder

_ALONE_ON_SUSPECT = (
    "no trusted statement of the cited passage supports it, and one that may be written for the model was "
    "left out: a person should check"
)
_NO_TIER = "no tier could ground it: a person should check"


class Tier(StrEnum):
    NOT_A_CLAIM = "not_a_claim"
    CITATION = "citation"
    EXACT = "exact"
    SIMILARITY = "similarity"
    NLI = "nli"
    SUPPORT_VERIFIER = "support_verifier"
    LLM_JUDGE = "llm_judge"
    PERSON = "person"


@dataclass(frozen=True)
class ClaimVerdict:
    text: str
    citations: tuple[int, ...]
    supported: bool
    tier: Tier
    score: float | None = None
    reason: str = ""


@dataclass(frozen=True)
class SupportVerdict:
    supported: bool
    # A number or negation that disagrees with the best sentence settles it; a low score alone does not.
    decisive: bool
    score: float
    sentence: str
    reason: str


@dataclass
class Grounder:
    embedder: Embedder
    reranker: CrossEncoder
    similarity_threshold: float = 0.9
    support_threshold: float = 3.0
    # (premise, hypothesis) → probability of entailment, where a deployment has an NLI model.
    entailment: Callable[[str, str], float] | None = None
    entailment_threshold: float = 0.5
    # (claim, passage) → supported?, where an API key allows an LLM judge.
    judge: Callable[[str, str], bool] | None = None

    def verify_support(self, claim: str, sentences: list[str]) -> SupportVerdict:
        """The support verifier on its own: the best-scoring sentence, and whether its numbers and
        negation agree with the claim's."""
        scores = self.reranker.score(claim, sentences)
        best = int(np.argmax(scores))
        sentence, score = sentences[best], float(scores[best])
        if missing := missing_numbers(claim, sentence):
            reason = f"the closest sentence does not state {', '.join(sorted(missing))}"
            return SupportVerdict(False, True, score, sentence, reason)
        if is_negated(claim) != is_negated(sentence):
            return SupportVerdict(False, True, score, sentence, "the claim and the passage disagree on a negation")
        if score < self.support_threshold:
            reason = f"support score {score:.2f} < {self.support_threshold}"
            return SupportVerdict(False, False, score, sentence, reason)
        return SupportVerdict(True, True, score, sentence, f"support score {score:.2f}")

    def ground(self, claim: ClaimText, context: Context, visible_chunks: Collection[int]) -> ClaimVerdict:
        def verdict(supported: bool, tier: Tier, reason: str, score: float | None = None) -> ClaimVerdict:
            return ClaimVerdict(claim.text, claim.citations, supported, tier, score, reason)

        if not claim.is_substantive:
            return verdict(True, Tier.NOT_A_CLAIM, "states nothing to check")
        if not claim.citations:
            return verdict(False, Tier.CITATION, "no citation")
        passages = [context.passage(n) for n in claim.citations]
        if any(p is None for p in passages):
            return verdict(False, Tier.CITATION, "cites a passage that was not given")
        cited = [p for p in passages if p is not None]
        # Verified records (chunk_id None) were built for this customer alone, this turn.
        if any(p.chunk_id is not None and p.chunk_id not in visible_chunks for p in cited):
            return verdict(False, Tier.CITATION, "cites an article that is not current for this customer")
        # A sentence that addresses the assistant is inert text: it can never count as support. Nor can one
        # that may: what it alone supports goes to a person, never to the customer.
        trusted = [without_instructions(p.text, suspect_too=True) for p in cited]
        sentences = [s for text, _ in trusted for s in passage_sentences(text)]
        doubted = any(left_out for _, left_out in trusted)
        unsupported = verdict(False, Tier.PERSON, _ALONE_ON_SUSPECT if doubted else _NO_TIER)
        evidence = "\n".join(sentences)
        if not sentences:
            return unsupported if doubted else verdict(False, Tier.CITATION, "the cited passage has no statement")
        # A passage's heading is part of it: "E-4012: Card declined…" states the code its heading names.
        if missing := missing_numbers(claim.text, "\n".join([evidence, *(p.heading_path for p in cited)])):
            return verdict(False, Tier.CITATION, f"the cited passage does not state {', '.join(sorted(missing))}")
        quoted = normalise(claim.text)
        if quoted in normalise(evidence) or any(
            quoted in normalise(form)
            for p, (text, _) in zip(cited, trusted, strict=True)
            for form in quotable_forms(text, p.heading_path)
        ):
            return verdict(True, Tier.EXACT, "quoted from the cited passage")

        vectors = self.embedder.encode([claim.text, *sentences])
        similarities = vectors[1:] @ vectors[0]
        best = int(np.argmax(similarities))
        similarity, closest = float(similarities[best]), sentences[best]
        # Embeddings barely see numbers or negations: "2 to 3 days" sits close to "5 to 10 days".
        consistent = not missing_numbers(claim.text, closest) and is_negated(claim.text) == is_negated(closest)
        if similarity >= self.similarity_threshold and consistent:
            return verdict(True, Tier.SIMILARITY, f"cosine {similarity:.3f} with a cited sentence", similarity)

        if self.entailment is not None:
            probability = max(self.entailment(s, claim.text) for s in sentences)
            if probability >= self.entailment_threshold:
                return verdict(True, Tier.NLI, f"entailment probability {probability:.2f}", probability)
        else:
            support = self.verify_support(claim.text, sentences)
            if support.decisive:
                return verdict(support.supported, Tier.SUPPORT_VERIFIER, support.reason, support.score)
        if self.judge is not None:
            try:
                supported = self.judge(claim.text, evidence)
            except ProviderUnavailable as exc:
                return verdict(False, Tier.PERSON, f"the LLM judge was unavailable ({exc}): a person should check")
            return verdict(supported, Tier.LLM_JUDGE, f"the LLM judge found it {'' if supported else 'un'}supported")
        return unsupported

    def ground_reply(self, reply: str, context: Context, visible_chunks: Collection[int]) -> list[ClaimVerdict]:
        return [self.ground(claim, context, visible_chunks) for claim in split_claims(reply)]
