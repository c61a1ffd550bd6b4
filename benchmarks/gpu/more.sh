#!/usr/bin/env bash
# The GPU check's second call (benchmarks/gpu/run.sh's sweep ran out of its deadline before
# processes at 128 workers): what limits the server at 32 workers, measured (inflight x
# max_batch), then one CUDA context per worker at 64 workers beside 4 (GPU_THRASH's cells).
# The first call's limits run is carried in .gpuruns so efficiency_pct is computed.
set -u
here=$(cd "$(dirname "$0")/../.." && pwd)
cd "$here"
out=${1:?usage: more.sh OUTDIR}
mkdir -p "$out/logs" && out=$(cd "$out" && pwd)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH="$here:/tmp/site" PATH="/tmp/site/bin:$PATH" PYTHONFAULTHANDLER=1 PYTHONUNBUFFERED=1
cp -r .gpuruns "$out/runs"
t0=$SECONDS
timeout -k 10 100 harness sweep benchmarks/gpu/sweep.toml --label gpu-server-knobs --backend server --workers 32 \
    --set inflight=2,4 --set max_batch=256,512 --set blocks=10 --set channels=128 --duration 8 --steady-max 4 \
    --out "$out/runs" --quiet >"$out/logs/knobs.log" 2>&1
printf 'server-knobs\t%s\t%s\n' $? $((SECONDS - t0)) >>"$out/steps.tsv"
t0=$SECONDS
timeout -k 10 185 harness sweep benchmarks/gpu/sweep.toml --label gpu-contexts --backend processes --workers 4,64 \
    --set blocks=10 --set channels=128 --duration 8 --steady-max 4 --out "$out/runs" --quiet >"$out/logs/contexts.log" 2>&1
printf 'contexts\t%s\t%s\n' $? $((SECONDS - t0)) >>"$out/steps.tsv"
python3 benchmarks/gpu/summarize.py "$out" >"$out/logs/summarize.log" 2>&1 || tail "$out/logs/summarize.log"
tar -czf "$out/runs.tgz" -C "$out" runs logs && rm -rf "$out/runs" "$out/logs"
cat "$out/steps.tsv"
