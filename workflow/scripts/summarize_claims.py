"""Write results/claims/summary.csv: per target and variant, the paper's statistical claims that
hold, are equivalent, fail and are inconclusive, and the fixed checks, every-seed properties and
reference and diagnostic checks apart (docs/verdicts.md#counts)."""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir)))  # noqa: F821
import _job  # noqa: E402

from networkedfl.experiments.papers import ordered_targets  # noqa: E402
from networkedfl.io import write_csv  # noqa: E402
from networkedfl.pipeline.provenance import artefact_provenance, write_sidecar  # noqa: E402
from networkedfl.pipeline.summary import headline, summarize_claims  # noqa: E402

log = _job.start(snakemake)  # noqa: F821
paths = dict(zip(snakemake.params.targets, snakemake.input.claims, strict=True))  # noqa: F821
claims = {target: json.loads(Path(paths[target]).read_text(encoding="utf-8")) for target in ordered_targets(list(paths))}
summary = summarize_claims(claims)
write_csv(summary, snakemake.output[0])  # noqa: F821
write_sidecar(snakemake.output[0], artefact_provenance(snakemake.params.code,  # noqa: F821
                                                      {"claims": list(snakemake.input.claims)}))  # noqa: F821
log.info("%d targets: %s", summary["target"].nunique(), headline(summary))
for row in summary.itertuples(index=False):
    log.info("%s%s: %d hold, %d equivalent, %d fail, %d inconclusive; %d fixed, %d every-seed%s", row.target,
             f" [{row.variant}]" if row.variant else "", row.holds, row.equivalent, row.fails, row.inconclusive,
             row.fixed, row.every_seed, f" (failed: {row.failed_claims})" if row.failed_claims else "")
_job.finish(snakemake)  # noqa: F821
