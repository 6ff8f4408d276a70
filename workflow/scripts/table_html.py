"""One table's HTML page for the report, from its Markdown (proofmatch.render.write_table_html)."""

from proofmatch.logs import run_logged
from proofmatch.render import write_table_html

run_logged(snakemake.log[0], write_table_html, snakemake.input[0], snakemake.output[0])
