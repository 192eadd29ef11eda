"""Generated docs keep what other scripts wrote into them, and cite nothing outside the checkout."""

from pathlib import Path

from benchmarks.offline_suite import kept_blocks
from benchmarks.public_folders import BEGIN as PUBLIC_BEGIN
from benchmarks.search_headroom import BEGIN as HEADROOM_BEGIN
from benchmarks.suite_summary import rerunnable

REPO = Path(__file__).resolve().parents[2]


def test_the_offline_suite_keeps_every_block_after_its_own_part_and_the_prose_between():
    text = ("# Results\n\nits own part\n\n<!-- seeds -->\nseeds\n<!-- /seeds -->\n\n## Why the modes tie\n\nprose\n\n"
            f"{HEADROOM_BEGIN}\nheadroom\n<!-- headroom:end -->\n\n{PUBLIC_BEGIN}\nfolders\n<!-- public-folders:end -->\n")
    kept = kept_blocks(text)
    assert "its own part" not in kept
    assert all(part in kept for part in ("seeds", "## Why the modes tie", "prose", "headroom", "folders"))


def test_a_shown_command_has_relative_run_folders_and_no_outside_outputs(tmp_path):
    command = (f"python benchmarks/offline_suite.py --out {tmp_path}/runs/a --expert-run /elsewhere/runs/expert "
               "--results /tmp/k/a0.md --readme /tmp/k/r.md --seed 1")
    assert rerunnable(command, tmp_path) == ("python benchmarks/offline_suite.py --out runs/a --expert-run "
                                             "runs/expert --seed 1")


def test_no_doc_or_config_cites_a_file_outside_the_repository():
    outside = ("../shared", "DESIGN §", "DESIGN.md", "HARDWARE.md", "NPUKERNELBENCH.md", "/tmp/", "/work/")
    files = [*REPO.glob("docs/**/*.md"), *REPO.glob("docs/data/**/*.json"), *REPO.glob("configs/*.toml"),
             *REPO.glob("sage/npu/presets/*.toml"), REPO / "README.md"]
    cited = [(f.relative_to(REPO), c) for f in files for c in outside if c in f.read_text(encoding="utf-8")]
    assert not cited
