"""What a pretrained checkpoint is, named from its ``config.json`` and the SHA-256 of its weights.

:func:`identify` names the checkpoint a column was filled with: a known digest (:data:`KNOWN`)
gives its name and what it is, so a stand-in is never shown as the paper's model
("all-MiniLM-L6-v2 (general English; not MathBERT)"); an unknown one is named by its config's
``_name_or_path`` (or its folder) and marked "not MathBERT" unless that name says MathBERT.
Torch-free: the table captions read it, and a saved Matcher keeps it in its config.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")

#: Checkpoints known by the SHA-256 of their weights file: name, and what it is where it is not the
#: paper's MathBERT (a stand-in must say so wherever its numbers are shown).
KNOWN: dict[str, tuple[str, str | None]] = {
    "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db": (
        "all-MiniLM-L6-v2",
        "general English; not MathBERT",
    ),
}


@dataclass(frozen=True)
class CheckpointIdentity:
    """What a pretrained checkpoint is: ``source`` as configured (folder or hub id), ``name``
    (known digest, else the config's ``_name_or_path``, else the folder's name), ``note`` (what it
    is when not MathBERT; None for a MathBERT), ``sha256`` of its weights file (None for a hub id
    not on disk) and ``shape`` (architecture, layers × width)."""

    source: str
    name: str
    note: str | None
    sha256: str | None
    shape: str

    def label(self) -> str:
        """``all-MiniLM-L6-v2 (general English; not MathBERT)``."""
        return f"{self.name} ({self.note})" if self.note else self.name

    def column(self, encoder_label: str = "MathBERT") -> str:
        """A caption's sentence: ``MathBERT column: all-MiniLM-L6-v2 (general English; not
        MathBERT), BertModel 6×384, weights sha256 53aa51172d14…``."""
        digest = f", weights sha256 {self.sha256[:12]}…" if self.sha256 else ""
        return f"{encoder_label} column: {self.label()}, {self.shape}{digest}"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


@functools.lru_cache(maxsize=8)
def _identify(source: str, stamp: tuple) -> CheckpointIdentity:
    folder = Path(source)
    if not folder.is_dir():  # a hub id: named by itself
        mathbert = "mathbert" in source.lower()
        return CheckpointIdentity(
            source, source, None if mathbert else "not MathBERT", None, "hub checkpoint"
        )
    cfg_path = folder / "config.json"
    try:
        cfg = json.loads(cfg_path.read_text())
    except (OSError, ValueError) as e:
        raise ValueError(f"{cfg_path}: not a readable checkpoint config ({e})") from e
    weights = next((folder / w for w in WEIGHT_FILES if (folder / w).exists()), None)
    if weights is None:
        raise FileNotFoundError(f"{folder}: no weights file (one of {', '.join(WEIGHT_FILES)})")
    digest = _sha256(weights)
    arch = (cfg.get("architectures") or [cfg.get("model_type", "model")])[0]
    shape = f"{arch} {cfg.get('num_hidden_layers', '?')}×{cfg.get('hidden_size', '?')}"
    if digest in KNOWN:
        name, note = KNOWN[digest]
    else:
        name = str(cfg.get("_name_or_path") or folder.name)
        note = None if "mathbert" in name.lower() else "not MathBERT"
    return CheckpointIdentity(source, name, note, digest, shape)


def identify(source: str | os.PathLike) -> CheckpointIdentity:
    """The identity of the checkpoint ``source`` (a folder or a hub id); a folder's weights are
    hashed once per size and modification time."""
    path = Path(str(source))
    stamp: tuple = ()
    if path.is_dir():
        stamp = tuple(
            (w, (path / w).stat().st_size, (path / w).stat().st_mtime_ns)
            for w in WEIGHT_FILES
            if (path / w).exists()
        )
    return _identify(str(source), stamp)
