"""benchmarks/eval_cpu.py's tree CPU: the CPU of processes that outlive the ones that started
them (the forkserver's workers, the sandbox zygote) is counted, not lost to init."""

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# A child that leaves behind an orphan burning about 0.5 s of CPU and exits at once.
ORPHAN_MAKER = textwrap.dedent("""
    import os, time
    if os.fork() == 0:
        end = time.process_time() + 0.5
        while time.process_time() < end:
            pass
        os._exit(0)
    os._exit(0)
""")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the child subreaper is Linux-only")
@pytest.mark.parametrize("subreaper", [True, False])
def test_the_orphans_cpu_is_counted_only_with_the_subreaper(subreaper):
    probe = textwrap.dedent(f"""
        import subprocess, sys
        from benchmarks.eval_cpu import become_subreaper, reap_descendants, tree_cpu
        if {subreaper}:
            assert become_subreaper()
        before = tree_cpu()
        subprocess.run([sys.executable, "-c", {ORPHAN_MAKER!r}], check=True)
        assert reap_descendants(deadline_s=30) == 0
        print(tree_cpu() - before)
    """)
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True)
    cpu = float(out.stdout)
    if subreaper:
        assert cpu >= 0.45
    else:
        assert cpu < 0.3
