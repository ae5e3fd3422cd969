"""Thread limits the ecosystem sets (issue 38): the pool's size from
NUMBAVEC_NUM_THREADS, else OMP_NUM_THREADS (what dask's workers, job
schedulers and users set for every pool of a process), else the usable
cores; threadpoolctl's threadpool_limits reaches the parallel target; a
dask LocalCluster's worker processes start a pool of one thread."""
import os

import numpy as np
import pytest

import numbavec
from numbavec import _core

from conftest import run_python

CORES = len(os.sched_getaffinity(0))


def pool_size(**env):
    full = {k: v for k, v in os.environ.items()
            if k not in ("NUMBAVEC_NUM_THREADS", "OMP_NUM_THREADS")}
    full.update(env)
    r = run_python("import warnings; warnings.simplefilter('error')\n"
                   "from numbavec import _core; print(_core.get_pool_size())", env=full)
    assert r.returncode == 0, r.stderr
    return int(r.stdout)


@pytest.mark.parametrize("env, size", [
    ({}, CORES),
    ({"OMP_NUM_THREADS": "3"}, 3),
    ({"OMP_NUM_THREADS": "1"}, 1),
    ({"OMP_NUM_THREADS": "3,1"}, 3),                 # OpenMP's nested form: the outer level
    ({"OMP_NUM_THREADS": "0"}, CORES),               # not a count: OpenMP's to complain about
    ({"OMP_NUM_THREADS": "many"}, CORES),
    ({"OMP_NUM_THREADS": "1", "NUMBAVEC_NUM_THREADS": "3"}, 3),   # numbavec's own wins
])
def test_the_pool_size_follows_the_environment(env, size):
    assert pool_size(**env) == size


def kernel(x, y):
    return x * y + 1.0


@pytest.fixture
def tpc():
    return pytest.importorskip("threadpoolctl")


def test_threadpoolctl_lists_and_limits_the_parallel_target(tpc, forced):
    if _core.get_pool_size() < 2:
        pytest.skip("a pool of one thread has nothing to limit")
    u = numbavec.vectorize(["f8(f8, f8)"], target="parallel")(kernel)
    x = np.arange(10_000.0)
    ours = [i for i in tpc.threadpool_info() if i["user_api"] == "numbavec"]
    assert len(ours) == 1 and ours[0]["num_threads"] == numbavec.get_num_threads()
    assert os.path.samefile(ours[0]["filepath"], _core.__file__)
    before = numbavec.get_num_threads()
    jobs = _core._pool_stats()["jobs"]
    with tpc.threadpool_limits(1):
        assert numbavec.get_num_threads() == 1
        np.testing.assert_array_equal(u(x, x), kernel(x, x))
        assert _core._pool_stats()["jobs"] == jobs       # ran on the caller alone
    assert numbavec.get_num_threads() == before
    np.testing.assert_array_equal(u(x, x), kernel(x, x))
    assert _core._pool_stats()["jobs"] > jobs            # split again
    with tpc.threadpool_limits(limits=1000, user_api="numbavec"):
        assert numbavec.get_num_threads() == _core.get_pool_size()


def test_the_controller_registers_when_threadpoolctl_comes_after(tpc):
    code = ("import sys, numbavec\n"
            "assert 'threadpoolctl' not in sys.modules\n"
            "from threadpoolctl import threadpool_limits, threadpool_info\n"
            "print([i['user_api'] for i in threadpool_info()].count('numbavec'))\n"
            "with threadpool_limits(1):\n"
            "    print(numbavec.get_num_threads())\n"
            "print(any('numbavec' in repr(f) for f in sys.meta_path))\n")
    r = run_python(code)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["1", "1", "False"]
    # and before numbavec
    r = run_python("import threadpoolctl, numbavec\n"
                   "print([i['user_api'] for i in threadpoolctl.threadpool_info()]"
                   ".count('numbavec'))")
    assert r.returncode == 0 and r.stdout.strip() == "1", r.stderr


def test_a_dask_localcluster_worker_starts_a_pool_of_one_thread():
    """dask's nanny starts each worker process with OMP_NUM_THREADS=1: n
    workers then use n cores, not n times every core."""
    pytest.importorskip("distributed")
    code = """if True:
        import numpy as np
        import numbavec
        from distributed import Client, LocalCluster

        def in_worker(n):
            u = numbavec.vectorize(['f8(f8)'], target='parallel')(lambda x: x + 1)
            ok = bool((u(np.arange(float(n))) == np.arange(1.0, n + 1)).all())
            return numbavec._core.get_pool_size(), numbavec.get_num_threads(), ok

        if __name__ == '__main__':
            with LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                              dashboard_address=None, silence_logs=40) as cluster, \\
                    Client(cluster) as client:
                print(client.submit(in_worker, 100_000).result(timeout=240))
            # what the README says to set for more threads per worker
            import dask
            with dask.config.set({"distributed.nanny.pre-spawn-environ"
                                  ".NUMBAVEC_NUM_THREADS": 2}), \
                    LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                 dashboard_address=None, silence_logs=40) as cluster, \
                    Client(cluster) as client:
                print(client.submit(in_worker, 100_000).result(timeout=240))
    """
    env = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}
    r = run_python(code, env=env, as_file=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().splitlines()[-2:] == ["(1, 1, True)", "(2, 2, True)"]
