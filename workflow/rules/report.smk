# The HTML page of every table, the one the HTML report shows: `snakemake --report` opens an HTML
# result in place, a Markdown one only as a download link that browsers do not open. One job per
# table, from its .md (proofmatch.render.markdown_to_html); the .md, .tex and .csv stay the files.


# the HTML page of each table that `all` asks for (results/tables/NAME.md)
TABLE_PAGES = [
    t.removesuffix(".md") + ".html"
    for t in [spec.target for spec in RT.TABLES.values()]
    + LATEX_TARGETS
    + TRANSFER_TARGETS
    if t.startswith("results/tables/") and t.endswith(".md")
]


rule table_html:
    input:
        "results/tables/{page}.md",
    output:
        report(
            "results/tables/{page}.html",
            caption="../report/table.rst",
            category="Tables",
        ),
    log:
        "results/logs/table_html/{page}.log",
    wildcard_constraints:
        page=r"[A-Za-z][A-Za-z0-9_]*",
    conda:
        CONDA
    resources:
        mem_mb=500,
        runtime=5,
    script:
        "../scripts/table_html.py"
