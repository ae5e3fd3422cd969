# Types of numbavec.cache: the compiled-code cache's tools (cache=True).
from typing import Any, TypedDict

class NumbavecCacheWarning(RuntimeWarning): ...

class CacheInfo(TypedDict):
    dir: str
    entries: int
    bytes: int
    damaged: int
    functions: dict[str, int]

def cache_dir() -> str: ...
def info(directory: str | None = None) -> CacheInfo: ...
def clear(directory: str | None = None) -> int: ...
def format_info(stats: CacheInfo) -> str: ...

class FunctionCache:
    """What a kernel with cache=True stores through (made by the decorators)."""
    def __init__(self, target: str, options: dict[str, Any], function: str = ...,
                 filename: str = ...) -> None: ...
