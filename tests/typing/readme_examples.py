"""The README's examples, as a user with ``mypy --strict`` writes them
(annotated functions): tests/test_typing.py checks this file with mypy."""
import math

import numpy as np
import numpy.typing as npt

import numbavec
from numbavec import float32, guvectorize, jit, vectorize


@vectorize([float32(float32, float32, float32)], target="cpu")
def saxpy(a: float, x: float, y: float) -> float:
    return a * x + y


@vectorize(["float64(float64, float64)", "float32(float32, float32)"])
def hypot(x: float, y: float) -> float:
    x = abs(x)
    y = abs(y)
    t = min(x, y)
    x = max(x, y)
    t = t / x
    return x * math.sqrt(1 + t * t)


@vectorize
def lazy_add(x: float, y: float) -> float:
    return x + y


@vectorize(["float32(float32, float32)"], target="cuda")
def cuda_add(x: float, y: float) -> float:
    return x + y


@jit
def clamp(v: float, lo: float, hi: float) -> float:
    return min(max(v, lo), hi)


@guvectorize(["void(float64[:], float64[:], float64[:], float64)"], "(n),(n),(n),()")
def triad(lhs: npt.NDArray[np.float64], rhs1: npt.NDArray[np.float64],
          rhs2: npt.NDArray[np.float64], alpha: float) -> None:
    for i in range(len(lhs)):
        lhs[i] = clamp(rhs1[i] + alpha * rhs2[i], -1.0, 1.0)


@guvectorize("(n)->()")
def total(a: npt.NDArray[np.float64], out: npt.NDArray[np.float64]) -> None:
    out[0] = a.sum()


@guvectorize(["void(float32[:], float32[:], float32[:])"], "(n),(n)->()", target="cuda")
def dot(a: npt.NDArray[np.float32], b: npt.NDArray[np.float32],
        out: npt.NDArray[np.float32]) -> None:
    s = 0.0
    for i in range(a.shape[0]):
        s += a[i] * b[i]
    out[0] = s


def main() -> None:
    x = np.arange(1_000_000, dtype=np.float32)
    y = np.ones_like(x)
    out = saxpy(np.float32(2.0), x, y)
    saxpy(2.0, x, y, out=y)
    ufunc: np.ufunc = saxpy                 # a real numpy.ufunc, for the type checker too
    print(out[:3], ufunc.nin, saxpy.types)
    print(hypot(np.array([3, 5], np.float32), np.array([4, 12], np.float32)), hypot.py_func(3.0, 4.0))
    hypot.inspect_types()
    ir: str = hypot.inspect_llvm("float32(float32, float32)")
    print(len(ir), hypot.reduce(np.arange(4.0)))
    lazy_add.add("float32(float32, float32)")
    print(lazy_add(x, 1.0)[:2], lazy_add.ufunc is lazy_add)
    lhs = np.zeros(4)
    triad(lhs, np.ones(4), np.ones(4), 0.5)
    print(lhs, total(np.ones((2, 3))))
    if numbavec.cuda.is_available():
        d = numbavec.cuda.to_device(x)
        host: npt.NDArray[np.float32] = cuda_add(d, d).copy_to_host()
        print(host[:2], dot(x.reshape(1000, 1000), x.reshape(1000, 1000)))
    print(numbavec.get_num_threads(), numbavec.__version__)


if __name__ == "__main__":
    main()


def compile_seconds() -> float:
    """Compile records, typed (numbavec.events)."""
    with numbavec.events.recording() as records:
        hypot.inspect_llvm("float32(float32, float32)")
    stages: dict[str, float] = records[0].stages if records else {}
    return hypot.stats.total + sum(stages.values())
