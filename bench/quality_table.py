"""
Tables of run_quality.sh from its results file (one JSON object a line).

  quality_table.py RESULTS.jsonl

Per split (valid, holdout): collection x method, mean ± sample std (ddof 1) over the
seeds of the collection's metric (tile: mean tile score; layout: mean Kendall tau-b)
and the 95% t-interval of that mean over the seeds, then the per-seed values (with
perfcast eval's 95% bootstrap interval over graphs, when the row carries it); the same
for OPA; then the heuristic chosen per seed and the epochs the two trainers ran (best
epoch / epochs run).
"""
import json
import math
import sys

import numpy as np
from scipy import stats


def seed_interval(v):
    """mean, sample std and the 95% t-interval of the mean over seeds (NaN below 2)."""
    m = float(np.mean(v))
    if len(v) < 2:
        return m, math.nan, (math.nan, math.nan)
    sd = float(np.std(v, ddof=1))
    h = float(stats.t.ppf(0.975, len(v) - 1)) * sd / math.sqrt(len(v))
    return m, sd, (m - h, m + h)

COLLECTIONS = ["tile:xla", "layout:xla:random", "layout:xla:default", "layout:nlp:random",
               "layout:nlp:default"]
METHODS = ["random", "heuristic", "torch", "perfcast"]
LABEL = {"random": "random", "heuristic": "best heuristic", "torch": "torch twin",
         "perfcast": "perfcast", "perfcast_x": "perfcast + extra flags"}


def main():
    rows = []
    for i, l in enumerate(open(sys.argv[1]), 1):
        try:
            rows.append(json.loads(l))
        except ValueError:
            print(f"skipping malformed line {i}", file=sys.stderr)
    for r in rows:  # trainer rows carry perfcast eval's JSON under "eval"
        if "eval" in r:
            r["metric"] = r["eval"]["metric"]
            r["opa"] = r["eval"]["opa"]
            r["tau"] = r["eval"]["kendall_tau"]
            # eval's bootstrap over graphs (perfcast eval since issue #14), if present
            r["metric_ci"] = r["eval"].get("metric_ci95")
            r["opa_ci"] = r["eval"].get("opa_ci95")
    seeds = sorted({r["seed"] for r in rows})
    if any(r["method"] == "perfcast_x" for r in rows if "method" in r):
        METHODS.append("perfcast_x")  # run_quality.sh PC_EXTRA_FLAGS (layout only)
    get = {(r["seed"], r["collection"], r["method"], r["split"]): r for r in rows}

    def fmt(v, d=3):
        return "—" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.{d}f}"

    for split in ("valid", "holdout"):
        if not any(r["split"] == split for r in rows):
            continue
        for key, what in (("metric", "metric (tile: tile score; layout: Kendall tau)"),
                          ("opa", "ordered-pair accuracy")):
            print(f"\n### {split}: {what}, mean ± std [95% t-interval of the mean] over "
                  f"seeds {','.join(map(str, seeds))}\n")
            print("| collection | " + " | ".join(LABEL[m] for m in METHODS) + " |")
            print("|---|" + "---|" * len(METHODS))
            for c in COLLECTIONS:
                cells = []
                for m in METHODS:
                    v = [get[(s, c, m, split)][key] for s in seeds if (s, c, m, split) in get]
                    if not v:
                        cells.append("—")
                        continue
                    mean, sd, (lo, hi) = seed_interval(v)
                    best = max(METHODS, key=lambda mm: np.mean(
                        [get[(s, c, mm, split)][key] for s in seeds if (s, c, mm, split) in get]
                        or [-math.inf]))
                    cell = f"{mean:.3f} ± {fmt(sd)} [{fmt(lo)}, {fmt(hi)}]"
                    cells.append(f"**{cell}**" if m == best else cell)
                print(f"| {c} | " + " | ".join(cells) + " |")
            print("\nper seed (" + ", ".join(f"s{s}" for s in seeds) + "; [95% bootstrap "
                  "interval over graphs] where perfcast eval scored it):\n")
            print("| collection | " + " | ".join(LABEL[m] for m in METHODS) + " |")
            print("|---|" + "---|" * len(METHODS))

            def one(r):
                ci = r.get(key + "_ci")
                if not ci or None in ci:
                    return fmt(r[key])
                return f"{fmt(r[key])} [{fmt(ci[0])}, {fmt(ci[1])}]"

            for c in COLLECTIONS:
                cells = [" / ".join(one(get[(s, c, m, split)]) if (s, c, m, split) in get
                                    else "—" for s in seeds) for m in METHODS]
                print(f"| {c} | " + " | ".join(cells) + " |")

    print("\n### chosen heuristic (feature, sign, train metric) and trainer epochs "
          "(best/run) per seed\n")
    print("| collection | heuristic | torch twin epochs | perfcast epochs |")
    print("|---|---|---|---|")
    for c in COLLECTIONS:
        h = []
        for s in seeds:
            r = get.get((s, c, "heuristic", "valid"))
            h.append(f"{r['feature']}{r['sign']} ({r['train_metric']:.3f})" if r else "—")
        ep = {}
        for m in ("torch", "perfcast"):
            ep[m] = "; ".join(f"{get[(s, c, m, 'valid')].get('best_epoch')}/"
                               f"{get[(s, c, m, 'valid')].get('epochs_run')}"
                               if (s, c, m, "valid") in get else "—" for s in seeds)
        print(f"| {c} | {'; '.join(h)} | {ep['torch']} | {ep['perfcast']} |")
    loads = [r["load"] for r in rows if "load" in r]
    if loads:
        print(f"\n1-min load average at the end of the timed runs: min {min(loads):.2f}, "
              f"median {float(np.median(loads)):.2f}, max {max(loads):.2f}")


if __name__ == "__main__":
    main()
