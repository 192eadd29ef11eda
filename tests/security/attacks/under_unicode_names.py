# class: underscore shadowing
# tries: mathematical-alphabet look-alikes of forbidden builtins (NFKC folds 𝐠𝐞𝐭𝐚𝐭𝐭𝐫 to getattr at parse time)
# expect: refused KernelRuntimeError

from sage.npu.ascendc import *


def forward(x, canary, port):
    name = chr(95) + chr(95) + "class" + chr(95) + chr(95)
    print(𝐠𝐞𝐭𝐚𝐭𝐭𝐫(x, name))
    return empty_like(x)
