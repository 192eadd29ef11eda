"""The README's offline-suite block is rewritten between its markers and nowhere else."""

from benchmarks.suite_summary import BEGIN, END, write_block


def test_the_block_between_the_markers_is_replaced(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text(f"# title\n\nbefore\n{BEGIN}\nold figures 81/102\n{END}\n\nafter\n")
    assert write_block(readme, "new figures 84/102")
    assert readme.read_text() == f"# title\n\nbefore\n{BEGIN}\nnew figures 84/102\n{END}\n\nafter\n"
    assert write_block(readme, "again")                       # the markers survive a rewrite
    assert "again" in readme.read_text() and "84/102" not in readme.read_text()


def test_a_readme_without_markers_is_left_alone(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text(f"text\n{END}\n{BEGIN}\n")               # out of order: not a block
    assert not write_block(readme, "figures")
    assert readme.read_text() == f"text\n{END}\n{BEGIN}\n"
