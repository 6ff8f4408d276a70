"""Evaluation: evaluation runs (decoding: proofmatch.decoding), baselines, the paper's tables, Figure 2 and transfer."""
