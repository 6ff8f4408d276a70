"""``proofmatch export-match``: a results tree's splits and levels in the released MATcH layout
(:func:`proofmatch.data.match.export`)."""

from proofmatch.data.match import export_arguments as add_arguments
from proofmatch.data.match import export_main as main

__all__ = ["add_arguments", "main"]
