"""
Tables of bench/run_ablation14.sh: per collection and split, each method's metric
(tile: tile score = 1 - slowdown@5 style; layout: Kendall tau) as mean ± std over
seeds, the 95% t-interval of the mean, the per-seed values, and the difference to
"defaults" paired by seed (mean and 95% t-interval), so a gain is read against
the seed spread.

  ablation14_table.py RESULTS.jsonl
"""
import collections
import json
import math
import sys

import scipy.stats


def metric(row):
    if "eval" in row:
        return float(row["eval"]["metric"])
    return float(row["metric"])  # xgb_baseline.py rows


def interval(v):
    n = len(v)
    m = sum(v) / n
    if n < 2:
        return m, float("nan"), (float("nan"), float("nan"))
    sd = math.sqrt(sum((x - m) ** 2 for x in v) / (n - 1))
    h = scipy.stats.t.ppf(0.975, n - 1) * sd / math.sqrt(n)
    return m, sd, (m - h, m + h)


def main():
    rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
    by = collections.defaultdict(dict)  # (coll, split) -> method -> seed -> metric
    for r in rows:
        by[(r["collection"], r["split"])].setdefault(r["method"], {})[r["seed"]] = metric(r)
    for (coll, split) in sorted(by):
        meths = by[(coll, split)]
        print(f"\n#### {coll}, {split} (tile: tile score; layout: Kendall tau)\n")
        print("| method | mean ± std | 95% CI of mean | per seed | vs defaults (paired) |")
        print("|---|---|---|---|---|")
        base = meths.get("defaults", {})
        order = sorted(meths, key=lambda k: (k != "defaults", -interval(list(meths[k].values()))[0]))
        for k in order:
            seeds = sorted(meths[k])
            v = [meths[k][s] for s in seeds]
            m, sd, (lo, hi) = interval(v)
            per = " / ".join(f"{x:.3f}" for x in v)
            d = [meths[k][s] - base[s] for s in seeds if s in base]
            if k != "defaults" and len(d) >= 2:
                dm, _, (dl, dh) = interval(d)
                vs = f"{dm:+.3f} [{dl:+.3f}, {dh:+.3f}]"
            else:
                vs = "—"
            print(f"| {k} | {m:.3f} ± {sd:.3f} | [{lo:.3f}, {hi:.3f}] | {per} | {vs} |")


if __name__ == "__main__":
    main()
