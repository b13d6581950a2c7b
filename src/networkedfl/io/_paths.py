"""The single source of the pipeline's directory layout.

Every file the workflow reads or writes is named here; rules, scripts and tests use
these helpers (or the Snakemake wildcard patterns they return) rather than spelling paths.
All paths are relative to the Snakemake working directory (the repository root).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

__all__ = ["Paths", "dataset_sources", "find_repo_root", "vendored_dataset"]


def find_repo_root(start: str | Path = ".") -> Path:
    """The nearest directory at or above ``start`` that holds the workflow's ``Snakefile``."""
    here = Path(start).resolve()
    for candidate in (here, *here.parents):
        if (candidate / "Snakefile").is_file():
            return candidate
    raise FileNotFoundError(f"no Snakefile found at or above {here}")


@dataclass(frozen=True)
class Paths:
    """Output layout below ``results`` (default ``results/``) and ``logs``."""

    results: Path = Path("results")
    logs: Path = Path("logs")
    data: Path = Path("data")
    docs: Path = Path("docs")

    def raw(self, target: str = "{target}", setting: str = "{setting}") -> str:
        """The records of one setting's job: every repetition seed, in order (``seed`` column)."""
        return str(self.results / "raw" / target / f"{setting}.csv")

    def tuning(self, target: str = "{target}", setting: str = "{setting}") -> str:
        """Every grid point of one method's tuning (see :mod:`networkedfl.experiments.tuning`)."""
        return str(self.results / "tuning" / target / f"{setting}.csv")

    def table(self, target: str = "{target}") -> str:
        return str(self.results / "tables" / f"{target}.csv")

    def figure(self, target: str = "{target}", ext: str = "pdf") -> str:
        return str(self.results / "figures" / f"{target}.{ext}")

    def claims(self, target: str = "{target}") -> str:
        return str(self.results / "claims" / f"{target}.json")

    def notebook_params(self, target: str = "{target}") -> str:
        return str(self.results / "reports" / f"{target}.params.yaml")

    def executed_notebook(self, target: str = "{target}") -> str:
        return str(self.results / "reports" / f"{target}.ipynb")

    def report(self, target: str = "{target}") -> str:
        return str(self.results / "reports" / f"{target}.html")

    def log(self, stage: str, name: str) -> str:
        return str(self.logs / stage / f"{name}.log")

    def claims_summary(self) -> str:
        """One row per target: claims evaluated and passed."""
        return str(self.results / "claims" / "summary.csv")

    def index(self) -> str:
        """The page linking every target's outputs."""
        return str(self.results / "index.html")

    def gallery(self, name: str = "{name}") -> str:
        """The gallery (docs/gallery/, committed with the repository): figure PNGs and a Markdown page."""
        return str(self.docs / "gallery" / name)

    def raw_data(self, dataset: str = "{dataset}", filename: str = "{filename}") -> str:
        """A verified dataset file, as placed by the dataset's download rule."""
        return str(self.data / "raw" / dataset / filename)

    def raw_dataset(self, dataset: str) -> str:
        """The folder holding a dataset's downloaded files."""
        return str(self.data / "raw" / dataset)

    def cache(self, kind: str = "{kind}", key: str = "{key}", ext: str = "npz") -> str:
        """An intermediate artefact shared by several jobs (e.g. a graph learnt from data)."""
        return str(self.results / "cache" / kind / f"{key}.{ext}")


def vendored_dataset(repo: str | Path, dataset: str) -> Path:
    """The copy of a dataset shipped in the repository (``data/vendored/<dataset>``)."""
    return Path(repo) / "data" / "vendored" / dataset


def dataset_sources(sources: list[str], repo: str | Path, dataset: str) -> list[str]:
    """A dataset's configured ``sources`` resolved, in order: ``"vendored"`` is the copy in
    the repository ``repo``, a relative directory is relative to ``repo``, anything with a
    scheme is a URL.  Resolved where the download runs, never as a rule parameter: the
    files are verified by checksum, so neither moving the checkout nor adding a mirror
    changes them, and neither reruns anything."""
    resolved = []
    for source in sources:
        if source == "vendored":
            source = str(vendored_dataset(repo, dataset))
        elif "://" not in source and not Path(source).is_absolute():
            source = str(Path(repo) / source)
        resolved.append(source)
    return resolved
