"""The spaces, each a small frozen class over pure numpy operations, and their registry.

A new manifold is one module here plus one ``REGISTRY`` line: the CLI (``--manifold NAME``) and
the shared property suite (``tests/conftest.py``) read the registry; each class supplies
``from_width(width)`` (its size from a record's number of entries) and ``examples()``.
"""

from .base import Manifold
from .euclidean import Euclidean
from .hyperbolic import Hyperbolic
from .kendall import KendallShape2D
from .so3 import SO3
from .spd import SPDAffineInvariant, SPDLogEuclidean
from .sphere import Sphere

REGISTRY: dict[str, type[Manifold]] = {
    "euclidean": Euclidean,
    "sphere": Sphere,
    "hyperbolic": Hyperbolic,
    "spd-ai": SPDAffineInvariant,
    "spd-le": SPDLogEuclidean,
    "kendall2d": KendallShape2D,
    "so3": SO3,
}

__all__ = ["Manifold", "REGISTRY", "Euclidean", "Sphere", "Hyperbolic", "SPDAffineInvariant", "SPDLogEuclidean",
           "KendallShape2D", "SO3"]
