"""``proofmatch train``: one training run from the command line (the workflow calls
:func:`proofmatch.models.train.train_run` from its rule script instead)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging

from proofmatch.config import run_matching
from proofmatch.data.views import VIEWS
from proofmatch.experiments import ENCODERS, MODES
from proofmatch.models.matcher import NotConfigured
from proofmatch.models.params import TrainParams, start_checkpoint
from proofmatch.models.train import train_run


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("data", help="replaced-split Parquet (train part trains, dev part selects)")
    parser.add_argument("--out", required=True, help="run folder")
    parser.add_argument("--encoder", required=True, choices=ENCODERS, help="the encoder to train")
    parser.add_argument("--mode", required=True, choices=MODES, help="matching mode")
    parser.add_argument(
        "--view", required=True, choices=VIEWS, help="tokens the model reads: text, math or both"
    )
    parser.add_argument("--config", default="config/config.yaml", help="config file")
    parser.add_argument("--seed", type=int, help="overrides the config seed")
    parser.add_argument(
        "--tokenizer-dir", help="WordPiece tokenizer (default: the checkpoint's own)"
    )
    parser.add_argument(
        "--pretrained-dir",
        help="BERT checkpoint (ScratchBERT folder; default for mathbert: matching.mathbert)",
    )
    parser.add_argument("--epochs", type=int, help="overrides the epochs of the config")
    parser.add_argument("--log", help="log file")


def main(args: argparse.Namespace) -> int:
    from proofmatch.config import load_config
    from proofmatch.logs import setup_logging

    setup_logging(args.log)
    cfg = load_config(args.config)
    p = TrainParams.from_config(cfg["matching"], args.encoder)
    if args.epochs:
        p = dataclasses.replace(p, epochs=args.epochs)
    seed = cfg["seed"] if args.seed is None else args.seed
    try:
        result = train_run(
            args.data,
            args.out,
            args.encoder,
            args.mode,
            args.view,
            p,
            seed,
            tokenizer_dir=args.tokenizer_dir,
            pretrained_dir=start_checkpoint(cfg["matching"], args.encoder, args.pretrained_dir),
            decode=run_matching(cfg["matching"], args.encoder, cfg["decode"]).get("decode"),
        )
    except NotConfigured as err:
        logging.getLogger("proofmatch").error("not run: %s", err)
        return 3
    print(json.dumps(result, indent=2, sort_keys=True))
    return 0
