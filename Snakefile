# networkedfl: reproduce every figure and table of the papers in ../shared/papers.
#
#   snakemake --cores all                     every registered target
#   snakemake --cores 4 gtv_fig09_sbm_sampling one target by its id
#   snakemake --cores 2 --configfile config/test.yaml   the small test profile
#
# This file only includes the stages; see workflow/rules/.

from snakemake.utils import min_version

min_version("9.0")


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/cache.smk"
include: "workflow/rules/experiments.smk"
include: "workflow/rules/reports.smk"
include: "workflow/rules/targets.smk"


rule all:
    default_target: True
    localrule: True
    input:
        all_outputs(),
        lambda wildcards: checked_target_files(selected_targets()),


onsuccess:
    report_timings(log)


onerror:
    report_timings(log)
    restore_failed_claims()
