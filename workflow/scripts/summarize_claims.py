"""Write results/claims/summary.csv: one row per target, claims evaluated and passed."""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir)))  # noqa: F821
import _job  # noqa: E402

from networkedfl.io import write_csv  # noqa: E402
from networkedfl.pipeline.provenance import artefact_provenance, write_sidecar  # noqa: E402
from networkedfl.pipeline.summary import summarize_claims  # noqa: E402

log = _job.start(snakemake)  # noqa: F821
claims = {
    target: json.loads(Path(path).read_text(encoding="utf-8"))
    for target, path in zip(snakemake.params.targets, snakemake.input.claims, strict=True)  # noqa: F821
}
summary = summarize_claims(claims)
write_csv(summary, snakemake.output[0])  # noqa: F821
write_sidecar(snakemake.output[0], artefact_provenance(snakemake.params.code,  # noqa: F821
                                                      {"claims": list(snakemake.input.claims)}))  # noqa: F821
log.info("%d targets, %d of %d claims hold", len(summary), summary["passed"].sum(), summary["claims"].sum())
for row in summary.itertuples(index=False):
    log.info("%s: %d/%d%s", row.target, row.passed, row.claims, f" (failed: {row.failed_claims})" if row.failed else "")
_job.finish(snakemake)  # noqa: F821
