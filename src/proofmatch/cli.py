"""The ``proofmatch`` command: every stage callable outside Snakemake, with explicit paths.

Each subcommand lives in the module that implements the stage. The module exposes
``add_arguments(parser)`` and ``main(args) -> int``; only the chosen module is imported, so
``proofmatch extract`` does not pay for importing torch, and ``proofmatch --help`` and
``proofmatch --version`` import no command at all. Every option's help shows its default.
The search commands (``search``, ``serve``, ``index``) import torch only when a model is loaded,
so their ``--help`` and their refusals of a bad query come before it (docs/benchmarks.md times them).
"""

from __future__ import annotations

import argparse
import importlib
import sys

# command -> (module, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "config": (
        "proofmatch.config_readme",
        "print the merged config with its defaults; write config/README.md",
    ),
    "demo": ("proofmatch.demo.generate", "generate the project's demo corpus"),
    "latex": (
        "proofmatch.data.latex",
        "convert LaTeX sources to XHTML+MathML articles with LaTeXML",
    ),
    "stacks": (
        "proofmatch.data.stacks",
        "build the Stacks project corpus from its LaTeX sources with LaTeXML",
    ),
    "match": (
        "proofmatch.data.match",
        "read a released MATcH dataset folder (read); compare its counts with the paper's (check)",
    ),
    "export-match": (
        "proofmatch.data.match_export",
        "write a results tree's splits and levels in the released MATcH layout",
    ),
    "manifest": ("proofmatch.data.corpus", "list and shard a corpus folder, join its metadata"),
    "extract": ("proofmatch.data.extract", "extract statement-proof pairs from XHTML articles"),
    "linearize": ("proofmatch.data.linearize", "linearize extracted pairs into typed tokens"),
    "article-text": (
        "proofmatch.data.article_text",
        "every paragraph of the dataset's articles as typed tokens (MLM text)",
    ),
    "filter": (
        "proofmatch.data.filters",
        "non-English articles and too short/long pairs filtered, with an audit",
    ),
    "check-config": (
        "proofmatch.config",
        "check config files as the workflow does before any job (names file and line)",
    ),
    "digest": (
        "proofmatch.artifacts",
        "record the digest of an artifact as it is now (one you trust; e.g. of an older version)",
    ),
    "stats": ("proofmatch.evaluation.stats_cli", "render Tables 1 and 2"),
    "split": ("proofmatch.data.splits", "mixed / unmixed / probability-domain splits"),
    "replace": ("proofmatch.data.replace", "symbol replacement on the proofs' MathML"),
    "show": ("proofmatch.data.show", "pretty-print pairs, filter reasons and mappings"),
    "tokenizer": ("proofmatch.models.tokenizer", "train the WordPiece tokenizer"),
    "pretrain": ("proofmatch.models.pretrain", "MLM pretraining of ScratchBERT"),
    "train": ("proofmatch.models.train_cli", "train a matching model"),
    "evaluate": ("proofmatch.evaluation.evaluate", "encode, score and decode a test set"),
    "baselines": ("proofmatch.evaluation.baselines", "TF-IDF and BM25 baselines"),
    "fusion": (
        "proofmatch.evaluation.fused",
        "a trained run + BM25: choose λ on dev (weight), evaluate (evaluate)",
    ),
    "tables": ("proofmatch.evaluation.tables", "render Tables 3-7"),
    "figure": ("proofmatch.evaluation.figure", "LIME explanations (Figure 2)"),
    "results-page": (
        "proofmatch.evaluation.results_page",
        "snapshot a finished run's tables; write docs/results.md from the snapshots",
    ),
    "index": ("proofmatch.search.build", "encode a corpus's proofs into a search index"),
    "index-corpus": (
        "proofmatch.search.corpus_index",
        "a folder of papers (XHTML or LaTeX) to a search index: no split, no training",
    ),
    "search": ("proofmatch.search.search_cli", "rank an index's proofs for a statement"),
    "serve": ("proofmatch.search.web", "search page and JSON API over an index"),
    "results": (
        "proofmatch.results_tree",
        "stamp a finished results tree; adopt a copied one without rerunning its jobs",
    ),
}


class _HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Each option's default after its help (none for flags, positionals and options without one)."""

    def _get_help_string(self, action: argparse.Action) -> str:
        help_ = action.help or ""
        if (
            action.default in (None, False, argparse.SUPPRESS)
            or not action.option_strings
            or "%(default)" in help_
            or "(default" in help_
        ):
            return help_
        return f"{help_} (default: %(default)s)" if help_ else "default: %(default)s"


def _version() -> str:
    from proofmatch import __version__

    return f"proofmatch {__version__}"


def _usage() -> str:
    width = max(map(len, COMMANDS))
    lines = [
        "usage: proofmatch <command> [options]",
        "       proofmatch --version",
        "",
        "`proofmatch <command> --help` lists a command's options and their defaults.",
        "",
        "commands:",
    ]
    lines += [f"  {name:<{width}}  {help_}" for name, (_, help_) in COMMANDS.items()]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(_usage())
        return 0 if argv else 2
    if argv[0] in ("-V", "--version"):
        print(_version())
        return 0
    name, rest = argv[0], argv[1:]
    if name not in COMMANDS:
        print(f"proofmatch: unknown command {name!r}\n\n{_usage()}", file=sys.stderr)
        return 2
    module = importlib.import_module(COMMANDS[name][0])
    parser = argparse.ArgumentParser(
        prog=f"proofmatch {name}", description=COMMANDS[name][1], formatter_class=_HelpFormatter
    )
    module.add_arguments(parser)
    from proofmatch.config import ConfigError

    try:
        return int(module.main(parser.parse_args(rest)) or 0)
    except (
        ConfigError
    ) as exc:  # a bad config file or value: its message names key or line and the fix
        print(f"proofmatch {name}: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
