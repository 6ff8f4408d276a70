"""Logging set-up shared by the CLI and the workflow scripts (one file per job under results/logs/)."""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path


def setup_logging(
    log_file: str | os.PathLike | None = None, level: int = logging.INFO
) -> logging.Logger:
    """Log to stderr and, when given, to ``log_file`` (Snakemake's ``log:`` path)."""
    handlers: list[logging.Handler] = [logging.StreamHandler(sys.stderr)]
    if log_file:
        Path(log_file).parent.mkdir(parents=True, exist_ok=True)
        handlers.append(logging.FileHandler(log_file, mode="w"))
    logging.basicConfig(
        level=level,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        handlers=handlers,
        force=True,
    )
    return logging.getLogger("proofmatch")


def run_logged(log_file: str | os.PathLike | None, fn, /, *args, **kwargs):
    """Call ``fn`` with logging to ``log_file``; a failure is logged with its traceback, then re-raised.
    A :class:`proofmatch.config.ConfigError` (a setting, named in its message, fixes it) is logged
    without a traceback and ends the job with status 1, so the log and the terminal say it once.

    The workflow scripts use this so that every job's log under results/logs/ explains its failure.
    """
    log = setup_logging(log_file)
    log.info("running %s.%s", fn.__module__, fn.__qualname__)
    from proofmatch.config import ConfigError

    try:
        result = fn(*args, **kwargs)
    except ConfigError as exc:  # says which config key fixes it: the message alone, once
        log.error("%s failed: %s", fn.__qualname__, exc)
        raise SystemExit(1) from None
    except Exception:
        log.exception("%s failed", fn.__qualname__)
        raise
    log.info("done")
    return result
