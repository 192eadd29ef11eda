"""`make test` says which tests it skipped and how to run them."""

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_postgres_skips_are_counted_with_the_way_to_run_them():
    env = {k: v for k, v in os.environ.items() if k != "SAGE_TEST_POSTGRES_URL"}
    run = subprocess.run([sys.executable, "-m", "pytest", "tests/memory/test_versions.py", "-p", "no:cacheprovider"],
                         cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    # test_versions.py runs three tests on both backends: three PostgreSQL skips.
    assert "3 PostgreSQL test(s) skipped; to run them: start one with `bash .ci/start-postgres`" in run.stdout
    assert "SAGE_TEST_POSTGRES_URL=postgresql+psycopg://" in run.stdout
    assert run.stdout.count("SKIPPED [1] tests/memory/test_versions.py") == 3   # -rs (pyproject): the reasons
