"""python -m numbavec (or the ``numbavec`` command): system summary, then a
small before/after demo.

  numbavec                 versions, host CPU, targets, threads, demo
  numbavec -s, --sysinfo   the system part only (as ``numba -s``)
  numbavec -s --json       the same as one JSON object (as ``numba --sys-json``)
  numbavec --version      numbavec's version
  numbavec --cache-info / --cache-clear
                           show / empty the compiled-code cache
"""
import argparse
import os
import sys


def main(argv=None):
    command = os.path.basename(sys.argv[0] or "")
    parser = argparse.ArgumentParser(
        prog="numbavec" if argv is None and command == "numbavec" else "python -m numbavec",
        description="Print numbavec's system summary (versions, LLVM, host CPU, "
                    "targets, threads) and run a small before/after demo: the "
                    "Gaussian pdf over 1e6 float32 as a NumPy expression and as "
                    "numbavec ufuncs on the cpu and parallel targets.")
    from numbavec import __version__

    parser.add_argument("--version", action="version", version=f"numbavec {__version__}")
    parser.add_argument("-s", "--sysinfo", action="store_true",
                        help="print the system summary only (no compilation, no demo)")
    parser.add_argument("--json", action="store_true",
                        help="the system summary as one JSON object on stdout (implies -s)")
    parser.add_argument("--cache-info", action="store_true",
                        help="show the compiled-code cache (cache=True): where, how many entries")
    parser.add_argument("--cache-clear", action="store_true",
                        help="remove every entry of the compiled-code cache")
    args = parser.parse_args(argv)
    if args.cache_info or args.cache_clear:
        from numbavec import cache

        if args.cache_clear:
            print(f"removed {cache.clear()} entries from {cache.cache_dir()}")
        if args.cache_info:
            print(cache.format_info(cache.info()))
        return 0

    from numbavec import sysinfo

    if args.json:
        import json

        print(json.dumps(sysinfo.collect(), indent=2, sort_keys=True, default=str))
        return 0
    print(sysinfo.format_sysinfo(sysinfo.collect()))
    if args.sysinfo:
        return 0
    print()
    try:
        lines, ok = sysinfo.run_demo()
    except Exception as exc:  # noqa: BLE001 - the demo failing is the message
        print(f"Demo failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    print("\n".join(lines))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
