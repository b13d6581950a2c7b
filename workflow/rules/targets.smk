# One rule per target id, so `snakemake <id>` rebuilds one figure or table. Its inputs are
# the target's outputs and every intermediate they are made from (common.smk,
# checked_target_files): a plain run rebuilds a missing one, and stops before any job,
# naming the command that rebuilds it, at a corrupt one.

for _target in TARGETS:

    rule:
        name:
            _target
        localrule: True
        input:
            target_outputs(_target),
            lambda wildcards, target=_target: checked_target_files([target]),
