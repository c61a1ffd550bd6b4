#!/usr/bin/env bash
# The GPU check in one command (shared/GPU.md), for a GPU machine with no network:
#
#   benchmarks/gpu/run.sh OUTDIR             on the GPU (about 8 minutes)
#   benchmarks/gpu/run.sh OUTDIR --rehearse  the same steps on the CPU with tiny sizes (about 2 minutes)
#
# 1. installs what a CUDA image lacks from wheels carried in .whl/ (if there), without the network;
# 2. the tests marked cuda (tests/gpu);
# 3. `harness limits` of the self-play net's forward pass per batch size (10 x 128 net);
# 4. the self-play sweep (benchmarks/gpu/sweep.toml): processes against server at 4-128 workers;
#    (among them harness watch over a program whose workers drop the device: NET_OFF_DEVICE, and its control);
# 5. OUTDIR/summary.md (benchmarks/gpu/summarize.py), the run directories as OUTDIR/runs.tgz.
#
# Every step runs under `timeout` within one overall deadline (GPU_CHECK_DEADLINE_S, default
# 500 s), so a hang costs its step, not the check: a hung cell leaves its py-spy stack dump in
# its run directory, a Python crash its faulthandler trace in the step's log.
set -u
here=$(cd "$(dirname "$0")/../.." && pwd)
cd "$here"
out=${1:?usage: run.sh OUTDIR [--rehearse]}
rehearse=0
[ "${2:-}" = "--rehearse" ] && rehearse=1
mkdir -p "$out/logs" "$out/runs"
out=$(cd "$out" && pwd)
deadline=$((SECONDS + ${GPU_CHECK_DEADLINE_S:-500}))
export PYTHONFAULTHANDLER=1 PYTHONUNBUFFERED=1 HARNESS_GPU_CHECK_OUT="$out/runs"  # tests/gpu keep their watch runs there

if ls .whl/*.whl >/dev/null 2>&1; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
        >"$out/logs/install.log" 2>&1 || { echo "wheel install failed"; tail "$out/logs/install.log"; exit 1; }
    export PYTHONPATH="$here:/tmp/site${PYTHONPATH:+:$PYTHONPATH}" PATH="/tmp/site/bin:$PATH"
fi

step() {  # step NAME SECONDS COMMAND...: run within the deadline, log to logs/NAME.log, note exit and time
    local name=$1 limit=$2
    shift 2
    local left=$((deadline - SECONDS))
    if [ "$left" -lt 20 ]; then
        printf '%s\tskipped (deadline)\t0\n' "$name" >>"$out/steps.tsv"
        return
    fi
    [ "$limit" -gt "$left" ] && limit=$left
    local t0=$SECONDS
    timeout -k 10 "$limit" "$@" >"$out/logs/$name.log" 2>&1
    local rc=$?
    printf '%s\t%s\t%s\n' "$name" "$rc" "$((SECONDS - t0))" >>"$out/steps.tsv"
    echo "== $name: exit $rc after $((SECONDS - t0)) s"
    tail -n 4 "$out/logs/$name.log"
}

{
    date -u
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 || echo "no nvidia-smi"
    python3 -c "import sys, torch; print('python', sys.version.split()[0], 'torch', torch.__version__, 'cuda', torch.version.cuda, 'available', torch.cuda.is_available())"
    python3 -c "import pynvml; pynvml.nvmlInit(); print('nvml driver', pynvml.nvmlSystemGetDriverVersion())" 2>&1 | tail -1
    nproc
    free -g | head -2
    python3 -c "import harness; print('harness from', harness.__file__)"
    git rev-parse --short HEAD 2>/dev/null
} >"$out/env.txt" 2>&1
cat "$out/env.txt"

if [ "$rehearse" = 1 ]; then
    device=cpu
    net=(--set blocks=1 --set channels=8)
    sweep=(--set device=cpu --set simulations=16 --workers 2,4 --duration 3 --steady-max 2)
    sizes=1,8,64
else
    device=cuda
    net=(--set blocks=10 --set channels=128)
    sweep=()
    sizes=1,16,64,128,256,512
fi

step tests-cuda 150 python3 -m pytest -m cuda tests/gpu -q -p no:cacheprovider -rA
step limits 150 harness limits --parts selfplay.forward --device "$device" "${net[@]}" --sizes "$sizes" \
    --pyperf-args "--processes 2 --values 3 --warmups 1 --loops 20" --out "$out/runs"
step sweep 330 harness sweep benchmarks/gpu/sweep.toml --out "$out/runs" "${sweep[@]}" "${net[@]}" --quiet

python3 benchmarks/gpu/summarize.py "$out" >"$out/logs/summarize.log" 2>&1 || tail "$out/logs/summarize.log"
tar -czf "$out/runs.tgz" -C "$out" runs logs && rm -rf "$out/runs" "$out/logs"
leftover=$(ps -eo pid,stat,cmd | grep -F -e "$out" -e net_device.py | grep -v -e grep -e run.sh || true)
[ -n "$leftover" ] && { echo "processes left:"; echo "$leftover"; } | tee -a "$out/summary.md"
echo "summary: $out/summary.md"
