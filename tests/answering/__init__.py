"""Tests of answering: the pipeline, its steps and the language-model clients."""
