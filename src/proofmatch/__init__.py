"""proofmatch: matching mathematical statements with their proofs (MATcH, EACL 2023).

The package holds all logic; ``workflow/scripts`` and the ``proofmatch`` CLI are thin callers.
"""

__version__ = "0.1.0"
