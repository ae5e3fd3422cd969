"""Device functions living in a module of their own (test_devicefuncs.py):
their globals must resolve here, not in the calling kernel's module."""
import math

import numbavec

OFFSET = 100.0          # test_devicefuncs.py defines a different OFFSET
scale = 3


@numbavec.jit
def shifted(x):
    return x * scale + OFFSET


@numbavec.jit
def hyp(a, b):
    return math.sqrt(a * a + b * b)


@numbavec.jit
def bad_helper(x):
    return x.shape
