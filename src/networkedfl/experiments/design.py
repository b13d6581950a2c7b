"""The design of the verdicts (docs/verdicts.md#design): per-seed spread from a pilot, the
power of the verdict rule's test, and the seeds that give 80 % power at a margin.

A case's test is one-sided at ``alpha / 2 = 0.025`` (its 95 % interval excludes the bound),
on ``n`` paired per-seed values with standard deviation ``sd``: at a true effect ``delta``
beyond the bound its power is ``P(T > t_{1 - alpha/2, n-1})`` for ``T`` noncentral t with
``n - 1`` degrees of freedom and noncentrality ``delta sqrt(n) / sd``
(:func:`power`).  The pilot's ``sd`` is backed out of a claim's interval half-width,
``sd = half sqrt(n) / t_{0.975, n-1}`` (:func:`sd_from_interval`).

``git show a8ceb51:docs/gallery/claims.md | python -m networkedfl.experiments.design -``
prints, per statistical paper claim of the pilot (the gallery of that commit, fixed: the
design is not recomputed from later results), its scale, spread, the seeds for 80 % power at
its target's margin (``config/config.yaml``'s ``design`` blocks) and the smallest effect its
current seeds detect with 80 % power; then the seeds per target.  ``--write`` puts the
tables into ``docs/verdicts.md`` between its ``design:begin``/``design:end`` markers.
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from scipy import optimize, stats

__all__ = ["design_markdown", "design_rows", "detectable_effect", "pilot_claims", "power", "sd_from_interval",
           "seeds_for_power", "target_seeds"]

ALPHA, POWER = 0.05, 0.8


def sd_from_interval(low: float, high: float, n: int, *, log: bool, level: float = 1 - ALPHA) -> float:
    """The per-seed standard deviation behind a t interval ``[low, high]`` of ``n`` seeds
    (on the log scale the interval is of a ratio: its logarithms are used)."""
    if n < 2:
        raise ValueError(f"an interval of {n} seed(s) has no t spread")
    lo, hi = (math.log(low), math.log(high)) if log else (low, high)
    return (hi - lo) / 2 * math.sqrt(n) / float(stats.t.ppf(0.5 + level / 2, n - 1))


def power(n: int, effect: float, sd: float, alpha: float = ALPHA) -> float:
    """Power of the one-sided t test at ``alpha / 2`` with ``n`` seeds at a true ``effect``."""
    if n < 2:
        return 0.0
    crit = float(stats.t.ppf(1 - alpha / 2, n - 1))
    return float(stats.nct.sf(crit, n - 1, abs(effect) * math.sqrt(n) / sd))


def seeds_for_power(effect: float, sd: float, target: float = POWER, alpha: float = ALPHA,
                    max_n: int = 100_000) -> int | None:
    """The fewest seeds (at least 2) whose power at ``effect`` reaches ``target``; ``None``
    beyond ``max_n``."""
    if sd == 0:
        return 2
    lo, hi = 2, 2
    while power(hi, effect, sd, alpha) < target:
        if hi >= max_n:
            return None
        lo, hi = hi, min(2 * hi, max_n)
    while lo < hi:  # the power grows with n: bisect
        mid = (lo + hi) // 2
        lo, hi = (mid + 1, hi) if power(mid, effect, sd, alpha) < target else (lo, mid)
    return lo


def detectable_effect(n: int, sd: float, target: float = POWER, alpha: float = ALPHA) -> float:
    """The effect that ``n`` seeds detect with power ``target`` (``inf`` for one seed)."""
    if n < 2:
        return math.inf
    if sd == 0:
        return 0.0
    return float(optimize.brentq(lambda e: power(n, e, sd, alpha) - target, 1e-12 * sd, 100 * sd))


_ROW = re.compile(r": (-?[0-9.e+-]+) \[(-?[0-9.e+-]+), (-?[0-9.e+-]+)\]$")


def pilot_claims(claims_md: str) -> Iterator[dict[str, Any]]:
    """The statistical paper claims of a gallery ``claims.md``: target, claim, verdict, seeds,
    scale (``log`` when the effect is a ratio, ``a / b``), effect and interval."""
    target = None
    for line in claims_md.splitlines():
        head = re.match(r"### `([^`]+)`", line)
        if head:
            target = head.group(1)
            continue
        if not line.startswith("| ") or line.startswith("| verdict"):
            continue
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
        if len(cells) < 5 or "[reference]" in cells[1].replace("\\", "") or "[diagnostic]" in cells[1].replace("\\", ""):
            continue
        found = _ROW.search(cells[2])
        if not found or not cells[3].isdigit():
            continue  # a fixed check, an every-seed property or a one-seed claim
        effect, low, high = (float(v) for v in found.groups())
        label = cells[2][:found.start()]
        yield {"target": target, "claim": cells[1], "verdict": cells[0].strip("*").split(" ")[0],
               "n": int(cells[3]), "scale": "log" if " / " in label or "ratio" in label else "linear",
               "label": label, "effect": effect, "low": low, "high": high}


def _margin(design: Mapping[str, Any], scale: str, label: str) -> float:
    if scale == "log":
        return math.log1p(float(design.get("ratio_margin", 0.0)))
    linear = design.get("difference_margin", 0.0)
    if isinstance(linear, Mapping):
        return next((float(v) for k, v in linear.items() if k in label), 0.0)
    return float(linear)


def design_rows(claims_md: str, designs: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per pilot claim: its spread, margin, the seeds for 80 % power at the margin and the
    effect its seeds detect (on the case's scale: a log ratio or a difference)."""
    rows = []
    for c in pilot_claims(claims_md):
        log = c["scale"] == "log"
        if log and (c["low"] <= 0 or c["high"] <= 0 or math.isinf(c["high"])):
            continue
        sd = sd_from_interval(c["low"], c["high"], c["n"], log=log)
        margin = _margin(designs.get(c["target"], {}), c["scale"], c["label"])
        need = seeds_for_power(margin, sd) if margin > 0 else None
        mde = detectable_effect(c["n"], sd)
        rows.append({**c, "sd": sd, "margin": margin, "seeds_80": need,
                     "detectable": math.exp(mde) if log else mde})
    return rows


def design_markdown(rows: list[dict[str, Any]]) -> str:
    """The rows of :func:`design_rows` as a Markdown table."""
    lines = ["| target | claim | scale | seeds | pilot sd | margin | seeds for 80 % at the margin | "
             "effect detected at 80 % with these seeds |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        shown_margin = f"ratio {math.exp(r['margin']):.3g}" if r["scale"] == "log" else f"{r['margin']:.3g}"
        need = "–" if r["margin"] == 0 else (str(r["seeds_80"]) if r["seeds_80"] is not None else "> 100000")
        effect = f"ratio {r['detectable']:.3g}" if r["scale"] == "log" else f"{r['detectable']:.3g}"
        lines.append(f"| `{r['target']}` | {r['claim'][:80]} | {r['scale']} | {r['n']} | {r['sd']:.3g} | "
                     f"{shown_margin if r['margin'] else 'none'} | {need} | {effect} |")
    return "\n".join(lines) + "\n"


def target_seeds(rows: list[dict[str, Any]]) -> dict[str, int | None]:
    """Per target, the design's seeds: the most any of its pilot claims needs for 80 % power
    at the margin (``None`` where a claim needs more than 100,000)."""
    out: dict[str, int | None] = {}
    for r in rows:
        if r["margin"] == 0:
            continue
        prev = out.get(r["target"], 0)
        out[r["target"]] = None if prev is None or r["seeds_80"] is None else max(prev, r["seeds_80"])
    return out


def main(argv: list[str] | None = None) -> int:
    import yaml

    args = sys.argv[1:] if argv is None else list(argv)
    write = "--write" in args
    args = [a for a in args if a != "--write"]
    source = args[0] if args else "docs/gallery/claims.md"
    claims_md = sys.stdin.read() if source == "-" else Path(source).read_text(encoding="utf-8")
    config = yaml.safe_load(Path(args[1] if len(args) > 1 else "config/config.yaml").read_text(encoding="utf-8"))
    designs = {t: block.get("design", {}) for t, block in config["experiments"].items() if isinstance(block, dict)}
    rows = design_rows(claims_md, designs)
    text = "| target | seeds run | design seeds (80 % power at the margin) |\n|---|---|---|\n" + "".join(
        f"| `{target}` | {config['experiments'][target].get('repetitions')} | "
        f"{seeds if seeds is not None else '> 100000'} |\n" for target, seeds in target_seeds(rows).items())
    text += "\nPer claim of the pilot (the effect detected is on the claim's scale):\n\n" + design_markdown(rows)
    if not write:
        sys.stdout.write(text)
        return 0
    page = Path("docs/verdicts.md")
    head, rest = page.read_text(encoding="utf-8").split("<!-- design:begin -->\n", 1)
    page.write_text(f"{head}<!-- design:begin -->\n{text}<!-- design:end -->{rest.split('<!-- design:end -->', 1)[1]}",
                    encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
