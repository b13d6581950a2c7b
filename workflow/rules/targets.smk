# One rule per target id, so `snakemake <id>` rebuilds one figure or table.

for _target in TARGETS:

    rule:
        name:
            _target
        localrule: True
        input:
            target_outputs(_target),
