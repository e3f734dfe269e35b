"""The six spaces of SPEC §1, each a small frozen class over pure numpy operations."""

from .base import Manifold
from .euclidean import Euclidean
from .hyperbolic import Hyperbolic
from .kendall import KendallShape2D
from .sphere import Sphere
from .spd import SPDAffineInvariant, SPDLogEuclidean

__all__ = ["Manifold", "Euclidean", "Sphere", "Hyperbolic", "SPDAffineInvariant", "SPDLogEuclidean", "KendallShape2D"]
