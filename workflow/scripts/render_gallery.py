"""Copy every selected figure's PNG to docs/gallery/ and write the gallery page there."""

import json
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir)))  # noqa: F821
import _job  # noqa: E402
import pandas as pd  # noqa: E402

from networkedfl.io import atomic_write  # noqa: E402
from networkedfl.pipeline.summary import (  # noqa: E402
    ablation_markdown,
    claims_markdown,
    gallery_markdown,
    summarize_claims,
    tuning_markdown,
)

log = _job.start(snakemake, keeps_previous=False)  # noqa: F821
for source, image in zip(snakemake.input.figures, snakemake.output.images, strict=True):  # noqa: F821
    atomic_write(image, lambda tmp, source=source: shutil.copyfile(source, tmp))
claims = {target: json.loads(Path(path).read_text(encoding="utf-8"))
          for target, path in zip(snakemake.params.targets, snakemake.input.claims, strict=True)}  # noqa: F821
page = ("# Gallery\n\nThe figures of the default configuration, as `snakemake --cores 1 gallery` "
        "copies them from `results/figures/`.\n\n" + gallery_markdown(summarize_claims(claims)))
atomic_write(snakemake.output.page, lambda tmp: Path(tmp).write_text(page, encoding="utf-8"))  # noqa: F821
text = claims_markdown(claims)
atomic_write(snakemake.output.claims, lambda tmp: Path(tmp).write_text(text, encoding="utf-8"))  # noqa: F821
tuned = {target: pd.read_csv(path) for target, path in zip(snakemake.params.tuned, snakemake.input.tuned,  # noqa: F821
                                                            strict=True)}
text = tuning_markdown(tuned)
atomic_write(snakemake.output.tuning, lambda tmp: Path(tmp).write_text(text, encoding="utf-8"))  # noqa: F821
for table, out in zip(snakemake.input.ablation, snakemake.output.ablation, strict=True):  # noqa: F821
    text = ablation_markdown(pd.read_csv(table))
    atomic_write(out, lambda tmp, text=text: Path(tmp).write_text(text, encoding="utf-8"))
log.info("gallery of %d figures in %s", len(snakemake.output.images), Path(snakemake.output.page).parent)  # noqa: F821
