"""Decoding of a statement x proof score matrix: local ranking and top-k (``local``, ``topk``), global
assignment (``assign``). Below models and evaluation: training decodes its dev part as evaluation does."""
