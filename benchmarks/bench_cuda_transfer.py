"""CUDA transfers and launches through numbavec's C runtime (GPU only).

  python benchmarks/bench_cuda_transfer.py [--sizes 1,16,256] [--repeat 20]

Reports host-to-device and device-to-host bandwidth from pageable and from
pinned host memory (GB/s, best of --repeat, timed with CUDA events on one
stream, so the figure is the copy and not Python), and the cost of a minimal
kernel launch: cuLaunchKernel issued from C in a loop (driver cost alone),
and one launch per Python call through CudaModule.launch (our whole C path).
Compare the bandwidth with the device's PCIe/NVLink figure (H100 PCIe Gen5
x16: about 55 GB/s in practice; SXM over PCIe Gen5: similar).  Exits 0 with
a message when no GPU is usable.
"""
import argparse
import sys
import time

import numpy as np


def best_copy_gbs(copy, nbytes, repeat, stream, cuda):
    best = float("inf")
    for _ in range(repeat):
        e0, e1 = cuda.event(), cuda.event()
        e0.record(stream)
        copy()
        e1.record(stream)
        e1.synchronize()
        best = min(best, e0.elapsed_time(e1) / 1e3)
    return nbytes / best / 1e9


def bandwidth(cuda, mib, repeat):
    n = mib << 20
    s = cuda.stream()
    d = cuda.device_array(n, np.uint8, stream=s)
    pageable = np.ones(n, np.uint8)
    pinned = cuda.pinned_array(n, np.uint8)
    pinned[:] = 1
    rows = []
    for name, host in (("pageable", pageable), ("pinned", pinned)):
        h2d = best_copy_gbs(lambda: d.copy_to_device(host, stream=s), n, repeat, s, cuda)
        d2h = best_copy_gbs(lambda: d.copy_to_host(host, stream=s), n, repeat, s, cuda)
        rows.append((mib, name, h2d, d2h))
    s.synchronize()
    return rows


def noop(x):
    return x


def launch_cost(cuda, repeat):
    from numbavec import _core
    info = _core._cuda_detect()["devices"][0]
    arch = "sm_%d%d" % info["compute_capability"]
    ptx = cuda.compile_ptx(noop, "float32(float32)", arch=arch)
    mod = _core._cuda_load_ptx(ptx)
    x = cuda.device_array(1, np.float32)
    out = cuda.device_array(1, np.float32)
    s = cuda.stream()
    mod.launch("nv_noop_c64", 1, 32, x, 0, 0, out, 1, stream=s)      # warm-up (module load)
    s.synchronize()
    n = 10000
    t0 = time.perf_counter()
    mod.launch("nv_noop_c64", 1, 32, x, 0, 0, out, 1, stream=s, repeat=n)
    s.synchronize()
    c_loop = (time.perf_counter() - t0) / n
    t0 = time.perf_counter()
    for _ in range(n):
        mod.launch("nv_noop_c64", 1, 32, x, 0, 0, out, 1, stream=s)
    s.synchronize()
    per_call = (time.perf_counter() - t0) / n
    e0, e1 = cuda.event(), cuda.event()
    e0.record(s)
    mod.launch("nv_noop_c64", 1, 32, x, 0, 0, out, 1, stream=s, repeat=n)
    e1.record(s)
    e1.synchronize()
    gpu = e0.elapsed_time(e1) / 1e3 / n
    return c_loop, per_call, gpu, mod.max_block_size("nv_noop_c64")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="1,16,256", help="transfer sizes in MiB")
    p.add_argument("--repeat", type=int, default=20)
    args = p.parse_args(argv)
    from numbavec import cuda
    if not cuda.is_available():
        print(f"skipped: {cuda.unavailable_reason()}")
        return 0
    cuda.detect()
    print()
    print(f"{'MiB':>6} {'host memory':>12} {'H2D GB/s':>10} {'D2H GB/s':>10}")
    for mib in (int(x) for x in args.sizes.split(",")):
        for size, name, h2d, d2h in bandwidth(cuda, mib, args.repeat):
            print(f"{size:>6} {name:>12} {h2d:>10.1f} {d2h:>10.1f}")
    c_loop, per_call, gpu, occ = launch_cost(cuda, args.repeat)
    print()
    print(f"minimal kernel launch: {c_loop * 1e6:.2f} us per cuLaunchKernel from C, "
          f"{per_call * 1e6:.2f} us per Python call of CudaModule.launch, "
          f"{gpu * 1e6:.2f} us apart on the GPU (events); occupancy block size {occ[1]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
