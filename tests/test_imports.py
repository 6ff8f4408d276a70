"""The data stages, the table renderer, the experiment specification, the config and the TeX
converter load no torch.

They run in jobs that never train (extraction, filters, splits, tables) and in ``proofmatch``
commands that should start in a second, so importing them must not pull in torch or
transformers (a few seconds and a GiB of memory each). Checked in a fresh interpreter, because
this test process may have imported torch already; the data modules are discovered with pkgutil,
so a new one is covered without listing it here.
"""

from __future__ import annotations

import json
import pkgutil
import subprocess
import sys

import proofmatch.data
import proofmatch.scoring
import proofmatch.texmath

HEAVY = ("torch", "transformers")
TORCH_FREE = [
    *sorted(m.name for m in pkgutil.walk_packages(proofmatch.data.__path__, "proofmatch.data.")),
    *sorted(
        m.name for m in pkgutil.walk_packages(proofmatch.scoring.__path__, "proofmatch.scoring.")
    ),
    "proofmatch.evaluation.tables",
    "proofmatch.render",
    "proofmatch.evaluation.paper",
    "proofmatch.evaluation.comparison",
    "proofmatch.experiments",
    "proofmatch.config",
    "proofmatch.corpora",
    "proofmatch.cli",  # the search commands: --help and a refused query come before torch
    "proofmatch.search.search_cli",
    "proofmatch.search.web",
    "proofmatch.search.build",
    "proofmatch.search.index",
    *sorted(
        m.name for m in pkgutil.walk_packages(proofmatch.texmath.__path__, "proofmatch.texmath.")
    ),
]


def test_data_modules_are_discovered():
    assert {"proofmatch.data.corpus", "proofmatch.data.stats", "proofmatch.data.splits"} <= set(
        TORCH_FREE
    )


def test_data_and_table_modules_load_no_torch():
    code = (
        "import importlib, json, sys\n"
        "loaded = {}\n"
        f"for name in {TORCH_FREE!r}:\n"
        "    importlib.import_module(name)\n"
        f"    loaded[name] = [m for m in {HEAVY!r} if m in sys.modules]\n"
        "print(json.dumps(loaded))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    loaded = json.loads(proc.stdout)
    assert set(loaded) == set(TORCH_FREE)
    first = next(((name, heavy) for name, heavy in loaded.items() if heavy), None)
    assert first is None, f"importing {first[0]} loads {', '.join(first[1])}"
