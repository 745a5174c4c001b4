"""Helpers every layer may use: errors and validation, progress, caches, display figures, the example data."""
