"""Data stages: corpus reading, extraction, MathML, linearization, filters, splits, replacement, statistics."""
