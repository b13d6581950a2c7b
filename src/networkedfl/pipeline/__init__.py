"""Glue between the Snakemake workflow and the package: paths, config, atomic I/O."""
