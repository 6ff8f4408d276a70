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

The losses themselves are in :mod:`proofmatch.models.losses`.

:meth:`Matcher.factors` exposes any scorer as ``A Bᵀ + row_bias[:, None] + col_bias[None, :]``
so decoding can compute top-k blocks with matrix products without knowing the scorer.
:func:`build_matcher` makes the fresh Matcher of a training run from its settings, with the
:class:`EncoderBuilder` its encoder's spec names (:mod:`proofmatch.registry.encoders`).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, get_args

import numpy as np
import torch
from torch import nn

from proofmatch.artifacts import WEIGHTS_MARK, atomic_dir, verify
from proofmatch.data.views import VIEWS
from proofmatch.data.views import view as token_view
from proofmatch.models import runtime
from proofmatch.models.encoders import (
    BertEncoder,
    Encoder,
    NPTConfig,
    NPTEncoder,
    WordPieceCodec,
    WordVocab,
)
from proofmatch.models.params import Pooling, WInit
from proofmatch.registry.checks import one_of
from proofmatch.registry.encoders import EncoderSpec, checkpoint_label, encoder_spec

if TYPE_CHECKING:
    import pandas as pd

    from proofmatch.models.params import TrainParams

log = logging.getLogger(__name__)

SCORERS = ("bilinear", "distance")
W_INITS: tuple[WInit, ...] = get_args(WInit)
POOLINGS: tuple[Pooling, ...] = get_args(Pooling)
WEIGHTS_FILE = "model.safetensors"
CONFIG_FILE = "config.json"


# ---------------------------------------------------------------- the model


def bilinear_start(d: int, w_init: WInit) -> tuple[nn.Parameter, nn.Parameter]:
    """The bilinear scorer's first ``W`` and ``b``.

    * ``bilinear``: ``nn.Bilinear(d, d, 1)``'s default, ``U(±1/√d)`` for both (the reference).
    * ``identity``: the same noise plus ``I``: an untrained model scores pairs by the overlap of
      their pooled embeddings (shared symbols and words), which training refines.
    * ``zeros``: ``W = 0``, ``b = 0``. Max-pooled post-LayerNorm vectors share a large positive
      common part (about +2 in every dimension), so any nonzero ``W`` gives unscaled scores whose
      spread over the proofs of a batch is tens of logits, the same proofs winning every row: the
      in-batch softmax saturates at once. From zero every score is equal, the first gradient of
      ``W`` is minus the batch's statement-proof cross-covariance (the common part cancels).
      Measured: this alone does not rescue the paper's unscaled ASGD, which saturates after its
      first steps all the same (docs/benchmarks.md).
    """
    bound = 1.0 / np.sqrt(d)
    if w_init == "zeros":
        return nn.Parameter(torch.zeros(d, d)), nn.Parameter(torch.zeros(()))
    W = torch.empty(d, d).uniform_(-bound, bound)
    if w_init == "identity":
        W += torch.eye(d)
    return nn.Parameter(W), nn.Parameter(torch.empty(()).uniform_(-bound, bound))


@dataclass
class MatcherConfig:
    """Everything needed to rebuild a Matcher without its training inputs (saved as config.json)."""

    encoder: str  # a registered encoder's name (proofmatch.registry.encoders)
    scorer: str  # bilinear | distance
    view: str  # text | math | both
    max_length: int  # token positions per text (ids, [CLS]/[SEP] included)
    plain_math: bool = False  # strip the `$` type prefix before an external tokenizer
    npt: dict | None = None  # NPTConfig fields
    bert: dict | None = None  # BertConfig.to_dict()
    pooling: Pooling = "cls"  # BERT encoders
    score_scale: float = 1.0  # bilinear scores are (sᵀWp)·score_scale + b (1/d: `scale_scores`)
    w_init: WInit = "identity"  # start of the bilinear W; irrelevant once trained
    normalize: bool = False  # BERT encoders: L2-normalised vectors (W = I scores their cosine)
    # the checkpoint a pretrained encoder started from: name, note, sha256 of its weights
    # (proofmatch.models.pretrained.identify), so that a table names what was loaded
    checkpoint: dict | None = None

    def __post_init__(self):
        """Refuse what no schema checked: a saved model's config.json is read back from a file."""
        encoder_spec(self.encoder)
        one_of("scorer", self.scorer, SCORERS)
        one_of("w_init", self.w_init, W_INITS)
        one_of("pooling", self.pooling, POOLINGS)

    def to_dict(self) -> dict:
        return asdict(self)


class Matcher(nn.Module):
    """Shared encoder for statements and proofs, and a bilinear or negative-squared-L2 scorer."""

    def __init__(self, config: MatcherConfig, encoder: Encoder, codec):
        super().__init__()
        self.config, self.encoder, self.codec = config, encoder, codec
        d = encoder.dim
        if config.scorer == "bilinear":
            self.W, self.b = bilinear_start(d, config.w_init)

    # -- tensors ---------------------------------------------------------------------------

    def score_matrix(self, S: torch.Tensor, P: torch.Tensor) -> torch.Tensor:
        """``[len(S), len(P)]`` scores, computed in float32 even under bf16 autocast (the losses
        and the assignment compare scores that differ by less than bf16's resolution)."""
        with torch.autocast(S.device.type, enabled=False):
            S, P = S.float(), P.float()
            if self.config.scorer == "bilinear":
                return (S @ self.W.float()) @ P.T * self.config.score_scale + self.b.float()
            return 2.0 * S @ P.T - (S * S).sum(1)[:, None] - (P * P).sum(1)[None, :]

    def forward(
        self,
        groups: Sequence[tuple[torch.Tensor, torch.Tensor]],
        gather: Callable[[torch.Tensor], torch.Tensor] | None = None,
    ) -> tuple[list[torch.Tensor], torch.Tensor]:
        """Encode the groups of a batch (statements, proofs, [negative proofs]; each ``(ids,
        mask)`` right-padded to its own longest text) with the shared encoder, and return their
        vectors and ``score_matrix`` of the first two.

        Each group has its own padding because padded positions are masked out of attention and
        pooling: a statement's vector does not depend on the proofs' length, and padding the
        demo's statements (at most 89 tokens) to its proofs' 200 cost a third of an NPT step.

        ``gather`` (several processes: :meth:`proofmatch.models.runtime.Runtime.gather`) turns each
        group of this rank's rows into the group of the whole batch before scoring, inside the
        forward so that DDP sees the scorer's weights used."""
        vectors = [self.encoder(ids, mask).float() for ids, mask in groups]
        if gather is not None:
            vectors = [gather(v) for v in vectors]
        return vectors, self.score_matrix(vectors[0], vectors[1])

    # -- token lists -----------------------------------------------------------------------

    @property
    def device(self) -> torch.device:
        return next(self.parameters()).device

    def tensors(self, sequences: Sequence[Sequence[str]]) -> tuple[torch.Tensor, torch.Tensor]:
        """Apply the input view and the codec: token lists -> padded ``(ids, mask)`` on CPU."""
        return self.codec.encode(
            [token_view(s, self.config.view) for s in sequences], self.config.max_length
        )

    @torch.no_grad()
    def embed(
        self, sequences: Sequence[Sequence[str]], batch_size: int = 64, progress: bool = False
    ) -> torch.Tensor:
        """Embeddings ``[n, d]`` (float32, CPU) in eval mode; batches are formed by length so
        that padding stays small, and the output is in input order."""
        from tqdm.auto import tqdm

        out = torch.empty(len(sequences), self.encoder.dim)
        if not len(sequences):
            return out
        was_training = self.training  # switched only when needed: eval() walks every module
        if was_training:
            self.eval()
        order = sorted(range(len(sequences)), key=lambda i: len(sequences[i]))
        dev = self.device
        starts = range(0, len(order), batch_size)
        for start in tqdm(starts, desc="encode", disable=not progress, leave=False):
            idx = order[start : start + batch_size]
            ids, mask = self.tensors([sequences[i] for i in idx])
            with runtime.autocast(dev):
                emb = self.encoder(ids.to(dev), mask.to(dev))
            out[torch.as_tensor(idx)] = emb.float().cpu()
        if was_training:
            self.train()
        return out

    @torch.no_grad()
    def factors(
        self,
        statement_tokens: Sequence[Sequence[str]],
        proof_tokens: Sequence[Sequence[str]],
        batch_size: int = 64,
        progress: bool = False,
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
    def score_pairs(
        self,
        statement_tokens: Sequence[Sequence[str]],
        proof_tokens: Sequence[Sequence[str]],
        batch_size: int = 64,
    ) -> np.ndarray:
        """Scores of aligned pairs ``(statement_i, proof_i)``; a side of length 1 is broadcast
        (LIME: many perturbed statements against one proof, encoded once)."""
        n_s, n_p = len(statement_tokens), len(proof_tokens)
        if n_s != n_p and 1 not in (n_s, n_p):
            raise ValueError(
                f"score_pairs needs equal lengths or one side of length 1; got {n_s}, {n_p}"
            )
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

        with atomic_dir(out_dir) as staging:
            (staging / CONFIG_FILE).write_text(
                json.dumps(self.config.to_dict(), indent=2, sort_keys=True) + "\n"
            )
            state = {k: v.detach().cpu().contiguous() for k, v in self.state_dict().items()}
            save_file(state, str(staging / WEIGHTS_FILE), metadata=WEIGHTS_MARK)
            self.codec.save(staging)

    @classmethod
    def from_pretrained(
        cls, model_dir: str | os.PathLike, device: str | torch.device | None = None
    ) -> Matcher:
        from safetensors.torch import load_file

        model_dir = Path(model_dir)
        verify(model_dir)  # weights, config and codec against the digest written with them
        cfg_path = model_dir / CONFIG_FILE
        if not cfg_path.exists():
            raise FileNotFoundError(f"{model_dir}: no {CONFIG_FILE}; not a saved Matcher")
        config = MatcherConfig(**json.loads(cfg_path.read_text()))
        builder: EncoderBuilder = encoder_spec(config.encoder).load_builder()
        matcher = cls(config, *builder.saved(config, model_dir))
        matcher.load_state_dict(load_file(str(model_dir / WEIGHTS_FILE)))
        dev = torch.device(device) if device else runtime.default_device()
        return matcher.to(dev).eval()


def load_matcher(run_dir: str | os.PathLike, device: str | torch.device | None = None) -> Matcher:
    """Load the best model of a training run (``run_dir/model``) or a saved model folder."""
    run_dir = Path(run_dir)
    model_dir = run_dir / "model" if (run_dir / "model" / CONFIG_FILE).exists() else run_dir
    return Matcher.from_pretrained(model_dir, device)


# ---------------------------------------------------------------- a fresh Matcher for a training run


class NotConfigured(RuntimeError):
    """A run that cannot be made with this configuration (e.g. MathBERT without a checkpoint)."""


def score_scale(scale_scores: bool, dim: int, scorer: str, cosine: float | None = None) -> float:
    """``1/d`` for a bilinear scorer when ``scale_scores`` is on, else 1 (the paper's ``sᵀWp + b``);
    ``cosine`` for one over L2-normalised vectors (``matching.pretrained.cosine_scale``: a cosine
    in [-1, 1] times 20 gives the in-batch softmax the spread that sentence encoders train with).

    Why: max-pooled post-LayerNorm NPT features are all positive (about +2.5 in every dimension)
    and ``W`` starts at the identity, so unscaled scores start near ``6·d`` and the first epoch's
    in-batch softmax loss is far above ``log(batch)`` (9 at d = 128 on Stacks). At d = 256 such a
    run stayed at chance; scaled, it trained at once. Dividing by ``d`` (as scaled dot-product
    attention divides by √d_k) keeps the starting scores O(1) whatever d is. Ranking by a fixed
    ``W`` is unchanged; only the training dynamics are.
    """
    if scorer == "bilinear" and cosine is not None:
        return float(cosine)
    return 1.0 / dim if scorer == "bilinear" and scale_scores else 1.0


def npt_vocab(train: pd.DataFrame, view: str, min_count: int) -> WordVocab:
    """NPT's word vocabulary: the tokens of the trained ``view`` in the train part.

    Symbol replacement touches only math, so a text-only model's vocabulary, and with it the
    model, is the same at every replacement level (Table 5: the paper's Text rows are equal
    under Conservation and Full); a vocabulary of both views would change size with the level."""
    return WordVocab.build(
        (token_view(t, view) for col in ("statement_tokens", "proof_tokens") for t in train[col]),
        min_count=min_count,
    )


def check_run(encoder: str, mode: str, view: str) -> None:
    """Refuse an encoder, mode or view that does not exist (a command line's, a caller's: the
    workflow's come from the validated config), and a mode its encoder is not trained in."""
    one_of(f"{encoder} mode", mode, encoder_spec(encoder).modes)
    one_of("input view", view, VIEWS)


@dataclass(frozen=True)
class EncoderBuilder:
    """How the encoders of one kind are made, named by their specs' ``builder``.

    ``fresh(spec, view, p, train, tokenizer_dir, pretrained_dir)``: a new encoder for a training
    run, its codec and the :class:`MatcherConfig` fields that describe both (``npt``, or ``bert``,
    ``pooling`` and ``plain_math``); ``saved(config, model_dir)``: the encoder and codec that a
    saved model's config describes, before its weights are loaded."""

    fresh: Callable[..., tuple[Encoder, Any, dict[str, Any]]]
    saved: Callable[[MatcherConfig, Path], tuple[Encoder, Any]]


def build_matcher(
    encoder: str,
    mode: str,
    view: str,
    p: TrainParams,
    train: pd.DataFrame,
    tokenizer_dir: str | os.PathLike | None = None,
    pretrained_dir: str | os.PathLike | None = None,
) -> Matcher:
    """A fresh Matcher for a run of ``mode`` with the settings ``p``: the encoder its spec's
    builder makes (NPT with random weights and a vocabulary of ``train``, a BERT encoder from the
    checkpoint ``pretrained_dir``) and a scorer for the mode."""
    spec = encoder_spec(encoder)
    scorer = "distance" if mode == "triplet" else "bilinear"
    builder: EncoderBuilder = spec.load_builder()
    made, codec, fields = builder.fresh(spec, view, p, train, tokenizer_dir, pretrained_dir)
    config = MatcherConfig(
        encoder,
        scorer,
        view,
        p.max_length,
        **fields,
        score_scale=score_scale(p.scale_scores, made.dim, scorer, p.encoder.score_cosine()),
        w_init=p.w_init,
    )
    return Matcher(config, made, codec)


def _fresh_npt(
    spec: EncoderSpec,
    view: str,
    p: TrainParams,
    train: pd.DataFrame,
    tokenizer_dir: str | os.PathLike | None,
    pretrained_dir: str | os.PathLike | None,
) -> tuple[Encoder, WordVocab, dict[str, Any]]:
    """NPT with random weights over a word vocabulary of ``train`` (no checkpoint, no tokenizer)."""
    if tokenizer_dir is not None:
        log.info(
            "%s builds its own word vocabulary; tokenizer_dir %s is not used",
            spec.label,
            tokenizer_dir,
        )
    s = p.encoder  # NPTSettings
    vocab = npt_vocab(train, view, s.min_count)
    npt = NPTConfig(
        vocab_size=len(vocab),
        d_model=s.d_model,
        n_layers=s.n_layers,
        n_heads=s.n_heads,
        d_k=s.d_k,
        dropout=s.dropout,
        attention_dropout=s.attention_dropout,
        max_length=p.max_length,
        positions=s.positions,
    )
    return NPTEncoder(npt), vocab, {"npt": npt.to_dict()}


def _saved_npt(config: MatcherConfig, model_dir: Path) -> tuple[Encoder, WordVocab]:
    return NPTEncoder(NPTConfig(**config.npt)), WordVocab.load(model_dir)


def _fresh_bert(
    spec: EncoderSpec,
    view: str,
    p: TrainParams,
    train: pd.DataFrame,
    tokenizer_dir: str | os.PathLike | None,
    pretrained_dir: str | os.PathLike | None,
) -> tuple[Encoder, WordPieceCodec, dict[str, Any]]:
    """A BERT encoder from the checkpoint ``pretrained_dir``, with the tokenizer ``tokenizer_dir``
    (else the checkpoint's own); an encoder whose spec names a ``checkpoint`` key (MathBERT) keeps
    its checkpoint's vocabulary."""
    if spec.checkpoint and tokenizer_dir is not None:
        log.info(
            "%s keeps its own vocabulary (paper §8); tokenizer_dir %s is not used",
            spec.name,
            tokenizer_dir,
        )
        tokenizer_dir = None
    if pretrained_dir is None:
        what = (
            f"matching.{spec.checkpoint} (a {checkpoint_label(spec.checkpoint)} path or hub id)"
            if spec.checkpoint
            else "the ScratchBERT checkpoint (proofmatch pretrain)"
            if spec.from_scratchbert
            else "a BERT checkpoint (--pretrained-dir)"
        )
        raise NotConfigured(f"encoder {spec.name!r} needs {what}; none was given")
    # pooling: matching.bert.pooling, for SPECTER-style matching.specter.pooling, for a
    # pretrained checkpoint matching.pretrained.pooling (the spec's later blocks win)
    normalize = p.encoder.score_cosine() is not None
    bert = BertEncoder.from_checkpoint(pretrained_dir, p.encoder.pooling, normalize)
    bert.train_top(p.encoder.tuned_layers())
    codec = _checked_codec(bert, tokenizer_dir or pretrained_dir, p.max_length)
    fields = {"plain_math": codec.plain, "bert": bert.config_dict(), "pooling": bert.pooling}
    if normalize:
        fields["normalize"] = True
    if spec.checkpoint:
        from proofmatch.models.identity import identify

        fields["checkpoint"] = identify(pretrained_dir).to_dict()
    return bert, codec, fields


def _saved_bert(config: MatcherConfig, model_dir: Path) -> tuple[Encoder, WordPieceCodec]:
    encoder = BertEncoder.from_config(config.bert, config.pooling, config.normalize)
    return encoder, WordPieceCodec.load(model_dir, plain=config.plain_math)


NPT_BUILDER = EncoderBuilder(_fresh_npt, _saved_npt)
BERT_BUILDER = EncoderBuilder(_fresh_bert, _saved_bert)


def _checked_codec(
    bert: BertEncoder, tokenizer_dir: str | os.PathLike, max_length: int
) -> WordPieceCodec:
    """The WordPiece codec of a BERT checkpoint, after checking that it fits the checkpoint; math
    tokens lose their ``$`` prefix unless the vocabulary was built on typed tokens (``$x``)."""
    from proofmatch.models.tokenizer import load_tokenizer

    tokenizer = load_tokenizer(tokenizer_dir)
    if len(tokenizer) > bert.bert.config.vocab_size:
        raise ValueError(
            f"tokenizer {tokenizer_dir} has {len(tokenizer)} entries but the checkpoint "
            f"only {bert.bert.config.vocab_size}: not its tokenizer"
        )
    if max_length > bert.bert.config.max_position_embeddings:
        raise ValueError(
            f"max_length {max_length} exceeds the checkpoint's "
            f"max_position_embeddings {bert.bert.config.max_position_embeddings}"
        )
    typed = any(len(t) > 1 and t[0] == "$" for t in tokenizer.get_vocab())
    return WordPieceCodec(tokenizer, plain=not typed)
