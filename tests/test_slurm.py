"""The SLURM profiles: what they ask the scheduler for, and a real run on a one-node cluster.

The first two tests need no cluster: they resolve profiles/slurm with Snakemake's own profile
parser under chosen environment variables, and dry-run the workflow with `--profile slurm` to see
the resources each rule would be submitted with (GPU rules ask for GPUs, CPU rules never do).

The `slurm` test runs `snakemake --profile slurm --profile profiles/ci-slurm-local` for real on
a copy of the workflow: the tokenizer (a CPU rule) and the ScratchBERT pretraining (a GPU rule;
the CI node's GPU is fake, so it trains on the CPU), after a local run without a profile has built
what they read. A SLURM job costs about half a minute here (submission, a Snakemake started inside
the job, the profile's status polling): the whole chain of 11 jobs through `sbatch` took 314 s
of a CI-like suite run (83ba12b); with the local build first the test took 59 s alone and 125 s
in the suite. It is skipped unless `sbatch` exists and `sinfo` answers (a failure instead with
PROOFMATCH_REQUIRE_SLURM=1); CI starts the cluster with `bash .ci/setup-slurm.sh`. Every wait is
bounded:
Snakemake runs under `timeout -s INT` (SIGINT makes it scancel its jobs), and whatever is left
is cancelled by the run's job name afterwards.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from snakemake.profiles import ProfileConfigFileParser

REPO = Path(__file__).resolve().parents[1]
SNAKEMAKE = [sys.executable, "-m", "snakemake"]
GPU_RULES = {
    "pretrain_scratchbert",
    "train_matcher",
    "evaluate_run",
    "fuse_run",
    "transfer_evaluate_run",
    "transfer_fusion_evaluate",
    "figure2",
    "train_variant",
    "evaluate_variant",
    "fuse_variant",
}
CPU_TARGET = "results/corpus/manifest.parquet"
GPU_TARGET = "results/models/scratchbert/mixed"  # a declared folder (the pretrained ScratchBERT)
SUBMITTED_FROM = "train_tokenizer"  # the real run submits this rule and what follows it
SITE_VARS = [
    "PROOFMATCH_SLURM_ACCOUNT",
    "PROOFMATCH_SLURM_PARTITION",
    "PROOFMATCH_SLURM_GPU_PARTITION",
    "PROOFMATCH_SLURM_GPU_MODEL",
    "PROOFMATCH_SLURM_GPU_CONSTRAINT",
    "PROOFMATCH_SLURM_GPUS",
    "PROOFMATCH_SLURM_QOS",
    "PROOFMATCH_SLURM_JOBS",
    "PROOFMATCH_SLURM_STATUS_COMMAND",
    "PROOFMATCH_SLURM_TRAIN_RUNTIME",
]
# Small enough for 2 cores: one shard of a small demo corpus and a one-layer BERT for one epoch.
SMALL_CONFIG = """\
corpus:
  n_shards: 1
  demo:
    n_articles: 24
tokenizer:
  vocab_size: 300
pretrain:
  hidden_size: 32
  num_hidden_layers: 1
  num_attention_heads: 2
  intermediate_size: 64
  max_length: 64
  epochs: 1
  batch_size: 16
"""
RUN_LIMIT_S = 420  # the whole cluster test must stay under 8 minutes


def copy_workflow(dest: Path) -> Path:
    """Copy what `snakemake --profile slurm` needs (the package sources included: the Snakefile
    runs its own src/), with the root `slurm` link, into dest."""
    for name in ("Snakefile", "workflow", "config", "envs", "profiles", "src"):
        src = REPO / name
        if src.is_dir():
            shutil.copytree(
                src, dest / name, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info")
            )
        elif src.exists():
            shutil.copy2(src, dest / name)
    os.symlink(os.readlink(REPO / "slurm"), dest / "slurm")
    (dest / "small.yaml").write_text(SMALL_CONFIG)
    return dest


def resolve_profile(path: Path) -> dict[str, list[str] | str]:
    """The command-line values Snakemake derives from a profile file (its own parser)."""
    with open(path) as stream:
        return dict(ProfileConfigFileParser().parse(stream))


def rule_resources(log: str) -> dict[str, dict[str, str]]:
    """{rule: {resource: value}} from the job blocks Snakemake prints."""
    out = {}
    for rule, res in re.findall(
        r"^(?:local)?rule (\w+):\n(?:    .*\n)*?    resources: (.*)$", log, re.M
    ):
        out[rule] = dict(item.split("=", 1) for item in res.split(", "))
    return out


@pytest.fixture
def site_env(monkeypatch):
    for var in SITE_VARS:
        monkeypatch.delenv(var, raising=False)
    return monkeypatch


def test_slurm_link_points_at_the_profile():
    assert (REPO / "slurm").is_symlink()
    assert (
        REPO / "slurm" / "profile.v9+.yaml"
    ).resolve() == REPO / "profiles/slurm/profile.v9+.yaml"
    assert not (REPO / "profiles" / "default").exists(), (
        "a default profile would clobber set-resources"
    )


def workflow_rules() -> dict[str, str]:
    """{rule name: its text} for every rule (and `use rule ... as` copy) of the rule files."""
    text = "\n".join(f.read_text() for f in sorted((REPO / "workflow/rules").glob("*.smk")))
    parts = re.split(r"^(?:use rule \w+ as|rule) (\w+)", text, flags=re.M)
    return dict(zip(parts[1::2], parts[2::2]))


def test_profile_names_exactly_the_gpu_rules_of_the_workflow(site_env):
    rules = workflow_rules()
    gpu_rules = {name for name, body in rules.items() if re.search(r"^\s+gpu\s*=\s*1", body, re.M)}
    assert gpu_rules == GPU_RULES
    prof = resolve_profile(REPO / "profiles/slurm/profile.v9+.yaml")
    assert {r.split(":")[0] for r in prof["set-resources"]} == GPU_RULES


def test_profile_takes_site_values_from_the_environment(site_env):
    site_env.setenv("PROOFMATCH_SLURM_ACCOUNT", "acme")
    site_env.setenv("PROOFMATCH_SLURM_PARTITION", "cpu")
    site_env.setenv("PROOFMATCH_SLURM_GPU_PARTITION", "gpu")
    site_env.setenv("PROOFMATCH_SLURM_GPU_MODEL", "a100")
    site_env.setenv("PROOFMATCH_SLURM_GPUS", "4")
    site_env.setenv("PROOFMATCH_SLURM_STATUS_COMMAND", "sacct")
    site_env.setenv("PROOFMATCH_SLURM_TRAIN_RUNTIME", "1440")
    prof = resolve_profile(REPO / "profiles/slurm/profile.v9+.yaml")
    assert prof["executor"] == "slurm" and prof["jobs"] == "50"
    assert prof["slurm-status-command"] == "sacct"
    defaults = set(prof["default-resources"])
    assert {"slurm_account=acme", "slurm_partition=cpu"} <= defaults
    assert not any(d.startswith(("gpu", "gres", "cpus_per_task", "tasks")) for d in defaults)
    per_rule = set(prof["set-resources"])
    assert {r.split(":")[0] for r in per_rule} == GPU_RULES
    for rule in ("pretrain_scratchbert", "train_matcher"):
        assert {
            f"{rule}:gpu=4",
            f"{rule}:slurm_partition=gpu",
            f"{rule}:gpu_model=a100",
            f"{rule}:runtime=1440",
        } <= per_rule
    assert {"evaluate_run:gpu=1", "figure2:gpu=1", "figure2:slurm_partition=gpu"} <= per_rule
    assert "figure2:runtime=1440" not in per_rule  # the rule's own limit stays


def test_profile_leaves_unset_site_values_out(site_env):
    prof = resolve_profile(REPO / "profiles/slurm/profile.v9+.yaml")
    text = json.dumps(prof)
    assert "$" not in text and "None" not in text
    assert not any(
        d.startswith(("slurm_account", "slurm_partition", "qos")) for d in prof["default-resources"]
    )
    assert set(prof["set-resources"]) == {f"{r}:gpu=1" for r in GPU_RULES}


def test_ci_layer_replaces_site_resources():
    prof = resolve_profile(REPO / "profiles/ci-slurm-local/profile.v9+.yaml")
    assert prof["slurm-status-command"] == "squeue"
    assert "slurm_partition=debug" in prof["default-resources"]
    assert {f"{r}:gpu=1" for r in GPU_RULES} <= set(prof["set-resources"])


def test_dry_run_asks_gpus_for_gpu_rules_only(tmp_path, site_env):
    wd = copy_workflow(tmp_path)
    env = dict(
        os.environ,
        PROOFMATCH_SLURM_PARTITION="cpu",
        PROOFMATCH_SLURM_GPU_PARTITION="gpu",
        PROOFMATCH_SLURM_STATUS_COMMAND="squeue",
    )
    run = subprocess.run(
        SNAKEMAKE
        + [
            CPU_TARGET,
            GPU_TARGET,
            "--profile",
            "slurm",
            "-n",
            "--configfile",
            "config/config.yaml",
            "small.yaml",
        ],
        cwd=wd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    log = run.stdout + run.stderr
    assert run.returncode == 0, log[-4000:]
    res = rule_resources(log)
    assert {"manifest", "pretrain_scratchbert"} <= set(res), sorted(res)
    for rule, r in res.items():
        if rule in GPU_RULES:
            assert r.get("gpu") == "1" and r["slurm_partition"] == "gpu", (rule, r)
        else:
            assert "gpu" not in r and "gres" not in r and r["slurm_partition"] == "cpu", (rule, r)


def cluster_answers() -> bool:
    if not (shutil.which("sbatch") and shutil.which("sinfo")):
        return False
    try:
        info = subprocess.run(
            ["sinfo", "-h", "-o", "%t"], capture_output=True, text=True, timeout=15
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return info.returncode == 0 and bool(info.stdout.strip())


def sbatch_calls(log: str) -> dict[str, str]:
    """{rule: sbatch command line} from the plugin's debug output (one job per rule here)."""
    return {
        m.group(1): m.group(0)
        for m in re.finditer(
            r"sbatch call: .*?--comment '?rule_(\w+?)(?:_wildcards_\S*)?'? .*", log
        )
    }


@pytest.fixture
def cluster():
    """Skip without a cluster, unless PROOFMATCH_REQUIRE_SLURM=1 (CI) makes that a failure."""
    if not cluster_answers():
        if os.environ.get("PROOFMATCH_REQUIRE_SLURM") == "1":
            pytest.fail(
                "PROOFMATCH_REQUIRE_SLURM=1 but sbatch/sinfo do not answer (did .ci/setup-slurm.sh run?)"
            )
        pytest.skip("no SLURM cluster here (CI starts one with .ci/setup-slurm.sh)")


@pytest.mark.slurm
@pytest.mark.slow
def test_workflow_runs_on_slurm(tmp_path, site_env, cluster):
    # The test cluster has no accounting: the plain profile must pick squeue by itself.
    assert (
        resolve_profile(REPO / "profiles/slurm/profile.v9+.yaml")["slurm-status-command"]
        == "squeue"
    )
    wd = copy_workflow(tmp_path)
    config = ["--configfile", "config/config.yaml", "small.yaml"]
    # What the tokenizer reads, built locally (no profile): only the last two jobs go through sbatch.
    local = subprocess.run(
        SNAKEMAKE + [CPU_TARGET, GPU_TARGET, "-c2", "--omit-from", SUBMITTED_FROM] + config,
        cwd=wd,
        capture_output=True,
        text=True,
        timeout=RUN_LIMIT_S,
    )
    assert local.returncode == 0, (local.stdout + local.stderr)[-6000:]
    assert len(pd.read_parquet(wd / CPU_TARGET)) > 0
    cmd = (
        ["timeout", "-s", "INT", "-k", "30", str(RUN_LIMIT_S)]
        + SNAKEMAKE
        + [
            CPU_TARGET,
            GPU_TARGET,
            "--profile",
            "slurm",
            "--profile",
            "profiles/ci-slurm-local",
            "--verbose",
        ]
        + config
    )
    start = time.monotonic()
    try:
        # SIGINT at its default disposition, so that `timeout -s INT` makes Snakemake scancel.
        run = subprocess.run(
            cmd,
            cwd=wd,
            capture_output=True,
            text=True,
            timeout=RUN_LIMIT_S + 60,
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
        log = run.stdout + run.stderr
    finally:
        logs = sorted((wd / ".snakemake" / "log").glob("*.snakemake.log"))
        uuid = re.search(r"SLURM run ID: (\S+)", logs[-1].read_text()) if logs else None
        if uuid:  # never leave jobs behind, whatever happened
            subprocess.run(["scancel", "--name", uuid.group(1)], capture_output=True, timeout=30)
    elapsed = time.monotonic() - start
    assert run.returncode == 0, f"rc {run.returncode} after {elapsed:.0f} s\n" + log[-6000:]

    assert json.loads((wd / GPU_TARGET / "config.json").read_text())

    # Every job went through sbatch and ran as a SLURM job with its own log.
    submitted = re.findall(r"has been submitted with SLURM jobid (\d+) \(log: (.+?)\)", log)
    assert submitted, log[-3000:]
    for jobid, path in submitted:
        slurm_log = Path(path)
        assert slurm_log.name == f"{jobid}.log" and slurm_log.is_file(), path
        assert "1 of 1 steps (100%) done" in slurm_log.read_text(), slurm_log.read_text()[-3000:]
    calls = sbatch_calls(log)
    # Exactly the two jobs that the local run left: nothing it built ran again.
    assert set(calls) == {SUBMITTED_FROM, "pretrain_scratchbert"}, sorted(calls)
    assert len(calls) == len(submitted)
    for rule, call in calls.items():
        if rule in GPU_RULES:
            assert "--gpus=1" in call, call
        else:
            assert "--gpus" not in call and "--gres" not in call, call
