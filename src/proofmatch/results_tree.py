"""Moving a finished results tree to another checkout without rerunning its jobs.

A copied ``results/`` is older than a fresh clone's scripts, so Snakemake would plan every job
again; ``snakemake --touch`` marks the outputs current, but blindly it would also hide a real
change (code, config). So the move is two commands (docs/architecture.md, "Moving results"):

* ``proofmatch results stamp`` in the checkout that built the tree: it checks that
  ``snakemake -n all`` has nothing to do, then writes ``results/provenance.json`` (the SHA-256 of
  every file of the code that jobs run: ``Snakefile``, ``workflow/``, ``src/proofmatch/``; the
  merged, validated config) and copies Snakemake's own records of each output
  (``.snakemake/metadata/``: the params, code and inputs each was made with) into
  ``results/.snakemake-metadata/``, so that copying ``results/`` carries everything.
* ``proofmatch results adopt`` in the other checkout, after ``results/`` was copied there: it
  refuses, naming the files or keys, when the code or the config differ from the stamp's; else it
  restores Snakemake's records, runs ``snakemake --touch all`` and checks that ``snakemake -n all``
  then has nothing to do. A later change of a setting reruns what depends on it there, as in the
  checkout that built the tree (the records travelled with it).

The corpus's own files are not stamped: a user corpus outside ``results/`` is the user's to move
unchanged (the demo's is generated under ``results/``).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from proofmatch.artifacts import read_json, write_json
from proofmatch.config import load_config

STAMP = "results/provenance.json"
METADATA = ".snakemake/metadata"
METADATA_COPY = "results/.snakemake-metadata"
# What jobs run: the workflow and the package it imports (docs/architecture.md).
CODE = ("Snakefile", "workflow", "src/proofmatch")
SKIP_PARTS = {"__pycache__", ".pytest_cache"}
DEFAULT_CONFIG = "config/config.yaml"


class ResultsError(RuntimeError):
    """A results tree that cannot be stamped or adopted; the message says why and what to do."""


def code_files(root: str | os.PathLike) -> dict[str, str]:
    """SHA-256 of every file of the code jobs run, by path relative to ``root``."""
    base = Path(root)
    digests = {}
    for name in CODE:
        top = base / name
        files = [top] if top.is_file() else sorted(p for p in top.rglob("*") if p.is_file())
        for path in files:
            rel = path.relative_to(base)
            if SKIP_PARTS & set(rel.parts) or path.suffix == ".pyc" or ".egg-info" in str(rel):
                continue
            digests[rel.as_posix()] = hashlib.sha256(path.read_bytes()).hexdigest()
    if "Snakefile" not in digests:
        raise ResultsError(f"{base} is not a checkout of this workflow: no Snakefile")
    return digests


def config_files(configfiles: Sequence[str]) -> list[str]:
    """The config files Snakemake reads: config/config.yaml, then those given (in order)."""
    return list(dict.fromkeys([DEFAULT_CONFIG, *configfiles]))


def changed(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str]:
    """The paths (files, or dotted config keys) whose value differs, was added or removed."""
    out = []
    for key in sorted(set(before) | set(after)):
        a, b = before.get(key), after.get(key)
        if isinstance(a, Mapping) and isinstance(b, Mapping):
            out += [f"{key}.{k}" for k in changed(a, b)]
        elif a != b or (key in before) != (key in after):
            out.append(key)
    return out


def snakemake(root: Path, args: Iterable[str], configfiles: Sequence[str]) -> str:
    """Run Snakemake in ``root`` with ``configfiles``; its output, or ResultsError on failure."""
    cmd = [sys.executable, "-m", "snakemake", *args, "--configfile", *config_files(configfiles)]
    done = subprocess.run(cmd, cwd=root, capture_output=True, text=True)
    text = done.stdout + done.stderr
    if done.returncode != 0:
        raise ResultsError(f"{' '.join(cmd[2:])} failed in {root}:\n{text[-3000:]}")
    return text


def up_to_date(root: Path, configfiles: Sequence[str]) -> tuple[bool, str]:
    text = snakemake(root, ["-n", "all"], configfiles)
    return "Nothing to be done" in text, text


def stamp(root: str | os.PathLike = ".", configfiles: Sequence[str] = ()) -> Path:
    """Stamp ``root``'s finished results tree with the code and config that made it."""
    base = Path(root)
    if not (base / "results").is_dir():
        raise ResultsError(f"no results/ in {base}: run the workflow first")
    current, plan = up_to_date(base, configfiles)
    if not current:
        raise ResultsError(
            f"the results in {base} are not current (snakemake -n all plans jobs); run "
            f"`snakemake all` first, then stamp:\n{plan[-2000:]}"
        )
    meta = base / METADATA
    if not meta.is_dir():
        raise ResultsError(f"no {METADATA} in {base}: Snakemake's records of the outputs are gone")
    copy = base / METADATA_COPY
    staging = copy.with_name(copy.name + ".tmp")
    shutil.rmtree(staging, ignore_errors=True)
    shutil.copytree(meta, staging)
    shutil.rmtree(copy, ignore_errors=True)
    staging.rename(copy)
    files = config_files(configfiles)
    write_json(
        {
            "code": code_files(base),
            "configfiles": files,
            "config": load_config(*(base / f for f in files)),
        },
        base / STAMP,
    )
    return base / STAMP


def adopt(root: str | os.PathLike = ".", configfiles: Sequence[str] = ()) -> int:
    """Make ``root``'s copied results tree current without rerunning a job; the number of files
    Snakemake touched (0: it was current already)."""
    base = Path(root)
    if not (base / STAMP).is_file():
        raise ResultsError(
            f"no {STAMP} in {base}: run `proofmatch results stamp` in the checkout that built the "
            "results, then copy its results/ here"
        )
    stamped = read_json(base / STAMP)
    code = changed(stamped["code"], code_files(base))
    if code:
        raise ResultsError(
            f"the code differs from the code that built the results ({len(code)} file(s): "
            f"{', '.join(code[:10])}); run the workflow here (`snakemake all`), which reruns "
            "what the change touches"
        )
    files = config_files(configfiles)
    config = changed(stamped["config"], load_config(*(base / f for f in files)))
    if config:
        raise ResultsError(
            f"the config differs from the one that built the results (key(s) {', '.join(config)};"
            f" its files were {', '.join(stamped['configfiles'])}); adopt with the same config, "
            "then change the setting and run the workflow"
        )
    copy, meta = base / METADATA_COPY, base / METADATA
    if copy.is_dir():
        meta.mkdir(parents=True, exist_ok=True)
        for record in copy.iterdir():
            if not (meta / record.name).exists():
                shutil.copy2(record, meta / record.name)
    plan = snakemake(base, ["-n", "all"], configfiles)
    touched = len(re.findall(r"^(?:local)?rule \w+:", plan, flags=re.M))
    if "Nothing to be done" not in plan:
        snakemake(base, ["--touch", "-c1", "all"], configfiles)
    current, plan = up_to_date(base, configfiles)
    if not current:
        raise ResultsError(f"after snakemake --touch, snakemake -n all still plans jobs:\n{plan}")
    return touched


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "action",
        choices=("stamp", "adopt"),
        help="stamp: in the checkout that built results/, record its code and config; adopt: in "
        "another checkout, after copying results/ there, mark it current if code and config match",
    )
    parser.add_argument("--root", default=".", help="the checkout (where the Snakefile is)")
    parser.add_argument(
        "--configfile",
        nargs="*",
        default=[],
        help="config files after config/config.yaml, as given to snakemake --configfile",
    )


def main(args: argparse.Namespace) -> int:
    try:
        if args.action == "stamp":
            print(f"stamped {stamp(args.root, args.configfile)}")
        else:
            n = adopt(args.root, args.configfile)
            print(f"results current: {n} job(s) marked done without running (snakemake --touch)")
    except ResultsError as exc:
        print(f"proofmatch results {args.action}: {exc}", file=sys.stderr)
        return 1
    return 0
