"""The Matcher: a shared encoder plus a scorer, its three training losses, and its saved form.

Scores of a batch are one matrix (rows = statements, columns = proofs), never per-pair loops:

* bilinear (paper §6): ``score(s, p) = sᵀ W p + b``, batch matrix ``(S W) Pᵀ + b``, optionally
  scaled as ``sᵀ W p / d + b`` (see :attr:`MatcherConfig.score_scale`);
* distance (SPECTER-style, triplet training): ``score(s, p) = -‖s - p‖²``, which ranks exactly
  as the L2 distance of the triplet loss but factorizes as ``2 s·p - ‖s‖² - ‖p‖²``.

Losses, all on the score matrix ``M`` of a batch of aligned pairs (gold = the diagonal):

* local (§7.1): softmax cross-entropy of each statement over the batch's proofs;
* global (§7.2): structured max-margin ``max(0, Δ(Â, I) + score(Â) - score(I))`` where ``Â`` is
  the exact max-weight assignment (``lap.lapjv``) of the cost-augmented matrix ``M + (1 - I)``;
* triplet (SPECTER): ``max(0, ‖s - p⁺‖ - ‖s - p⁻‖ + margin)``.

:meth:`Matcher.factors` exposes any scorer as ``A Bᵀ + row_bias[:, None] + col_bias[None, :]``
so decoding can compute top-k blocks with matrix products without knowing the scorer.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Sequence

import lap
import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from proofmatch.encoders import (BertEncoder, Encoder, NPTConfig, NPTEncoder, WordPieceCodec,
                                 WordVocab)
from proofmatch.tokens import view as token_view

ENCODERS = ("npt", "scratchbert", "mathbert", "specter")
SCORERS = ("bilinear", "distance")
WEIGHTS_FILE = "model.safetensors"
CONFIG_FILE = "config.json"


# ---------------------------------------------------------------- losses


def local_loss(scores: torch.Tensor) -> torch.Tensor:
    """Mean in-batch softmax cross-entropy of each statement (row) over the batch's proofs."""
    return F.cross_entropy(scores, torch.arange(scores.shape[0], device=scores.device))


def max_assignment(scores: np.ndarray) -> np.ndarray:
    """Exact max-weight perfect matching of a square matrix: ``x[i]`` = column of row ``i``."""
    cost = np.ascontiguousarray(-np.asarray(scores, dtype=np.float64))
    _, x, _ = lap.lapjv(cost)
    return x.astype(np.int64)


def global_loss(scores: torch.Tensor) -> tuple[torch.Tensor, float]:
    """Structured hinge loss of the batch and the accuracy of the augmented assignment.

    ``Δ(Â, I)`` (one per wrong assignment) is folded into the decode as +1 on every off-diagonal
    cell, so ``Δ + score(Â) - score(I) = Σ_i aug[i, Â(i)] - Σ_i M[i, i]``. It is ≥ 0 because the
    identity is a feasible assignment of ``aug``, and exactly 0 (with zero gradient) when the
    identity wins by a margin of 1 per wrong edge. Divided by the batch size, like the local loss.
    """
    n = scores.shape[0]
    aug = scores + (1.0 - torch.eye(n, device=scores.device, dtype=scores.dtype))
    x = max_assignment(aug.detach().float().cpu().numpy())
    cols = torch.as_tensor(x, device=scores.device)
    rows = torch.arange(n, device=scores.device)
    loss = torch.clamp(aug[rows, cols].sum() - scores.diagonal().sum(), min=0.0) / n
    return loss, float(np.mean(x == np.arange(n)))


def triplet_loss(s: torch.Tensor, p_pos: torch.Tensor, p_neg: torch.Tensor, margin: float) -> torch.Tensor:
    """SPECTER's triplet margin loss with L2 (not squared) distances."""
    return F.triplet_margin_loss(s, p_pos, p_neg, margin=margin, p=2)


# ---------------------------------------------------------------- the model


@dataclass
class MatcherConfig:
    """Everything needed to rebuild a Matcher without its training inputs (saved as config.json)."""

    encoder: str                 # npt | scratchbert | mathbert | specter
    scorer: str                  # bilinear | distance
    view: str                    # text | math | both
    max_length: int              # token positions per text (ids, [CLS]/[SEP] included)
    plain_math: bool = False     # strip the `$` type prefix before an external tokenizer
    npt: dict | None = None      # NPTConfig fields
    bert: dict | None = None     # BertConfig.to_dict()
    pooling: str = "cls"         # BERT encoders: cls | mean
    score_scale: float = 1.0     # bilinear scores are (sᵀWp)·score_scale + b (1/d: `scale_scores`)

    def __post_init__(self):
        if self.encoder not in ENCODERS:
            raise ValueError(f"unknown encoder {self.encoder!r}; expected one of {ENCODERS}")
        if self.scorer not in SCORERS:
            raise ValueError(f"unknown scorer {self.scorer!r}; expected one of {SCORERS}")

    def to_dict(self) -> dict:
        return asdict(self)


class Matcher(nn.Module):
    """Shared encoder for statements and proofs, and a bilinear or negative-squared-L2 scorer."""

    def __init__(self, config: MatcherConfig, encoder: Encoder, codec):
        super().__init__()
        self.config, self.encoder, self.codec = config, encoder, codec
        d = encoder.dim
        if config.scorer == "bilinear":
            # W starts at the identity plus nn.Bilinear's uniform noise: an untrained model then
            # scores pairs by the overlap of their pooled embeddings (shared symbols and words),
            # which training refines; from pure noise a small corpus barely gets off the ground.
            bound = 1.0 / np.sqrt(d)
            self.W = nn.Parameter(torch.eye(d) + torch.empty(d, d).uniform_(-bound, bound))
            self.b = nn.Parameter(torch.empty(()).uniform_(-bound, bound))

    # -- tensors ---------------------------------------------------------------------------

    def score_matrix(self, S: torch.Tensor, P: torch.Tensor) -> torch.Tensor:
        """``[len(S), len(P)]`` scores, computed in float32 even under bf16 autocast (the losses
        and the assignment compare scores that differ by less than bf16's resolution)."""
        with torch.autocast(S.device.type, enabled=False):
            S, P = S.float(), P.float()
            if self.config.scorer == "bilinear":
                return (S @ self.W.float()) @ P.T * self.config.score_scale + self.b.float()
            return 2.0 * S @ P.T - (S * S).sum(1)[:, None] - (P * P).sum(1)[None, :]

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, sizes: Sequence[int],
                gather: Callable[[torch.Tensor], torch.Tensor] | None = None
                ) -> tuple[list[torch.Tensor], torch.Tensor]:
        """Encode the rows of a batch in one pass of the shared encoder, cut them into
        consecutive groups of ``sizes`` rows (statements, proofs, [negative proofs]), and return
        the groups and ``score_matrix`` of the first two.

        ``gather`` (several processes: :meth:`proofmatch.devices.Runtime.gather`) turns each
        group of this rank's rows into the group of the whole batch before scoring, inside the
        forward so that DDP sees the scorer's weights used."""
        emb = self.encoder(input_ids, attention_mask).float()
        groups = list(torch.split(emb, list(sizes)))
        if gather is not None:
            groups = [gather(g) for g in groups]
        return groups, self.score_matrix(groups[0], groups[1])

    # -- token lists -----------------------------------------------------------------------

    @property
    def device(self) -> torch.device:
        return next(self.parameters()).device

    def tensors(self, sequences: Sequence[Sequence[str]]) -> tuple[torch.Tensor, torch.Tensor]:
        """Apply the input view and the codec: token lists -> padded ``(ids, mask)`` on CPU."""
        return self.codec.encode([token_view(s, self.config.view) for s in sequences],
                                 self.config.max_length)

    @torch.no_grad()
    def embed(self, sequences: Sequence[Sequence[str]], batch_size: int = 64,
              progress: bool = False) -> torch.Tensor:
        """Embeddings ``[n, d]`` (float32, CPU) in eval mode; batches are formed by length so
        that padding stays small, and the output is in input order."""
        from tqdm.auto import tqdm

        was_training = self.training
        self.eval()
        order = sorted(range(len(sequences)), key=lambda i: len(sequences[i]))
        out = torch.empty(len(sequences), self.encoder.dim)
        dev = self.device
        starts = range(0, len(order), batch_size)
        for start in tqdm(starts, desc="encode", disable=not progress, leave=False):
            idx = order[start:start + batch_size]
            ids, mask = self.tensors([sequences[i] for i in idx])
            with torch.autocast(dev.type, dtype=torch.bfloat16, enabled=dev.type == "cuda"):
                emb = self.encoder(ids.to(dev), mask.to(dev))
            out[torch.as_tensor(idx)] = emb.float().cpu()
        self.train(was_training)
        return out

    @torch.no_grad()
    def factors(self, statement_tokens: Sequence[Sequence[str]], proof_tokens: Sequence[Sequence[str]],
                batch_size: int = 64, progress: bool = False
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(A, B, row_bias, col_bias)`` float32 with scores ``= A @ B.T + row_bias[:, None] + col_bias[None, :]``."""
        S = self.embed(statement_tokens, batch_size, progress).double()
        P = self.embed(proof_tokens, batch_size, progress).double()
        if self.config.scorer == "bilinear":
            A = S @ self.W.detach().double().cpu() * self.config.score_scale
            row = torch.full((len(S),), float(self.b.detach()), dtype=torch.float64)
            col = torch.zeros(len(P), dtype=torch.float64)
            B = P
        else:
            A, B = 2.0 * S, P
            row, col = -(S * S).sum(1), -(P * P).sum(1)
        return tuple(t.float().numpy() for t in (A, B, row, col))  # type: ignore[return-value]

    @torch.no_grad()
    def score_pairs(self, statement_tokens: Sequence[Sequence[str]],
                    proof_tokens: Sequence[Sequence[str]], batch_size: int = 64) -> np.ndarray:
        """Scores of aligned pairs ``(statement_i, proof_i)``; a side of length 1 is broadcast
        (LIME: many perturbed statements against one proof, encoded once)."""
        n_s, n_p = len(statement_tokens), len(proof_tokens)
        if n_s != n_p and 1 not in (n_s, n_p):
            raise ValueError(f"score_pairs needs equal lengths or one side of length 1; got {n_s}, {n_p}")
        S = self.embed(statement_tokens, batch_size).to(self.device)
        P = self.embed(proof_tokens, batch_size).to(self.device)
        n = max(n_s, n_p)
        S, P = S.expand(n, -1), P.expand(n, -1)
        if self.config.scorer == "bilinear":
            out = ((S @ self.W.float()) * P).sum(1) * self.config.score_scale + self.b.float()
        else:
            out = -((S - P) ** 2).sum(1)
        return out.float().cpu().numpy()

    # -- persistence -----------------------------------------------------------------------

    def save_pretrained(self, out_dir: str | os.PathLike) -> None:
        """config.json + model.safetensors + codec files, swapped into ``out_dir`` as a whole."""
        from safetensors.torch import save_file

        target = Path(out_dir)
        target.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
        try:
            (staging / CONFIG_FILE).write_text(json.dumps(self.config.to_dict(), indent=2, sort_keys=True) + "\n")
            state = {k: v.detach().cpu().contiguous() for k, v in self.state_dict().items()}
            save_file(state, str(staging / WEIGHTS_FILE))
            self.codec.save(staging)
            replace_dir(staging, target)
        finally:
            if staging.exists():
                shutil.rmtree(staging)

    @classmethod
    def from_pretrained(cls, model_dir: str | os.PathLike, device: str | torch.device | None = None) -> "Matcher":
        from safetensors.torch import load_file

        model_dir = Path(model_dir)
        cfg_path = model_dir / CONFIG_FILE
        if not cfg_path.exists():
            raise FileNotFoundError(f"{model_dir}: no {CONFIG_FILE}; not a saved Matcher")
        config = MatcherConfig(**json.loads(cfg_path.read_text()))
        if config.encoder == "npt":
            encoder: Encoder = NPTEncoder(NPTConfig(**config.npt))
            codec = WordVocab.load(model_dir)
        else:
            encoder = BertEncoder.from_config(config.bert, config.pooling)
            codec = WordPieceCodec.load(model_dir, plain=config.plain_math)
        matcher = cls(config, encoder, codec)
        matcher.load_state_dict(load_file(str(model_dir / WEIGHTS_FILE)))
        dev = torch.device(device) if device else default_device()
        return matcher.to(dev).eval()


def default_device() -> torch.device:
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def replace_dir(new: Path, target: Path) -> None:
    """Swap the finished folder ``new`` into ``target``. A crash between the two renames leaves
    ``target`` missing (never half-written); the trainer rewrites it when it resumes."""
    old = None
    if target.exists():
        old = Path(tempfile.mkdtemp(prefix=f".{target.name}.old.", dir=target.parent))
        old.rmdir()
        os.replace(target, old)
    os.replace(new, target)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def load_matcher(run_dir: str | os.PathLike, device: str | torch.device | None = None) -> Matcher:
    """Load the best model of a training run (``run_dir/model``) or a saved model folder."""
    run_dir = Path(run_dir)
    model_dir = run_dir / "model" if (run_dir / "model" / CONFIG_FILE).exists() else run_dir
    return Matcher.from_pretrained(model_dir, device)
