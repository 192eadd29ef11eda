"""generic/unify.py: modules written once as a template over their variants compute what each
module computed on its own (checked by running both forms on the same inputs)."""

from __future__ import annotations

from sage.agent.compiler.generic.unify import unified

# A constant in one module, a tiling field in the other: Python makes a name assigned in a
# function local to all of it, so the shared function must bind it on both paths.
A = '''
ALIGN = 32
SCALE = 3

def body(x, tiling):
    y = x * SCALE
    y = y + ALIGN
    y = y - 1
    return y + tiling[0]

def launch(x, tiling):
    return body(x, tiling) * 2
'''
B = '''
ALIGN = 16

def body(x, tiling):
    SCALE = tiling[1]
    y = x * SCALE
    y = y + ALIGN
    y = y - 1
    y = y * 5
    return y + tiling[0]

def launch(x, tiling):
    return body(x, tiling) * 2
'''
OTHER = '''
def launch(x, tiling):
    return [x] * 7
'''


def _run(text: str, name: str, *args):
    scope: dict = {}
    exec(text, scope)
    return scope[name](*args)


def test_each_variant_of_the_template_computes_what_its_module_did():
    templates, made = unified([A, B], ["launch", "launch"])
    assert made[0] is not None and made[1] is not None and templates.count("def kernel_unified_") == 1
    for k, module in enumerate([A, B]):
        for x, tiling in [(1, (0, 2)), (-4, (10, 7))]:
            got = _run(templates + f"\nf = {made[k]}\n", "f", x, tiling)
            assert got == _run(module, "launch", x, tiling)


def test_modules_with_little_in_common_stay_apart():
    _, made = unified([A, OTHER], ["launch", "launch"])
    assert made == [None, None]


def test_tiling_fields_become_indices_into_the_tiling_tuple():
    mod = "def launch(x, tiling):\n    td0, td1 = tiling\n    return x * td1 + td0\n"
    other = "def launch(x, tiling):\n    td0, td1, td2 = tiling\n    return x * td2 + td0\n"
    templates, made = unified([mod, other], ["launch", "launch"])
    assert "tiling[" in templates and "td1" not in templates
    assert _run(templates + f"\nf = {made[0]}\n", "f", 3, (1, 2)) == 7
    assert _run(templates + f"\nf = {made[1]}\n", "f", 3, (1, 0, 5)) == 16
