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
