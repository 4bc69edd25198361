"""Train the answer model: a cross-encoder that scores (question, "heading: statement") for "this statement
answers the question", the pairs the reader and the reranking already read.

It starts from the shipped int8 reranker (ms-marco-MiniLM-L-12-v2) turned back into float weights: one scale
per weight tensor with zero point 0 for the int8 matrices, a scale and a zero point for the uint8 embeddings.
A student keeps every second of its 12 layers, is fine-tuned on lab/datasets/answers/train-*.jsonl (public sets
with statement-level labels; negatives are statements of the same page that do not answer), exported to ONNX
and quantised to int8 with one scale per output channel (lab.onnx_export says why). The dev and test splits
(other pages) measure it beside the shipped reranker. Deterministic: fixed seeds, fixed sampling,
deterministic torch kernels, no download.

    python -m lab.answer_training --out knowledge/answer_model            # ~30 min on 2 cores

Torch, transformers and onnx are needed here only; serving runs the exported file with onnxruntime.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from knowledge.rerank import PACKAGED_RERANKER, CrossEncoder, resolve_reranker_dir
from lab.answer_sources import SOURCE_NAMES, split_file
from lab.errors import AnswerDataError
from lab.fine_tuning import adamw_with_warmup, take_step
from lab.jsonl import json_lines
from lab.onnx_export import MODEL_FILE, export_int8

DATA = Path(__file__).resolve().parent / "datasets" / "answers"
METRICS_FILE = "metrics.json"


@dataclass(frozen=True)
class Group:
    """One question and the statements of its page, with the indices of those that answer it."""

    source: str
    page: str
    question: str
    statements: tuple[str, ...]  # "heading: text", as the reader reads a statement
    answers: frozenset[int]


def load_split(data: Path, split: str) -> list[Group]:
    """Every source's questions of one split (`train`, `dev`, `test`), in lab.answer_sources's order."""
    return [group for source in SOURCE_NAMES for group in load_groups(data / split_file(split, source))]


def load_groups(path: Path) -> list[Group]:
    groups = []
    for row, where in json_lines(path, AnswerDataError):
        try:
            group = Group(
                source=row["source"].split(":")[0],
                page=row["page"],
                question=row["question"],
                statements=tuple(f"{heading}: {text}" for heading, text in row["statements"]),
                answers=frozenset(row["answers"]),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise AnswerDataError(f"{where}: not a question row of lab.answer_sources ({exc!r})") from None
        if not group.answers or max(group.answers) >= len(group.statements) or min(group.answers) < 0:
            raise AnswerDataError(f"{where}: its answers must index its statements")
        groups.append(group)
    return groups


def float_weights(onnx_path: Path) -> dict[str, np.ndarray]:
    """The int8 ONNX cross-encoder's weights as float arrays under the names `BertForSequenceClassification`
    uses. Matrices are found through the MatMulInteger nodes that read them (the node's name is the module's
    path), transposed from ONNX's [in, out] to torch's [out, in]."""
    import onnx
    from onnx import numpy_helper

    graph = onnx.load(str(onnx_path)).graph
    stored = {init.name: numpy_helper.to_array(init) for init in graph.initializer}
    weights: dict[str, np.ndarray] = {}
    for name, value in stored.items():
        if value.dtype == np.float32 and not name.endswith("_scale") and value.ndim >= 1:
            weights[name] = value
    for name in list(stored):
        if name.endswith(".weight_quantized") and "embeddings" in name:  # uint8, scale and zero point
            base = name.removesuffix("_quantized")
            quantised = stored[name].astype(np.float32) - stored[f"{base}_zero_point"].astype(np.float32)
            weights[base] = quantised * stored[f"{base}_scale"]
    for node in graph.node:
        if node.op_type != "MatMulInteger":
            continue
        matrix = node.input[1]
        base = matrix.removesuffix("_quantized")
        if float(stored[f"{base}_zero_point"]) != 0.0:
            raise ValueError(f"{matrix}: expected zero point 0 for an int8 weight")
        module = node.name.strip("/").rsplit("/", 1)[0].replace("/", ".")
        weights[f"{module}.weight"] = (stored[matrix].astype(np.float32) * stored[f"{base}_scale"]).T.copy()
    return weights


def bert_config(layers: int, *, hidden: int = 384, heads: int = 12, intermediate: int = 1536) -> Any:
    from transformers import BertConfig

    config = BertConfig(
        vocab_size=30522,
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        intermediate_size=intermediate,
        max_position_embeddings=512,
        type_vocab_size=2,
    )
    config.num_labels = 1  # one logit: answers or not, as the reranker's head
    return config


def student_of_reranker(model_dir: Path, keep: Sequence[int]) -> Any:
    """A BertForSequenceClassification with the reranker's embeddings, head and the layers in `keep`
    (renumbered from 0). Refuses weights that do not fit exactly: a missing key would start untrained."""
    import torch
    from transformers import BertForSequenceClassification

    weights = float_weights(model_dir / MODEL_FILE)
    renamed: dict[str, Any] = {}
    for name, value in weights.items():
        if ".encoder.layer." in name:
            prefix, rest = name.split(".encoder.layer.", 1)
            number, tail = rest.split(".", 1)
            if int(number) not in keep:
                continue
            name = f"{prefix}.encoder.layer.{list(keep).index(int(number))}.{tail}"
        renamed[name] = torch.from_numpy(np.array(value))
    model = BertForSequenceClassification(bert_config(len(keep)))
    missing, unexpected = model.load_state_dict(renamed, strict=False)
    missing = [m for m in missing if not m.endswith("position_ids")]
    if missing or unexpected:
        raise ValueError(f"reranker weights do not fit: missing {missing}, unexpected {unexpected}")
    return model


def pair_logits(model: Any, encoded: Sequence[Any]) -> Any:
    """The model's logits (a torch tensor) for pairs the tokenizer encoded, padded to one width."""
    import torch

    return model(
        input_ids=torch.tensor([e.ids for e in encoded]),
        attention_mask=torch.tensor([e.attention_mask for e in encoded]),
        token_type_ids=torch.tensor([e.type_ids for e in encoded]),
    ).logits[:, 0]


@dataclass(frozen=True)
class TrainingPlan:
    epochs: int = 1
    groups_per_step: int = 4
    statements_per_group: int = 8
    learning_rate: float = 4e-5
    warmup: float = 0.05
    max_tokens: int = 128
    seed: int = 13
    distillation: float = 1.0  # weight of the teacher's softmax, when there is a teacher


def sample_statements(group: Group, size: int, rng: random.Random) -> list[tuple[str, float]]:
    """Every answering statement (at most half the sample) and a fixed-seed draw of the others."""
    answers = sorted(group.answers)[: max(1, size // 2)]
    others = [i for i in range(len(group.statements)) if i not in group.answers]
    rng.shuffle(others)
    chosen = answers + others[: size - len(answers)]
    return [(group.statements[i], 1.0 if i in group.answers else 0.0) for i in chosen]


def train(
    model: Any,
    tokenizer_path: Path,
    groups: list[Group],
    plan: TrainingPlan,
    log: Callable[[str], None],
    teacher: CrossEncoder | None = None,
) -> Any:
    """Fine-tune on question groups: a listwise loss (the answering statements should take the softmax's mass
    among their page's statements) plus a pointwise logistic loss, so that the score also means something
    on its own (the decision compares it across questions). With a `teacher` (the shipped reranker), each
    group's softmax is also drawn towards the teacher's (distillation): a smaller student keeps the
    teacher's reading of relevance where the labels say nothing, and learns from them what answers."""
    import torch
    from tokenizers import Tokenizer

    torch.manual_seed(plan.seed)
    torch.use_deterministic_algorithms(True)
    tokenizer = Tokenizer.from_file(str(tokenizer_path))
    tokenizer.enable_truncation(plan.max_tokens, strategy="only_second")
    tokenizer.enable_padding()
    rng = random.Random(plan.seed)
    steps_per_epoch = math.ceil(len(groups) / plan.groups_per_step)
    total = steps_per_epoch * plan.epochs
    optimiser, schedule = adamw_with_warmup(model, plan.learning_rate, total, plan.warmup)
    model.train()
    started = time.monotonic()
    step = 0
    for _epoch in range(plan.epochs):
        order = list(range(len(groups)))
        rng.shuffle(order)
        for start in range(0, len(order), plan.groups_per_step):
            batch = [
                sample_statements(groups[i], plan.statements_per_group, rng)
                for i in order[start : start + plan.groups_per_step]
            ]
            questions = [groups[i].question for i in order[start : start + plan.groups_per_step]]
            pairs = [(q, text) for q, sample in zip(questions, batch, strict=True) for text, _ in sample]
            labels = torch.tensor([label for sample in batch for _, label in sample])
            logits = pair_logits(model, tokenizer.encode_batch(pairs))
            loss = torch.nn.functional.binary_cross_entropy_with_logits(logits, labels)
            offset = 0
            for question, sample in zip(questions, batch, strict=True):
                z = logits[offset : offset + len(sample)]
                y = labels[offset : offset + len(sample)]
                offset += len(sample)
                loss = loss + (torch.logsumexp(z, 0) - torch.logsumexp(z[y > 0], 0)) / len(batch)
                if teacher is not None:
                    taught = torch.log_softmax(torch.from_numpy(teacher.score(question, [t for t, _ in sample])), 0)
                    kl = torch.sum(taught.exp() * (taught - torch.log_softmax(z, 0)))
                    loss = loss + plan.distillation * kl / len(batch)
            take_step(model, loss, optimiser, schedule)
            step += 1
            if step % 50 == 0 or step == total:
                rate = step * plan.groups_per_step * plan.statements_per_group / (time.monotonic() - started)
                log(f"step {step}/{total}  loss {loss.item():.3f}  {rate:.0f} pairs/s")
    model.eval()
    return model


def export_agreement(model: Any, exported: CrossEncoder, groups: list[Group], tokenizer_path: Path) -> float:
    """Pearson correlation of the exported int8 file's scores with the float model's, over the statements of
    `groups` (batches of many lengths): the export must score as the model it came from."""
    import torch
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(tokenizer_path))
    tokenizer.enable_truncation(exported.max_tokens, strategy="only_second")
    tokenizer.enable_padding()
    floats, int8 = [], []
    for group in groups:
        with torch.no_grad():
            floats += pair_logits(
                model, tokenizer.encode_batch([(group.question, s) for s in group.statements])
            ).tolist()
        int8 += exported.score(group.question, list(group.statements)).tolist()
    return float(np.corrcoef(floats, int8)[0, 1])


def _auc(positive: list[float], negative: list[float]) -> float:
    if not positive or not negative:
        return float("nan")
    scores = np.array(positive + negative)
    ranks = scores.argsort().argsort() + 1.0
    return float(
        (ranks[: len(positive)].sum() - len(positive) * (len(positive) + 1) / 2) / (len(positive) * len(negative))
    )


def statement_metrics(model: CrossEncoder, groups: list[Group]) -> dict[str, dict[str, float]]:
    """Per source and overall: how often the top-scored statement of a page answers (precision@1), the
    mean reciprocal rank of the first answering one, and the ROC AUC of answering against the other
    statements, pooled across questions (the decision compares scores across questions)."""
    per: dict[str, dict[str, list[float]]] = defaultdict(lambda: {"p1": [], "rr": [], "pos": [], "neg": []})
    for group in groups:
        scores = model.score(group.question, list(group.statements)).tolist()
        ranked = sorted(range(len(scores)), key=lambda i: -scores[i])
        first = next(rank for rank, i in enumerate(ranked, 1) if i in group.answers)
        for key in (group.source, "all"):
            per[key]["p1"].append(1.0 if ranked[0] in group.answers else 0.0)
            per[key]["rr"].append(1.0 / first)
            per[key]["pos"] += [scores[i] for i in group.answers]
            per[key]["neg"] += [s for i, s in enumerate(scores) if i not in group.answers]
    return {
        key: {
            "questions": len(v["p1"]),
            "precision_at_1": round(float(np.mean(v["p1"])), 4),
            "mrr": round(float(np.mean(v["rr"])), 4),
            "auc": round(_auc(v["pos"], v["neg"]), 4),
        }
        for key, v in sorted(per.items())
    }


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True, help="folder for model.onnx, tokenizer.json, metrics")
    parser.add_argument("--data", type=Path, default=DATA, help="folder with each split's files")
    parser.add_argument("--layers", default="1,3,5,7,9,11", help="reranker layers the student keeps")
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--limit", type=int, default=0, help="train on the first N groups only (tests)")
    parser.add_argument("--groups", type=int, default=0, help="train on a fixed-seed sample of N groups")
    parser.add_argument("--learning-rate", type=float, default=TrainingPlan.learning_rate)
    parser.add_argument(
        "--distill", action="store_true", help="also draw each group's scores towards the shipped reranker's"
    )
    parser.add_argument(
        "--tiny-random", action="store_true", help="a 1-layer randomly initialised model (tests of the plumbing)"
    )
    args = parser.parse_args(argv)

    import torch

    torch.set_num_threads(2)
    reranker_dir = resolve_reranker_dir(PACKAGED_RERANKER)
    tokenizer_path = reranker_dir / "tokenizer.json"
    if args.tiny_random:
        from transformers import BertForSequenceClassification

        torch.manual_seed(0)
        model = BertForSequenceClassification(bert_config(1, hidden=32, heads=2, intermediate=64))
    else:
        model = student_of_reranker(reranker_dir, [int(n) for n in args.layers.split(",")])
    groups = load_split(args.data, "train")
    if args.limit:
        groups = groups[: args.limit]
    if args.groups:
        groups = random.Random(TrainingPlan.seed).sample(groups, min(args.groups, len(groups)))
    plan = TrainingPlan(epochs=args.epochs, learning_rate=args.learning_rate)
    started = time.monotonic()
    teacher = CrossEncoder(reranker_dir, max_tokens=plan.max_tokens) if args.distill else None
    train(model, tokenizer_path, groups, plan, log=print, teacher=teacher)
    minutes = (time.monotonic() - started) / 60
    digest = export_int8(model, tokenizer_path, args.out)
    # The float weights stay beside the export (not shipped) so that it can be checked or redone.
    model.save_pretrained(args.out / "float")
    trained = CrossEncoder(args.out, max_tokens=plan.max_tokens)
    shipped = CrossEncoder(reranker_dir, max_tokens=plan.max_tokens)
    metrics: dict[str, Any] = {
        "sha256": digest,
        "train_groups": len(groups),
        "train_minutes": round(minutes, 1),
        "export_pearson": round(export_agreement(model, trained, load_split(args.data, "dev")[:20], tokenizer_path), 4),
    }
    for split in ("dev", "test"):
        held_out = load_split(args.data, split)
        if args.limit:
            held_out = held_out[: args.limit]
        metrics[split] = {
            "answer_model": statement_metrics(trained, held_out),
            "reranker": statement_metrics(shipped, held_out),
        }
    (args.out / METRICS_FILE).write_text(json.dumps(metrics, indent=2) + "\n")
    print(json.dumps(metrics, indent=2))


if __name__ == "__main__":
    main()
