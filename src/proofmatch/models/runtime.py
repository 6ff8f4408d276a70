"""Where training runs (one CPU or GPU process, or one DDP rank among several, ``torchrun``),
its mixed-precision policy (:func:`autocast`) and its CPU threads; the seeded randomness every
rank shares is :mod:`proofmatch.models.sampling`.

One code path for all cases: the training loops ask a :class:`Runtime` for the device, whether to
use bf16 autocast, which rows of a batch are theirs (``share``), for every rank's encoded rows
(``gather``), and whether they write files (``is_main``; only rank 0 writes). ``WORLD_SIZE > 1``
in the environment (set by ``torchrun`` or :func:`launch`) starts a process group (NCCL on GPUs,
Gloo on CPUs).

Several processes must not change the experiment: a configured batch size is the *global* batch.
Every rank walks the same batches; each encodes its share of a batch's rows, and the losses that
compare the rows of a batch (in-batch softmax, the assignment of the global loss) see all of them
through :meth:`Runtime.gather`. The paper's runs had 2 or 4 GPUs and one batch size (§8).
"""

from __future__ import annotations

import contextlib
import logging
import os
import warnings
from dataclasses import dataclass
from typing import TypeVar

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
        return autocast(self.device)

    def share(self, batch: np.ndarray) -> np.ndarray:
        """This rank's rows of a global batch: the ``rank``-th of ``world_size`` contiguous chunks
        of ``ceil(n / world_size)`` rows. A chunk that the batch does not fill is padded with the
        batch's first rows, so every rank encodes as many rows as the others (collectives need
        equal shapes, and no rank ever runs an empty batch); :meth:`gather` drops the padding."""
        batch = np.asarray(batch)
        if not self.distributed:
            return batch
        m = -(-len(batch) // self.world_size)
        mine = batch[self.rank * m : (self.rank + 1) * m]
        return np.concatenate([mine, np.resize(batch, m - len(mine))]) if len(mine) < m else mine

    def n_real(self, n: int) -> int:
        """How many rows of this rank's :meth:`share` of a batch of ``n`` are real (the rest pad)."""
        m = -(-n // self.world_size)
        return int(np.clip(n - self.rank * m, 0, m))

    def gather(self, x: torch.Tensor, n: int) -> torch.Tensor:
        """The rows of every rank's ``x`` (each rank's :meth:`share` of a batch of ``n``), in
        batch order, padding dropped, with the gradient flowing back to each rank's own rows.

        Every rank then computes the same loss on the whole batch. The backward of the gather
        sums that loss's gradient over the ranks (``world_size`` times one rank's), and DDP
        averages the parameter gradients over the ranks: the encoder's gradient is exactly the
        one-process gradient of the batch, and so is the scorer's (the same on every rank)."""
        if not self.distributed:
            return x[:n]
        import torch.distributed.nn.functional as dist_fn

        with warnings.catch_warnings():  # the public autograd gather; its successor is private
            warnings.filterwarnings(
                "ignore", message=".*all_gather.*deprecated", category=FutureWarning
            )
            parts = dist_fn.all_gather(x.contiguous())
        return torch.cat(parts)[:n]

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

    def all_sum(self, value: float) -> float:
        """Sum of a scalar over ranks (a loss of which each rank holds its rows' share)."""
        if not self.distributed:
            return value
        t = torch.tensor([value], dtype=torch.float64, device=self.device)
        torch.distributed.all_reduce(t)
        return float(t.item())


def autocast(device: torch.device) -> contextlib.AbstractContextManager:
    """The one mixed-precision policy of training and evaluation: bf16 autocast on GPUs that
    support it (A100, H100, ...); float32 on older GPUs (V100: fp16 would need loss scaling) and
    on CPU, where runs stay deterministic."""
    enabled = device.type == "cuda" and torch.cuda.is_bf16_supported()
    return torch.autocast(device.type, dtype=torch.bfloat16, enabled=enabled)


DEVICE_ENV = "PROOFMATCH_DEVICE"


def use_cuda() -> bool:
    """Train on GPUs when there are any, unless ``PROOFMATCH_DEVICE=cpu`` (e.g. the two-rank CPU
    tests on a machine with one GPU, which two ranks cannot share)."""
    choice = os.environ.get(DEVICE_ENV, "").strip().lower()
    if choice not in ("", "cpu", "cuda"):
        raise ValueError(f"{DEVICE_ENV}={choice!r}; expected cpu or cuda")
    return choice != "cpu" and torch.cuda.is_available()


def default_device() -> torch.device:
    """Where one process runs: the (current) GPU when :func:`use_cuda`, else the CPU."""
    return torch.device("cuda" if use_cuda() else "cpu")


def init_runtime() -> Runtime:
    """Read ``torchrun``'s environment; start the process group when ``WORLD_SIZE > 1``."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    cuda = use_cuda()
    if world > 1:
        rank, local = int(os.environ["RANK"]), int(os.environ.get("LOCAL_RANK", "0"))
        if cuda:
            torch.cuda.set_device(local)
            device = torch.device("cuda", local)
            backend = "nccl"
        else:
            device, backend = torch.device("cpu"), "gloo"
        if not torch.distributed.is_initialized():
            torch.distributed.init_process_group(backend=backend)
        return Runtime(device, rank, world)
    return Runtime(default_device())


def launch(nprocs: int, fn, *args, **kwargs):
    """Run ``fn(*args, **kwargs)`` once, or as ``nprocs`` DDP ranks on this node (what
    ``torchrun --standalone --nproc_per_node=N`` does), and return rank 0's result.

    A SLURM job that asks for N GPUs gets one task that sees all of them; the training rules call
    this so one job trains across its GPUs instead of running N copies of the script.
    """
    if nprocs <= 1:
        return fn(*args, **kwargs)
    import uuid

    from torch.distributed.launcher.api import LaunchConfig, elastic_launch

    config = LaunchConfig(
        min_nodes=1,
        max_nodes=1,
        nproc_per_node=nprocs,
        rdzv_backend="c10d",
        rdzv_endpoint="localhost:0",
        run_id=uuid.uuid4().hex,
        max_restarts=0,
        start_method="spawn",
    )
    threads = max(1, torch.get_num_threads() // nprocs)  # the job's threads, shared by its ranks
    # a plain function as the entry point: the launcher names the job after its __name__
    return elastic_launch(config, _rank_main)(threads, fn, args, kwargs)[0]


def _rank_main(threads: int, fn, args: tuple, kwargs: dict):
    """One rank of :func:`launch` (a fresh process): its share of the job's CPU threads, then ``fn``."""
    set_threads(threads)
    return fn(*args, **kwargs)


def set_threads(n: int) -> None:
    """Use ``n`` CPU threads (the job's ``threads:``) in torch and in NumPy's BLAS: more than the
    job was given only slows every job down on a shared machine. BLAS's own default is one thread
    per core, and its threads wait for a core: on the busy 2-core machine one search's product
    of a query vector with 18,408 proof vectors took 16 ms with 2 BLAS threads, 1.2 ms with one."""
    from threadpoolctl import threadpool_limits

    torch.set_num_threads(max(1, int(n)))
    threadpool_limits(limits=max(1, int(n)), user_api="blas")


def close_runtime(rt: Runtime) -> None:
    if rt.distributed and torch.distributed.is_initialized():
        torch.distributed.destroy_process_group()


def wrap_ddp(model: torch.nn.Module, rt: Runtime) -> torch.nn.Module:
    if not rt.distributed:
        return model
    from torch.nn.parallel import DistributedDataParallel

    ids = [rt.device.index] if rt.device.type == "cuda" else None
    return DistributedDataParallel(model, device_ids=ids)
