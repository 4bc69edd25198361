"""Errors of the knowledge base, each carrying a message fit to show a person."""


class KnowledgeError(Exception):
    pass


class EmbeddingSpaceMismatch(KnowledgeError):
    """A vector or query from one embedding model met an index built by another."""


class EmbeddingModelUnavailable(KnowledgeError):
    pass


class IngestFileError(KnowledgeError):
    """A source document that cannot be ingested, located by file, line and field."""

    def __init__(self, path: str, message: str, *, line: int | None = None, field: str | None = None) -> None:
        self.path = path
        self.line = line
        self.field = field
        self.message = message
        location = f"{path}:{line}" if line is not None else path
        prefix = f"{field}: " if field else ""
        super().__init__(f"{location}: {prefix}{message}")


class QueryError(KnowledgeError):
    pass


class WorkflowError(KnowledgeError):
    pass


class RerankerUnavailable(KnowledgeError):
    pass


class PackagedModelMissing(KnowledgeError):
    pass
