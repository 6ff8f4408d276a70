"""Exact CPU time and peak RSS of every Snakemake script job, for ``bench/bench_scale.py``.

Snakemake's ``benchmark:`` files sample a job's process tree once a second for 30 s and then every
30 s, so for a job of a few minutes they miss up to 30 s of CPU time and any memory peak between
samples. ``bench_scale.py`` puts this folder first on ``PYTHONPATH``; Python imports this module at
start-up in every process, and in a Snakemake script job (``__main__`` holds the ``snakemake``
object) it writes, at exit, the kernel's own ``getrusage`` figures of the job's process and its
children to ``$PROOFMATCH_RUSAGE_DIR/<rule>-<pid>.json``. Other processes are left alone.
"""

import atexit
import json
import os
import resource
import sys
import time

_OUT = os.environ.get("PROOFMATCH_RUSAGE_DIR")
_T0 = time.perf_counter()


def _write() -> None:
    job = getattr(sys.modules.get("__main__"), "snakemake", None)
    rule = getattr(job, "rule", None)
    if not isinstance(rule, str):
        return
    me, kids = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    record = {
        "rule": rule,
        "wildcards": {k: str(v) for k, v in job.wildcards.items()},
        "wall_s": time.perf_counter() - _T0,
        "cpu_s": me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime,
        "max_rss_mb": max(me.ru_maxrss, kids.ru_maxrss) / 1024,  # Linux: ru_maxrss in KiB
    }
    os.makedirs(_OUT, exist_ok=True)
    with open(os.path.join(_OUT, f"{rule}-{os.getpid()}.json"), "w") as fh:
        json.dump(record, fh)


if _OUT:
    atexit.register(_write)
