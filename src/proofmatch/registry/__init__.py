"""Registries: the torch-free description of each way the project grows (encoders, corpus sources, tables)."""
