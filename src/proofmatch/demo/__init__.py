"""The project's own demo corpus: arXiv-like XHTML+MathML articles generated from a TeX subset."""
