"""What the evaluation lab refuses (a malformed golden, calibration or evidence set), naming the line and field."""

from __future__ import annotations


class GoldenSetError(ValueError):
    pass


class CalibrationError(ValueError):
    pass


class GroundingDatasetError(ValueError):
    pass


class AttackSetError(ValueError):
    pass


class PiiDatasetError(ValueError):
    pass


class InjectionSetupError(ValueError):
    pass


class GoldenCandidateError(ValueError):
    """A golden-set candidate staff cannot save as given; ``field`` names the form field to fix."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


class GapLabelError(ValueError):
    """A malformed content-gap topic labelling (lab/sample/gap_labels.jsonl)."""


class AnswerDataError(ValueError):
    """A malformed answer-model data set (lab/datasets/answers/), named by file and line."""


class NamesDataError(ValueError):
    """A file of the name tagger's data is not as lab.names_sources writes it."""


class AsideDataError(ValueError):
    """The asides' statements or labels (lab/datasets/boilerplate/) cannot be read."""
