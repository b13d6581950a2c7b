"""Write results/claims/summary.csv: per target and variant, the paper's claims that hold,
fail and are inconclusive, and the reference and diagnostic checks apart."""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir)))  # noqa: F821
import _job  # noqa: E402

from networkedfl.experiments.papers import ordered_targets  # noqa: E402
from networkedfl.io import write_csv  # noqa: E402
from networkedfl.pipeline.provenance import artefact_provenance, write_sidecar  # noqa: E402
from networkedfl.pipeline.summary import summarize_claims  # noqa: E402

log = _job.start(snakemake)  # noqa: F821
paths = dict(zip(snakemake.params.targets, snakemake.input.claims, strict=True))  # noqa: F821
claims = {target: json.loads(Path(paths[target]).read_text(encoding="utf-8")) for target in ordered_targets(list(paths))}
summary = summarize_claims(claims)
write_csv(summary, snakemake.output[0])  # noqa: F821
write_sidecar(snakemake.output[0], artefact_provenance(snakemake.params.code,  # noqa: F821
                                                      {"claims": list(snakemake.input.claims)}))  # noqa: F821
log.info("%d targets: of the papers' %d claims, %d hold, %d fail, %d inconclusive", summary["target"].nunique(),
         summary["claims"].sum(), summary["holds"].sum(), summary["fails"].sum(), summary["inconclusive"].sum())
for row in summary.itertuples(index=False):
    log.info("%s%s: %d hold, %d fail, %d inconclusive%s", row.target, f" [{row.variant}]" if row.variant else "",
             row.holds, row.fails, row.inconclusive, f" (failed: {row.failed_claims})" if row.fails else "")
_job.finish(snakemake)  # noqa: F821
