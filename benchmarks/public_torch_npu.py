"""Status of every public NPUKernelBench file that imports torch_npu: loaded with the CPU
stand-ins (sage.bench.torch_npu_standin) and its reference timed on cases 0 and 1, one child
process per file. Needs a MultiKernelBench checkout (default /tmp/mkb; not vendored).

    python benchmarks/public_torch_npu.py [/path/to/MultiKernelBench]
"""
import subprocess, sys, pathlib
root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "/tmp/mkb") / "reference"
files = sorted(p for p in root.glob("npukernelbench_level*/*.py") if "torch_npu" in p.read_text())
code = '''
import sys
from sage.bench.tasks import load_task, ReferenceUnavailable, TaskLoadError
from sage.bench.reference_run import measure_reference
try:
    t = load_task(sys.argv[1])
except (ReferenceUnavailable, TaskLoadError) as e:
    print(type(e).__name__, str(e).split(": ", 1)[-1][:150]); sys.exit()
r = measure_reference(t, "ascend910b2", [0, 1])
errs = sum(1 for c in r.cases if c.reference_error)
print(r.status, f"cases ok {len(r.cases) - errs}/{len(r.cases)}", [o["op"] for c in r.cases if c.breakdown for o in c.breakdown["ops"]][:1])
'''
n_ok = 0
for f in files:
    out = subprocess.run([sys.executable, "-c", code, str(f)], capture_output=True, text=True, timeout=1200)
    line = out.stdout.strip() or ("CRASH " + out.stderr.strip()[-200:])
    n_ok += line.startswith("reference_ok")
    print(f"{f.parent.name}/{f.name}: {line}", flush=True)
print(f"{n_ok}/{len(files)} files reference_ok")
