"""The train part's token ids, held once on the training device, and the padded batches cut from
them.

A training step used to pad its rows from Python lists on the CPU and copy them to the device.
On a GPU that step is launch-bound (NPT at the paper's size: about 9 ms of small kernels per
step), so the host work between steps and the synchronous copy left the GPU idle. A
:class:`TokenTable` pads every text once, keeps ids and lengths on the device, and answers a
batch with one index upload (pinned, asynchronous) and two gathers; the batch's width comes from
a host copy of the lengths, so nothing waits for the GPU.

A batch is exactly what :func:`proofmatch.models.encoders.pad_batch` makes of the same rows: ids
right-padded to the batch's longest text, a mask that is true on the text's positions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from proofmatch.models.encoders import pad_batch


@dataclass(frozen=True)
class TokenTable:
    """Ids ``[n, L]`` (right-padded to the longest text, on ``device``) and lengths of ``n`` texts."""

    ids: torch.Tensor
    lengths: torch.Tensor  # [n] on the device, for the masks
    host_lengths: np.ndarray  # [n] on the host, for each batch's width without a device sync
    positions: torch.Tensor  # [L] 0, 1, ..., L - 1 on the device

    @classmethod
    def build(cls, rows: Sequence[Sequence[int]], pad_id: int, device: torch.device) -> TokenTable:
        """Pad ``rows`` (each at least one id) once and move them to ``device``."""
        ids, mask = pad_batch(rows, pad_id)
        lengths = mask.sum(dim=1)
        return cls(
            ids.to(device),
            lengths.to(device),
            lengths.numpy(),
            torch.arange(ids.shape[1], device=device),
        )

    def __len__(self) -> int:
        return len(self.host_lengths)

    def batch(self, rows: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
        """``(ids [B, W], mask [B, W])`` of ``rows``, ``W`` their longest length."""
        rows = np.ascontiguousarray(rows, dtype=np.int64)
        width = int(self.host_lengths[rows].max())
        index = torch.from_numpy(rows)
        if self.ids.is_cuda:  # from pinned memory the upload does not wait for the queued steps
            index = index.pin_memory().to(self.ids.device, non_blocking=True)
        return self.ids[index, :width], self.positions[:width] < self.lengths[index, None]
