"""Evaluation: decoding, evaluation runs, baselines, the paper's tables, Figure 2 and transfer."""
