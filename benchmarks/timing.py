"""What the benchmarks share: the best-of-N time of a call.

A module beside the scripts (each puts benchmarks/ on sys.path by running
from it), so that every script times the same way: one call first, which
pays for first touches and lazy compilation, then the fastest of `repeat`.
"""
import math
import time


def best(fn, repeat):
    """Seconds: the fastest of `repeat` calls of fn, after one call more."""
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def geomean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values))
