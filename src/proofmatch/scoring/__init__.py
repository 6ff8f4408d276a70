"""Scoring below evaluation and search: the token-matching scorers (TF-IDF, BM25), the fusion of a learned and a lexical score, and the token lists they read."""
