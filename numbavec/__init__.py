"""numbavec: scalar Python functions compiled by LLVM into real NumPy ufuncs."""
from numbavec import _core
from numbavec._core import TypingError

__version__ = "0.1.0"
