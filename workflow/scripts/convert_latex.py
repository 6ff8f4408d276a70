"""LaTeX sources -> XHTML+MathML with LaTeXML (thin wrapper around proofmatch.data.latex): the inventory,
one shard's conversion, the assembled corpus or the conversion table, by rule."""

from pathlib import Path

from proofmatch.data import latex, latex_inventory
from proofmatch.logs import run_logged

rule, inp, out, log = snakemake.rule, snakemake.input, snakemake.output, snakemake.log[0]
if rule == "latex_inventory":
    run_logged(
        log,
        latex_inventory.write_inventory,
        inp.sources,
        snakemake.params.n_shards,
        inp.get("metadata"),
        out[0],
    )
elif rule == "convert_latex":
    run_logged(
        log,
        latex.convert_shard,
        inp.inventory,
        int(snakemake.wildcards.shard),
        Path(inp.inventory).parent,
        out[0],
        dict(snakemake.params.limits),
    )
elif rule == "latex_corpus":
    run_logged(
        log,
        latex.assemble_corpus,
        inp.inventory,
        list(inp.shards),
        Path(inp.inventory).parent,
        inp.get("metadata"),
        out.xhtml,
        out.metadata,
        out.report,
    )
elif rule == "conversion_table":
    run_logged(log, latex.conversion_table, dict(inp.items()), out.md.removesuffix(".md"))
else:
    raise ValueError(f"convert_latex.py does not serve rule {rule!r}")
