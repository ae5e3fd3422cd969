"""numbavec's parallel pool as a threadpoolctl library, so that
``threadpoolctl.threadpool_limits(n)`` limits it as it limits BLAS and
OpenMP, and ``threadpool_info()`` lists it.

threadpoolctl is not imported for this (it costs more than numbavec's own
import): the controller is registered when numbavec is imported after it,
or, through a finder on ``sys.meta_path`` that answers for that one name,
as soon as it is imported later.  The limit is numbavec's per-thread count
(``set_num_threads``), as threadpoolctl prefers: it holds for calls made
from the thread that set it.
"""
import os
import sys

_registered = False


def _core_path():
    from numbavec import _core

    return os.path.realpath(_core.__file__)


def _controller_class(threadpoolctl):
    from numbavec import _core

    class NumbavecController(threadpoolctl.LibController):
        """The parallel target's pool (numbavec._core)."""

        user_api = "numbavec"
        internal_api = "numbavec"
        filename_prefixes = ("_core.",)

        def _find_affixes(self):
            # another package's _core.*.so: not ours (threadpoolctl skips a
            # library whose controller cannot be made)
            if os.path.realpath(self.filepath or "") != _core_path():
                raise OSError(f"{self.filepath} is not numbavec's extension")
            return "", ""

        def get_num_threads(self):
            return _core.get_num_threads()

        def set_num_threads(self, num_threads):
            # a limit above the pool is the pool (threadpool_limits(64) on
            # fewer cores is no error for BLAS either)
            _core.set_num_threads(max(1, min(int(num_threads), _core.get_pool_size())))

        def get_version(self):
            from numbavec import __version__

            return __version__

        def set_additional_attributes(self):
            self.pool_size = _core.get_pool_size()

    return NumbavecController


def register(threadpoolctl):
    """Registers the controller with an imported threadpoolctl (once)."""
    global _registered
    if _registered or not hasattr(threadpoolctl, "register"):
        return
    threadpoolctl.register(_controller_class(threadpoolctl))
    _registered = True


class _RegisterOnImport:
    """Finds threadpoolctl with the finders after it, and registers the
    controller once its module has run; any other name is not its to find.
    (A meta path finder and loader by protocol: importlib.abc costs an
    import numbavec's own does not need.)"""

    def find_spec(self, name, path=None, target=None):
        if name != "threadpoolctl" or _registered:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                break
        else:
            return None
        if spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        self.loader = spec.loader
        spec.loader = self
        return spec

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        module.__loader__ = module.__spec__.loader = self.loader
        self.loader.exec_module(module)
        try:
            register(module)
        finally:
            _remove_finder()

    def __repr__(self):
        return "<numbavec: registers its threadpoolctl controller on import>"


_finder = _RegisterOnImport()


def _remove_finder():
    if _finder in sys.meta_path:
        sys.meta_path.remove(_finder)


def install():
    """At numbavec's import: register now, or when threadpoolctl comes."""
    module = sys.modules.get("threadpoolctl")
    if module is not None:
        register(module)
    elif _finder not in sys.meta_path:
        sys.meta_path.insert(0, _finder)
