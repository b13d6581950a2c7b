"""Glue between the Snakemake workflow and the package: the config (:mod:`.config`), the
jobs (:mod:`.runner`), code hashes and provenance sidecars (:mod:`.provenance`, signed by
:mod:`.signing`), artefact checks (:mod:`.integrity`), the jobs' environment
(:mod:`.environment`), the claims summary and index (:mod:`.summary`) and a scheduler
workaround (:mod:`.scheduling`).  Paths and atomic I/O are in :mod:`networkedfl.io`;
nothing in the package imports this subpackage."""
