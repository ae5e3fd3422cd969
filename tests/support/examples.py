"""The kernels of ../shared/EXAMPLES.md, exactly as written there, for every
test file that checks them (one copy: a kernel compiles from this file's
source, so its globals -- SQRT_2PI, polar_to_cartesian -- resolve here).

The benchmarks keep their own copies: they run without the test suite.
"""
import math

import numpy as np

from numbavec import cuda


# ---- sections 1 and 5: saxpy, add ----

def saxpy(a, x, y):
    return a * x + y


def add_ufunc(x, y):
    return x + y


# ---- section 3: a global constant and math functions ----

SQRT_2PI = np.float32((2*math.pi)**0.5)      # frozen into the kernel as a float32 constant


def gaussian_pdf(x, mean, sigma):
    '''Compute the value of a Gaussian probability density function at x with given mean and sigma.'''
    return math.exp(-0.5 * ((x - mean) / sigma)**2) / (sigma * SQRT_2PI)


# ---- section 4: a device function returning a tuple ----

@cuda.jit(device=True)            # same as numbavec.jit
def polar_to_cartesian(rho, theta):
    x = rho * math.cos(theta)
    y = rho * math.sin(theta)
    return x, y


def polar_distance(rho1, theta1, rho2, theta2):
    x1, y1 = polar_to_cartesian(rho1, theta1)
    x2, y2 = polar_to_cartesian(rho2, theta2)
    return ((x1 - x2)**2 + (y1 - y2)**2)**0.5


# ---- section 6: complex64 product ----

def vmult(a, b):
    """Element complex64 multiplication"""
    return a * b


# ---- section 7: STREAM kernels for guvectorize (they write into lhs) ----

def copy(lhs, rhs):
    for i in range(len(lhs)):
        lhs[i] = rhs[i]


def scale(lhs, rhs, alpha):
    for i in range(len(lhs)):
        lhs[i] = alpha * rhs[i]


def add(lhs, rhs1, rhs2):
    for i in range(len(lhs)):
        lhs[i] = rhs1[i] + rhs2[i]


def triad(lhs, rhs1, rhs2, alpha):
    for i in range(len(lhs)):
        lhs[i] = rhs1[i] + alpha * rhs2[i]
