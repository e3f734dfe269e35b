"""Type aliases shared by the package (typing only: nothing here exists at run time beyond names)."""

from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = ["Array", "BoolArray", "FloatArray"]

FloatArray = NDArray[np.float64]
BoolArray = NDArray[np.bool_]
Array = NDArray[Any]  # points and tangent vectors: float64, or complex128 on Kendall's shape space
