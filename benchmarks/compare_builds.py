"""Two finished builds side by side: every claim's verdict, effect and interval, and which
tables are byte-identical (issue 40 item 6: verdicts that do not depend on the machine).

Not a speed benchmark (``run_all.py`` does not run it). The check of docs/determinism.md
("Two default builds") is::

    cp -r <a finished default build> <copy>          # the results and .snakemake with it
    cd <copy> && snakemake --cores all --config threads_per_job=2   # reruns every run job
    python benchmarks/compare_builds.py <a finished default build> <copy>

It prints one line per claim whose verdict moved (and exits 1 if any did), one per claim
whose effect or interval differs (with the relative difference of the effect), and the
tables that differ.
"""

from __future__ import annotations

import argparse
import filecmp
import json
import sys
from pathlib import Path


def claims(build: Path) -> dict[tuple[str, str, str], dict]:
    """Every claim of a build's ``results/claims/<target>.json``, keyed by (target, variant,
    text); a target without variants has variant ``""``, a text repeated within one target
    and variant gets ``#2``, ``#3`` ... in the order of the file."""
    out: dict[tuple[str, str, str], dict] = {}
    for path in sorted((build / "results" / "claims").glob("*.json")):
        if path.name.endswith(".provenance.json"):
            continue
        for claim in json.loads(path.read_text(encoding="utf-8")):
            key, k = (path.stem, claim.get("variant", ""), claim["claim"]), 1
            while key in out:
                k += 1
                key = (path.stem, claim.get("variant", ""), f"{claim['claim']} #{k}")
            out[key] = claim
    return out


def _relative(a: object, b: object) -> str:
    if isinstance(a, float) and isinstance(b, float):
        return f"{abs(a - b) / max(abs(a), abs(b), 1e-300):.2g}"
    return "n/a"


def compare(first: Path, second: Path) -> int:
    """Print the comparison; the number of claims whose verdict differs (or is missing)."""
    a, b = claims(first), claims(second)
    missing, shared = sorted(set(a) ^ set(b)), sorted(set(a) & set(b))
    moved = [key for key in shared if a[key]["verdict"] != b[key]["verdict"]]
    differ = [key for key in shared
              if a[key].get("effect") != b[key].get("effect") or a[key].get("interval") != b[key].get("interval")]
    print(f"claims: {len(a)} and {len(b)}; verdicts that differ: {len(moved)}; only in one build: {len(missing)}; "
          f"effect or interval differs: {len(differ)}")
    for key in missing:
        print(f"  only in one build: {key}")
    for key in moved:
        print(f"  verdict moved: {key[0]} [{key[1]}] {key[2]!r}: {a[key]['verdict']} -> {b[key]['verdict']}")
    for key in differ:
        ea, eb = a[key].get("effect"), b[key].get("effect")
        print(f"  effect differs: {key[0]} [{key[1]}] {key[2][:70]!r}: {ea} vs {eb} (relative {_relative(ea, eb)}), "
              f"interval {a[key].get('interval')} vs {b[key].get('interval')}, verdict {a[key]['verdict']}")
    tables = sorted((first / "results" / "tables").glob("*.csv"))
    other = second / "results" / "tables"
    changed = [t.stem for t in tables
               if not (other / t.name).exists() or not filecmp.cmp(t, other / t.name, shallow=False)]
    print(f"tables: {len(tables) - len(changed)} of {len(tables)} byte-identical; differ: {', '.join(changed) or 'none'}")
    return len(moved) + len(missing)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("first", type=Path, help="a finished build (its directory holds results/)")
    parser.add_argument("second", type=Path, help="another finished build of the same targets")
    args = parser.parse_args(argv)
    return 1 if compare(args.first, args.second) else 0


if __name__ == "__main__":
    sys.exit(main())
