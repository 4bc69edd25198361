"""Tests of the evaluation lab: its evaluations, fitting, experiments and benchmarks."""
