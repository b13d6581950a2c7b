"""Write the gallery to docs/gallery/: the report page, claims.md, tuning.md, the quirk
ablations' tables, every figure's PNG and every executed notebook."""

import json
import os
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir)))  # noqa: F821
import _job  # noqa: E402
import nbformat  # noqa: E402
import pandas as pd  # noqa: E402

from networkedfl.experiments.diagnosis import failures_markdown  # noqa: E402
from networkedfl.experiments.gtv.printed import compare_printed  # noqa: E402
from networkedfl.experiments.report import table_view  # noqa: E402
from networkedfl.io import atomic_write, redact_notebook  # noqa: E402
from networkedfl.pipeline.summary import (  # noqa: E402
    ablation_markdown,
    chosen_points,
    claims_markdown,
    gallery_markdown,
    summarize_claims,
    tuning_markdown,
)

log = _job.start(snakemake, keeps_previous=False, signed=list(snakemake.input))  # noqa: F821
inputs, outputs, params = snakemake.input, snakemake.output, snakemake.params  # noqa: F821


def write_text(path, text):
    atomic_write(path, lambda tmp: Path(tmp).write_text(text, encoding="utf-8"))


for source, copy in zip(inputs.figures, outputs.images, strict=True):
    atomic_write(copy, lambda tmp, source=source: shutil.copyfile(source, tmp))
# committed: redacted again, for a notebook executed before render_notebook.py redacted its own
roots = [os.getcwd(), Path(snakemake.scriptdir).resolve().parents[1]]  # noqa: F821
for source, copy in zip(inputs.notebooks, outputs.notebooks, strict=True):
    text = nbformat.writes(redact_notebook(nbformat.read(source, as_version=nbformat.NO_CONVERT), roots=roots))
    write_text(copy, text)
claims = {target: json.loads(Path(path).read_text(encoding="utf-8"))
          for target, path in zip(params.targets, inputs.claims, strict=True)}
tables = {target: table_view(target, pd.read_csv(path)) for target, path in zip(params.tables, inputs.tables, strict=True)}
page_dir = Path(outputs.page).parent
notebooks = {target: str(Path(path).relative_to(page_dir)) for target, path in zip(params.targets, outputs.notebooks,
                                                                                     strict=True)}
tuned = {t: pd.read_csv(p) for t, p in zip(params.tuned, inputs.tuned, strict=True)}
printed = {target: compare_printed(pd.read_csv(path), target)  # the authors' printed numbers beside ours
           for target, path in zip(params.printed, inputs.printed, strict=True)}
diagnostics = {target: pd.read_csv(path)  # the ablations and the step scan: what moves a failing claim
               for target, path in zip(params.diagnostics, inputs.diagnostics, strict=True)}
write_text(outputs.page, gallery_markdown(summarize_claims(claims), params.experiments, tables, notebooks=notebooks,
                                          printed=printed, failures=failures_markdown(claims, diagnostics),
                                          chosen={t: chosen_points(table) for t, table in tuned.items()}))
write_text(outputs.claims, claims_markdown(claims, diagnostics))
write_text(outputs.tuning, tuning_markdown(tuned))
for table, out in zip(inputs.ablation, outputs.ablation, strict=True):
    write_text(out, ablation_markdown(pd.read_csv(table)))
log.info("gallery of %d targets (%d figures, %d tables) in %s", len(params.targets), len(outputs.images),
         len(params.tables), page_dir)
