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


def best_interleaved(fns, repeat):
    """Seconds: the fastest of `repeat` calls of each of fns, their calls
    alternating (after one call of each), so that a drift of the machine
    (a neighbour's load, the clock) falls on all of them alike: kernels
    bound by memory time within a few percent of each other, and timing one
    after the other would give that order's drift as their ratio."""
    for fn in fns:
        fn()
    best = [math.inf] * len(fns)
    for _ in range(repeat):
        for i, fn in enumerate(fns):
            t0 = time.perf_counter()
            fn()
            best[i] = min(best[i], time.perf_counter() - t0)
    return best


def geomean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values))
