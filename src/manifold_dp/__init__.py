"""manifold_dp: differentially private Fréchet means of data on Riemannian manifolds."""

from .manifolds import Euclidean, Hyperbolic, KendallShape2D, Sphere, SPDAffineInvariant, SPDLogEuclidean
from .stats import CurvatureAssumptionError, frechet_mean

__version__ = "0.1.0"

__all__ = [
    "Euclidean", "Sphere", "Hyperbolic", "SPDAffineInvariant", "SPDLogEuclidean", "KendallShape2D",
    "frechet_mean", "CurvatureAssumptionError",
]
