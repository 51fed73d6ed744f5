#!/usr/bin/env bash
# First contact with a lent GPU machine: run the diagnostics folder on the real cards and keep
# every raw reading, so that the thresholds in diagnostics/gpus.json can be set from it.
#
# usage: bench/gpu_first_contact.sh            (run from anywhere; builds and installs nothing)
#   OUT     output folder (default: ./gpu-first-contact-<UTC time>)
#   PYTHON  the interpreter with a CUDA or ROCm build of torch (default: python3)
#   BUDGET  seconds for the whole call (default: 470, under the 8 minutes a lent machine gives)
#
# Writes into OUT: raw/*.txt (each tool's output) with raw/*.rc (its exit code), torch.json,
# diagnostics.txt (the console report), report.json and report.html, and table.md, printed last.
set -u

here="$(cd "$(dirname "$0")/.." && pwd)"
out="${OUT:-$PWD/gpu-first-contact-$(date -u +%Y%m%dT%H%M%SZ)}"
python="${PYTHON:-python3}"
budget="${BUDGET:-470}"
mkdir -p "$out/raw" "$out/results"

left() { echo $((budget - SECONDS)); }

# capture NAME LIMIT COMMAND...: the command's output in raw/NAME.txt, its exit code in raw/NAME.rc
capture() {
    local name="$1" limit="$2"
    shift 2
    if [ "$(left)" -le 5 ]; then
        echo "skipped: out of time" >"$out/raw/$name.txt"
        echo 124 >"$out/raw/$name.rc"
        return
    fi
    [ "$limit" -gt "$(left)" ] && limit="$(left)"
    timeout "$limit" "$@" >"$out/raw/$name.txt" 2>&1
    echo "$?" >"$out/raw/$name.rc"
}

if command -v nvidia-smi >/dev/null 2>&1; then
    start=$(date +%s%N)
    capture nvidia-smi 60 nvidia-smi
    echo "nvidia-smi start-up and first answer: $((($(date +%s%N) - start) / 1000000)) ms" >"$out/raw/nvidia-smi-startup.txt"
    capture nvidia-smi-L 30 nvidia-smi -L
    capture query-gpu 30 nvidia-smi --format=csv \
        --query-gpu=index,uuid,name,driver_version,compute_mode,mig.mode.current,memory.total,memory.used,utilization.gpu,power.limit,enforced.power.limit,power.default_limit,clocks.max.sm,clocks.sm,pcie.link.gen.current,pcie.link.gen.max,pcie.link.width.current,pcie.link.width.max,clocks_event_reasons.active
    capture query-health 30 nvidia-smi --format=csv \
        --query-gpu=index,uuid,ecc.errors.uncorrected.volatile.total,retired_pages.pending,remapped_rows.pending,remapped_rows.failure
    capture query-app-clocks 30 nvidia-smi --format=csv --query-gpu=index,clocks.applications.graphics,clocks.default_applications.graphics
    capture query-remapped-rows 30 nvidia-smi --format=csv \
        --query-remapped-rows=gpu_uuid,remapped_rows.correctable,remapped_rows.uncorrectable,remapped_rows.pending,remapped_rows.failure
    capture topo-m 30 nvidia-smi topo -m
    capture nvlink-status 30 nvidia-smi nvlink --status
    capture q-ecc 60 nvidia-smi -q -d ECC,PAGE_RETIREMENT,ROW_REMAPPER
    capture q-performance 60 nvidia-smi -q -d PERFORMANCE,CLOCK,POWER
    capture help-query-gpu 30 nvidia-smi --help-query-gpu
fi
if command -v rocm-smi >/dev/null 2>&1; then
    capture rocm-smi 60 rocm-smi
    capture rocm-showtopo 60 rocm-smi --showtopo
    capture rocm-showpids 30 rocm-smi --showpids
fi
if command -v amd-smi >/dev/null 2>&1; then
    capture amd-smi-static 60 amd-smi static
    capture amd-smi-topology 60 amd-smi topology
fi

capture torch 120 "$python" -c '
import json, torch
info = {"version": torch.__version__, "cuda": torch.version.cuda, "hip": getattr(torch.version, "hip", None),
        "available": torch.cuda.is_available(), "devices": []}
for index in range(torch.cuda.device_count() if torch.cuda.is_available() else 0):
    props = torch.cuda.get_device_properties(index)
    info["devices"].append({"name": props.name, "total_memory": props.total_memory, "capability": [props.major, props.minor],
                            "uuid": str(getattr(props, "uuid", "")), "arch": getattr(props, "gcnArchName", None)})
print(json.dumps(info, indent=1))'
cp "$out/raw/torch.txt" "$out/torch.json"
backend="$("$python" -c 'import torch; print("rocm" if getattr(torch.version, "hip", None) else "cuda")' 2>/dev/null || echo cuda)"

limit="$(($(left) - 20))"
if [ "$limit" -gt 30 ]; then
    timeout "$limit" "$python" "$here/diagnostics/run.py" --backend "$backend" --keep-going \
        --json "$out/report.json" --report "$out/report.html" --results "$out/results" >"$out/diagnostics.txt" 2>&1
    echo "$?" >"$out/raw/diagnostics.rc"
else
    echo "skipped: out of time" >"$out/diagnostics.txt"
fi
rm -rf "$out/results"

# The short table, last: each stage's verdict and the figures the thresholds are set from.
"$python" - "$out" <<'PY' >"$out/table.md" 2>&1
import json, os, sys

out = sys.argv[1]
print("| stage | status | summary |\n|---|---|---|")
try:
    with open(os.path.join(out, "report.json"), encoding="utf-8") as handle:
        report = json.load(handle)
except (OSError, ValueError) as error:
    print(f"| diagnostics | none | no report.json: {error} (see diagnostics.txt) |")
    sys.exit(0)
for stage in report.get("stages", []):
    text = stage.get("summary") or (stage.get("messages") or [""])[0]
    print(f"| {stage['name']} | {stage['status']} | {text.replace('|', '/')[:120]} |")
print()
keys = ("gemm_tflops", "gemm_fraction", "bandwidth_tbs", "bandwidth_fraction", "host_to_device_gb_s", "pcie_link", "clock_samples",
        "clock_event_reasons", "samples", "bus_bandwidth_gb_s", "bus_bandwidth_expected_gb_s", "bus_bandwidth_over", "topology", "peer_link_active_gb_s")
print("| figure | value |\n|---|---|")
for stage in report.get("stages", []):
    for key in keys:
        if key in stage.get("values", {}):
            print(f"| {stage['name']}.{key} | {json.dumps(stage['values'][key])[:160]} |")
PY
echo "raw readings and the report: $out"
cat "$out/table.md"
