"""K15's copy variants: the predictions of copy_addr.sh beside the round-1 times of the sweep
(study.sweep_cuda --kernel K15 --only A_KL,COPY_ADDR,PAD,MAXNREG): their rank correlation, the
error of the predicted times, and each variant's change against K12's tile defaults, predicted and
measured (the fastest eight and the slowest four).

    python docs/notes/k15/compare_copy_addr.py PREDICTED.txt SWEEP.csv"""
import csv
import re
import statistics
import sys

BASE = ("0", "0", "4", "0")  # A_KL, COPY_ADDR, PAD, MAXNREG of K12's tile


def ranks(values):
    order = sorted(range(len(values)), key=lambda i: values[i])
    out = [0] * len(values)
    for rank, i in enumerate(order):
        out[i] = rank
    return out


def main(predicted: str, sweep: str) -> None:
    pred = {}
    for line in open(predicted):
        m = re.match(r"(\d+) (\d) (\d) (\d+) \|.*?\| k15 at \S+: ([\d.]+) ms", line)
        if m:
            pred[m.groups()[:4]] = float(m.group(5))
    meas = {(r["A_KL"], r["COPY_ADDR"], r["PAD"], r["MAXNREG"]): float(r["ms"])
            for r in csv.DictReader(open(sweep)) if r["round"] == "1" and r["status"] == "ok"}
    keys = sorted(set(pred) & set(meas))
    n = len(keys)
    rp, rm = ranks([pred[k] for k in keys]), ranks([meas[k] for k in keys])
    rho = 1 - 6 * sum((a - b) ** 2 for a, b in zip(rp, rm)) / (n * (n * n - 1))
    print(f"{n} variants; Spearman rank correlation of predicted and measured ms: {rho:.2f}")
    errs = [pred[k] / meas[k] - 1 for k in keys]
    print(f"error of predicted ms: mean {100 * statistics.mean(errs):+.1f}%, "
          f"mean |error| {100 * statistics.mean(map(abs, errs)):.1f}%")
    dp = [pred[k] / pred[BASE] - 1 for k in keys]
    dm = [meas[k] / meas[BASE] - 1 for k in keys]
    agree = sum((a > 0) == (b > 0) for a, b in zip(dp, dm))
    print(f"slower than the base: predicted {sum(x > 0 for x in dp)}, measured {sum(x > 0 for x in dm)}; "
          f"the sign agrees for {agree} of {n}")
    print("A_KL COPY_ADDR PAD MAXNREG | predicted vs base | measured vs base")
    by_time = sorted(keys, key=lambda k: meas[k])
    for k in by_time[:8] + by_time[-4:]:
        change_p, change_m = 100 * (pred[k] / pred[BASE] - 1), 100 * (meas[k] / meas[BASE] - 1)
        print(" ".join(k), f"| {change_p:+.1f}% | {change_m:+.1f}%")


if __name__ == "__main__":
    main(*sys.argv[1:3])
