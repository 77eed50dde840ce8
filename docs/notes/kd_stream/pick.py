"""Round 1 rows -> the variants worth re-timing (printed comma-separated) and a summary (stderr)."""
import json, sys, math
import pandas as pd
d = pd.DataFrame([json.loads(l) for l in open(sys.argv[1])])
d = d[d["round"] == "1"]
bad = d[d.us.isna() & ~d.kernel.isin(["K0", "K0L"])]
if len(bad): print("failed:", bad[["kernel", "shape", "M", "err"]].to_string(), file=sys.stderr)
d = d.dropna(subset=["us"])
t = d.pivot_table(index=["shape", "M"], columns="kernel", values="us")
vendor = t[[c for c in ("K0", "K0L") if c in t]].min(axis=1)
base = "tx16tg8f4m2i49152s16h0"
var = [c for c in t.columns if c not in ("K0", "K0L")]
rows = []
for v in var:
    r = t[v] / t[base]
    sp = vendor / t[v]
    lo = r[r.index.get_level_values("M") <= 2]; hi = r[r.index.get_level_values("M") > 2]
    rows.append(dict(v=v, gm_m12=math.exp(pd.Series(lo).apply(math.log).mean()),
                     gm_m48=math.exp(pd.Series(hi).apply(math.log).mean()), worst=r.max(),
                     sp_4096=sp.loc[("llama3-8b.o", 1)], min_sp=sp.min()))
s = pd.DataFrame(rows).sort_values("gm_m12")
print(s.round(3).to_string(), file=sys.stderr)
print((vendor / t[base]).unstack("M").round(3).to_string(), file=sys.stderr)
pick = list(dict.fromkeys([base] + s.v.head(5).tolist() + s.sort_values("sp_4096", ascending=False).v.head(3).tolist()))
print(",".join(pick))
