#!/usr/bin/env bash
# `make soak`: the seeded random-kill soak of every job it covers, SEEDS seeds each (default 10),
# with 3 kills and 1% of messages dropped and 1% delayed. Prints one line per run and a summary
# per job; writes BUILD_DIR/soak/summary.tsv, and the whole output of a run that failed to
# BUILD_DIR/soak/JOB-SEED.log. Usage: scripts/soak.sh BUILD_DIR [SEEDS] [JOBS]
set -euo pipefail
build=${1:?usage: soak.sh BUILD_DIR [SEEDS]}
seeds=${2:-10}
jobs=${3:-wals word2vec moe estimator ctr serving online online-cluster}
bench="$build/apps/darcy-bench"
out="$build/soak"
mkdir -p "$out"
summary="$out/summary.tsv"
printf 'job\tseed\tcompleted\tkills\trestarts\trecover_p50_s\trecover_max_s\tlost_work\tquality_delta\tbit_equal\ttraining_kills\tahead_answers\tstale_answers\tstale_max_s\tcaught_up_s\n' >"$summary"
for job in $jobs; do
  for seed in $(seq 1 "$seeds"); do
    log="$out/$job-$seed.log"
    "$bench" soak --job "$job" --kills 3 --drop 0.01 --delay 0.01 --seed "$seed" \
      --dir "$out/$job-$seed" --quiet >"$log" 2>&1 || true
    line=$(tail -1 "$log")
    python3 - "$job" "$seed" "$line" >>"$summary" <<'PY'
import json, sys
job, seed, line = sys.argv[1], sys.argv[2], sys.argv[3]
try:
    m = json.loads(line)["metrics"]
except Exception:
    m = {"completed": 0}
print("\t".join([job, seed] + [str(m.get(k, "")) for k in
      ("completed", "kills", "restarts", "recover_p50_s", "recover_max_s", "lost_work",
       "quality_delta", "bit_equal", "training_kills", "ahead_answers", "stale_answers",
       "stale_max_s", "caught_up_s")]))
PY
    tail -1 "$summary"
    if grep -q '"completed":1' "$log"; then rm -f "$log"; fi
    rm -rf "$out/$job-$seed"
  done
done
python3 - "$summary" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
for job in sorted({x["job"] for x in rows}, reverse=True):
    r = [x for x in rows if x["job"] == job]
    done = [x for x in r if x["completed"] == "1"]
    p50 = [float(x["recover_p50_s"]) for x in done]
    worst = [float(x["recover_max_s"]) for x in done]
    deltas = [abs(float(x["quality_delta"])) for x in done]
    line = (f"{job}: completed {len(done)}/{len(r)}, kills {sum(int(x['kills'] or 0) for x in r)}, "
            f"restarts {sum(int(x['restarts'] or 0) for x in r)}, "
            f"lost work {sum(int(x['lost_work'] or 0) for x in r)}, "
            f"recover p50 {statistics.median(p50) if p50 else float('nan'):.3f} s "
            f"(max {max(worst) if worst else float('nan'):.3f} s), "
            f"max |quality_delta| {max(deltas) if deltas else float('nan'):.4f}")
    if job not in ("estimator", "ctr", "online", "online-cluster"):  # asynchronous: not byte for byte
        line += f", bit_equal {sum(x['bit_equal'] == '1' for x in done)}/{len(r)}"
    if job in ("online", "online-cluster"):
        line += (f", training kills {sum(int(x['training_kills'] or 0) for x in r)}, "
                 f"answers ahead {sum(int(x['ahead_answers'] or 0) for x in r)}, "
                 f"stale {sum(int(x['stale_answers'] or 0) for x in r)}, "
                 f"lag max {max([float(x['stale_max_s']) for x in done] or [float('nan')]):.2f} s, "
                 f"caught up max {max([float(x['caught_up_s']) for x in done] or [float('nan')]):.2f} s")
    print(line)
PY
