"""Where training runs: one CPU or GPU process, or one DDP rank among several (``torchrun``).

One code path for all cases: the training loops ask a :class:`Runtime` for the device, whether to
use bf16 autocast, which batches are theirs (``shard``), and whether they write files
(``is_main``; only rank 0 writes). ``WORLD_SIZE > 1`` in the environment (set by ``torchrun``)
starts a process group (NCCL on GPUs, Gloo on CPUs).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import random
from dataclasses import dataclass
from typing import Any, Iterator, Sequence, TypeVar

import numpy as np
import torch

log = logging.getLogger(__name__)

T = TypeVar("T")


@dataclass(frozen=True)
class Runtime:
    device: torch.device
    rank: int = 0
    world_size: int = 1

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def distributed(self) -> bool:
        return self.world_size > 1

    def autocast(self) -> contextlib.AbstractContextManager:
        """bf16 autocast on GPUs that support it (A100, H100, ...); float32 on older GPUs (V100:
        fp16 would need loss scaling) and on CPU, where runs stay deterministic."""
        enabled = self.device.type == "cuda" and torch.cuda.is_bf16_supported()
        return torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=enabled)

    def shard(self, batches: Sequence[T]) -> list[T]:
        """This rank's batches (round-robin), truncated so every rank takes the same number of
        steps (DDP all-reduces once per step on every rank)."""
        usable = len(batches) - len(batches) % self.world_size
        return list(batches[self.rank:usable:self.world_size])

    def barrier(self) -> None:
        if self.distributed:
            torch.distributed.barrier()

    def broadcast(self, obj: T) -> T:
        """Rank 0's value of a picklable object on every rank."""
        if not self.distributed:
            return obj
        box = [obj]
        torch.distributed.broadcast_object_list(box, src=0)
        return box[0]

    def all_mean(self, value: float) -> float:
        """Mean of a scalar over ranks (epoch losses logged by rank 0 cover every rank)."""
        if not self.distributed:
            return value
        t = torch.tensor([value], dtype=torch.float64, device=self.device)
        torch.distributed.all_reduce(t)
        return float(t.item()) / self.world_size


def init_runtime() -> Runtime:
    """Read ``torchrun``'s environment; start the process group when ``WORLD_SIZE > 1``."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world > 1:
        rank, local = int(os.environ["RANK"]), int(os.environ.get("LOCAL_RANK", "0"))
        if torch.cuda.is_available():
            torch.cuda.set_device(local)
            device = torch.device("cuda", local)
            backend = "nccl"
        else:
            device, backend = torch.device("cpu"), "gloo"
        if not torch.distributed.is_initialized():
            torch.distributed.init_process_group(backend=backend)
        return Runtime(device, rank, world)
    return Runtime(torch.device("cuda" if torch.cuda.is_available() else "cpu"))


def launch(nprocs: int, fn, *args, **kwargs):
    """Run ``fn(*args, **kwargs)`` once, or as ``nprocs`` DDP ranks on this node (what
    ``torchrun --standalone --nproc_per_node=N`` does), and return rank 0's result.

    A SLURM job that asks for N GPUs gets one task that sees all of them; the training rules call
    this so one job trains across its GPUs instead of running N copies of the script.
    """
    if nprocs <= 1:
        return fn(*args, **kwargs)
    import functools
    import uuid

    from torch.distributed.launcher.api import LaunchConfig, elastic_launch

    config = LaunchConfig(min_nodes=1, max_nodes=1, nproc_per_node=nprocs, rdzv_backend="c10d",
                          rdzv_endpoint="localhost:0", run_id=uuid.uuid4().hex, max_restarts=0,
                          start_method="spawn")
    return elastic_launch(config, functools.partial(fn, **kwargs))(*args)[0]


def set_threads(n: int) -> None:
    """Use ``n`` CPU threads (the job's ``threads:``): more than the job was given only slows
    every job down on a shared machine."""
    torch.set_num_threads(max(1, int(n)))


def close_runtime(rt: Runtime) -> None:
    if rt.distributed and torch.distributed.is_initialized():
        torch.distributed.destroy_process_group()


def wrap_ddp(model: torch.nn.Module, rt: Runtime) -> torch.nn.Module:
    if not rt.distributed:
        return model
    from torch.nn.parallel import DistributedDataParallel

    ids = [rt.device.index] if rt.device.type == "cuda" else None
    return DistributedDataParallel(model, device_ids=ids)


def seed_everything(seed: int, deterministic: bool = True) -> None:
    """Seed python, numpy and torch (all GPUs too); with ``deterministic`` (CPU runs) also ask
    torch for deterministic kernels where it has them (a warning where it has none). GPU runs
    keep the fast kernels: they are seeded and resumable, not bit-for-bit reproducible."""
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)
    if deterministic:
        torch.use_deterministic_algorithms(True, warn_only=True)


def rng_state() -> dict[str, Any]:
    """Every random state a resumed run must restore to continue bit-for-bit."""
    return {
        "python": random.getstate(),
        "numpy": np.random.get_state(),
        "torch": torch.get_rng_state(),
        "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
    }


def set_rng_state(state: dict[str, Any]) -> None:
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])
    if state.get("cuda") and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def epoch_rng(seed: int, epoch: int, stream: int = 0) -> np.random.Generator:
    """A generator that depends only on ``(seed, epoch, stream)``: data order and negative
    sampling of an epoch are the same whether or not the run was interrupted before it."""
    return np.random.default_rng([seed, epoch, stream])


def shuffled_batches(n: int, batch_size: int, seed: int, epoch: int) -> list[np.ndarray]:
    """One shuffled pass over ``n`` items in batches, a function of ``(seed, epoch)`` only."""
    order = epoch_rng(seed, epoch).permutation(n)
    return [order[i:i + batch_size] for i in range(0, n, batch_size)]


@contextlib.contextmanager
def forked_rng(seed: int) -> Iterator[None]:
    """Run a block with its own seeded torch/numpy randomness, leaving the global streams as they were."""
    np_state = np.random.get_state()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        np.random.seed(seed % 2**32)
        try:
            yield
        finally:
            np.random.set_state(np_state)


def run_fingerprint(params: dict[str, Any], seed: int, pair_ids: Sequence[Any], **fields: Any) -> dict[str, Any]:
    """What makes a training run this run: its params, seed and training pairs (a digest of their
    ids), plus any ``fields``. A checkpoint stores it, and only a run with the same one resumes it."""
    digest = hashlib.sha256("\n".join(map(str, pair_ids)).encode()).hexdigest()[:16]
    return {**fields, "seed": seed, "n_train": len(pair_ids), "train_ids": digest,
            "params": json.loads(json.dumps(params, sort_keys=True))}


def fingerprint_changes(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """The fields (``params.<key>`` inside params) whose values differ between two fingerprints."""
    keys = [k for k in sorted(old.keys() | new.keys()) if k != "params" and old.get(k) != new.get(k)]
    p_old, p_new = old.get("params") or {}, new.get("params") or {}
    keys += [f"params.{k}" for k in sorted(p_old.keys() | p_new.keys()) if p_old.get(k) != p_new.get(k)]
    return keys


def load_checkpoint(path: str | os.PathLike, fingerprint: dict[str, Any]) -> dict[str, Any] | None:
    """The training state saved at ``path`` when it belongs to this run, else None.

    Snakemake reruns a job whose params or inputs changed: that is a new run, and resuming the
    old run's state would mix the two. A state with another fingerprint is logged with what
    changed and ignored; the new run's first checkpoint overwrites it."""
    if not os.path.exists(path):
        return None
    saved = torch.load(path, map_location="cpu", weights_only=False)  # RNG states stay on CPU
    if saved.get("fingerprint") != fingerprint:
        log.warning("%s is from a different run (changed: %s); starting afresh", path,
                    ", ".join(fingerprint_changes(saved.get("fingerprint") or {}, fingerprint)))
        return None
    return saved


def save_torch_atomic(obj: Any, path: str | os.PathLike) -> None:
    """``torch.save`` to a temporary file beside ``path``, then ``os.replace`` onto it."""
    from proofmatch.store import atomic_path

    with atomic_path(path, ".pt") as tmp:
        torch.save(obj, tmp)
