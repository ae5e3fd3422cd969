"""Pictures of a benchmark run: speed-up over NumPy against N, one line per
implementation, as SVG files (no plotting library needed).

    python benchmarks/plot.py benchmarks/results/bench_vectorize-*.json
    python benchmarks/plot.py --readme docs/speedup.svg RUN.json   (make readme-plot)

bench_vectorize.py calls it after each run, next to the JSON: one picture
per kernel and call kind (out= preallocated, allocating call).  A point is
NumPy's time divided by the implementation's at that N (above 1: faster
than NumPy); the axes are logarithmic.
"""
import json
import math
import os
import sys
import time
from xml.sax.saxutils import escape

COLOURS = {"NumPy": "#7f7f7f", "numbavec cpu": "#1f77b4", "numbavec parallel": "#2ca02c",
           "Numba cpu": "#d62728", "Numba parallel": "#ff7f0e", "C loop": "#9467bd"}
OTHER = ["#8c564b", "#e377c2", "#17becf", "#bcbd22"]
MODES = {"t_out": "out= preallocated", "t_alloc": "allocating call"}
W, H, LEFT, RIGHT, TOP, BOTTOM = 720, 440, 70, 190, 50, 60


def _ticks(lo, hi):
    """Powers of ten (and 2, 5 between them when few) spanning [lo, hi]."""
    out = []
    for e in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1):
        for m in (1, 2, 5) if hi / lo < 1e3 else (1,):
            v = m * 10.0 ** e
            if lo <= v <= hi:
                out.append(v)
    return out


def _label(v):
    if v >= 1e3 or v < 1e-2:
        e = int(round(math.log10(v)))
        return f"1e{e}" if abs(v - 10.0 ** e) < 1e-9 * v else f"{v:g}"
    return f"{v:g}"


def speedup_svg(results, kernel, key):
    """The SVG text for one kernel and call kind, or None without data."""
    rows = [r for r in results if r["kernel"] == kernel and r.get(key)]
    numpy = {r["n"]: r[key] for r in rows if r["impl"] == "NumPy"}
    lines = {}
    for r in rows:
        if r["n"] in numpy:
            lines.setdefault(r["impl"], []).append((r["n"], numpy[r["n"]] / r[key]))
    if not lines:
        return None
    xs = [n for pts in lines.values() for n, _ in pts]
    ys = [s for pts in lines.values() for _, s in pts]
    x0, x1 = min(xs), max(xs)
    if x0 == x1:
        x0, x1 = x0 / 10, x1 * 10
    y0, y1 = min(min(ys), 1.0) / 1.3, max(max(ys), 1.0) * 1.3
    pw, ph = W - LEFT - RIGHT, H - TOP - BOTTOM

    def px(n):
        return LEFT + pw * (math.log10(n) - math.log10(x0)) / (math.log10(x1) - math.log10(x0))

    def py(s):
        return TOP + ph * (1 - (math.log10(s) - math.log10(y0)) / (math.log10(y1) - math.log10(y0)))

    svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
           f'font-family="sans-serif" font-size="12">',
           f'<rect width="{W}" height="{H}" fill="white"/>',
           f'<text x="{LEFT}" y="24" font-size="15">{escape(kernel)}: speed-up over NumPy '
           f'({escape(MODES.get(key, key))})</text>']
    for v in _ticks(y0, y1):
        y = py(v)
        svg.append(f'<line x1="{LEFT}" y1="{y:.1f}" x2="{LEFT + pw}" y2="{y:.1f}" '
                   f'stroke="{"#444" if v == 1 else "#ddd"}"/>')
        svg.append(f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{_label(v)}x</text>')
    for v in _ticks(x0, x1):
        x = px(v)
        svg.append(f'<line x1="{x:.1f}" y1="{TOP}" x2="{x:.1f}" y2="{TOP + ph}" stroke="#eee"/>')
        svg.append(f'<text x="{x:.1f}" y="{TOP + ph + 18}" text-anchor="middle">'
                   f'{_label(v)}</text>')
    svg.append(f'<text x="{LEFT + pw / 2}" y="{H - 18}" text-anchor="middle">N (elements)</text>')
    svg.append(f'<rect x="{LEFT}" y="{TOP}" width="{pw}" height="{ph}" fill="none" '
               f'stroke="#444"/>')
    spare = iter(OTHER)
    for i, (name, pts) in enumerate(sorted(lines.items())):
        colour = COLOURS.get(name) or next(spare, "#000")
        pts.sort()
        path = " ".join(f"{px(n):.1f},{py(s):.1f}" for n, s in pts)
        svg.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"/>')
        svg += [f'<circle cx="{px(n):.1f}" cy="{py(s):.1f}" r="3" fill="{colour}"/>'
                for n, s in pts]
        ly = TOP + 10 + 20 * i
        svg.append(f'<line x1="{W - RIGHT + 15}" y1="{ly}" x2="{W - RIGHT + 40}" y2="{ly}" '
                   f'stroke="{colour}" stroke-width="2"/>')
        svg.append(f'<text x="{W - RIGHT + 46}" y="{ly + 4}">{escape(name)}</text>')
    svg.append("</svg>")
    return "\n".join(svg) + "\n"


def write_pictures(results, stem):
    """stem-<kernel>-<mode>.svg for every kernel and call kind; their paths."""
    paths = []
    for kernel in sorted({r["kernel"] for r in results}):
        for key in MODES:
            text = speedup_svg(results, kernel, key)
            if text is not None:
                path = f"{stem}-{kernel}-{'out' if key == 't_out' else 'alloc'}.svg"
                with open(path, "w") as fh:
                    fh.write(text)
                paths.append(path)
    return paths


README_IMPLS = ["numbavec cpu", "numbavec parallel", "Numba cpu", "Numba parallel"]


def machine_line(run, when):
    """'<CPU>, N cores; Python, NumPy, numbavec, Numba versions; date' of a run."""
    s = run.get("sysinfo") or {}
    cpu = s.get("cpu_model") or s.get("cpu_name") or "?"
    cores = s.get("num_threads") or s.get("usable_cores") or "?"
    s = dict(s, numba=run.get("numba"))
    names = (("", "python"), ("NumPy", "numpy"), ("numbavec", "numbavec"),
             ("LLVM", "llvm_version"), ("Numba", "numba"))
    versions = ", ".join(f"{k} {s[v]}".strip() for k, v in names if s.get(v))
    load = run.get("load")
    busy = (f" (load average {max(load):.1f}: other processes ran meanwhile)"
            if load and max(load) > 0.5 * (cores if isinstance(cores, int) else 1) else "")
    return f"{cpu}, {cores} threads; {versions}; measured {when}{busy}"


def readme_svg(run, when):
    """The README's picture: speed-up over NumPy (out= preallocated) against
    N for saxpy and the Gaussian pdf side by side, numbavec and Numba on cpu
    and parallel, the machine and date under them."""
    results = [r for r in run["throughput"] if r["impl"] in README_IMPLS + ["NumPy"]]
    panels = [speedup_svg(results, k, "t_out") for k in ("saxpy", "gaussian_pdf")]
    panels = [p for p in panels if p is not None]
    if not panels:
        raise SystemExit("no saxpy or gaussian_pdf results in that run")
    width, height = W * len(panels), H + 30
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'font-family="sans-serif" font-size="12">',
           f'<rect width="{width}" height="{height}" fill="white"/>']
    for i, panel in enumerate(panels):
        inner = panel.split(">", 1)[1].rsplit("</svg>", 1)[0]
        out.append(f'<svg x="{W * i}" y="0" width="{W}" height="{H}">{inner}</svg>')
    out.append(f'<text x="{LEFT}" y="{H + 16}" fill="#444">{escape(machine_line(run, when))}'
               f'</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main(argv):
    if argv[:1] == ["--readme"]:
        # plot.py --readme OUT.svg RUN.json: the README's picture of one run
        out, path = argv[1], argv[2]
        with open(path) as fh:
            run = json.load(fh)
        when = run.get("date") or time.strftime("%Y-%m-%d", time.gmtime(os.path.getmtime(path)))
        with open(out, "w") as fh:
            fh.write(readme_svg(run, when))
        print(out)
        return 0
    for path in argv:
        with open(path) as fh:
            results = json.load(fh)["throughput"]
        for out in write_pictures(results, os.path.splitext(path)[0]):
            print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
