"""The optimizers of a training run (paper §8: ASGD; AdamW as this project's option).

Apart from the loop (:mod:`proofmatch.models.train`) because a checkpoint's optimizer state must
follow the run to another device (:func:`place_optimizer_state`) and benchmarks build the same
optimizer without a run.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import assert_never, get_args

import torch

from proofmatch.models.params import Optimizer

OPTIMIZERS: tuple[Optimizer, ...] = get_args(Optimizer)
ASGD_T0 = 1e4  # the reference's t0: ASGD averages from this step on


def make_optimizer(
    name: Optimizer, parameters: Iterable[torch.nn.Parameter], lr: float
) -> torch.optim.Optimizer:
    """ASGD (paper §8) with the reference's t0 = 1e4 and no weight decay, or AdamW (torch defaults).

    ASGD is plain SGD until step t0: the paper's 400 epochs over 147k pairs give it about a million
    steps, a small corpus a few thousand, and from scratch a max-pooled encoder's gradients are
    small (every pooled vector starts near the same point), so SGD barely leaves its
    initialisation. AdamW rescales each parameter's step and trains such a model in those steps.

    On a GPU, ASGD is ``capturable``: its step counter lives on the GPU and its update reads it
    there (otherwise every step reads it back, and the host waits for the GPU each step).
    """
    parameters = list(parameters)
    if name == "asgd":
        return torch.optim.ASGD(
            parameters, lr=lr, t0=ASGD_T0, weight_decay=0.0, capturable=_on_gpu(parameters)
        )
    if name == "adamw":
        return torch.optim.AdamW(parameters, lr=lr)
    assert_never(name)  # TrainParams holds one of OPTIMIZERS


def _on_gpu(parameters: Sequence[torch.nn.Parameter]) -> bool:
    return bool(parameters) and parameters[0].device.type == "cuda"


def place_optimizer_state(optimizer: torch.optim.Optimizer) -> None:
    """After loading a checkpoint written on another device: ASGD's ``capturable`` flag (which
    the loaded state carries) and its per-parameter scalars follow this run's parameters."""
    if not isinstance(optimizer, torch.optim.ASGD):
        return
    for group in optimizer.param_groups:
        group["capturable"] = _on_gpu(group["params"])
        for p in group["params"]:
            state = optimizer.state.get(p, {})
            for key in ("step", "eta", "mu"):
                if key in state:
                    state[key] = state[key].to(p.device)
