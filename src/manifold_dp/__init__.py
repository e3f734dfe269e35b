"""manifold_dp: differentially private Fréchet means of data on Riemannian manifolds."""

from .manifolds import Euclidean, Hyperbolic, KendallShape2D, Sphere, SPDAffineInvariant, SPDLogEuclidean
from .privacy import (
    KNormGradient, PrivacyAccountant, PrivateRelease, RiemannianLaplace, TangentGaussian,
    frechet_mean_sensitivity, private_frechet_mean, private_frechet_variance,
)
from .stats import CurvatureAssumptionError, frechet_mean

__version__ = "0.1.0"

__all__ = [
    "Euclidean", "Sphere", "Hyperbolic", "SPDAffineInvariant", "SPDLogEuclidean", "KendallShape2D",
    "frechet_mean", "CurvatureAssumptionError",
    "private_frechet_mean", "private_frechet_variance", "PrivateRelease", "frechet_mean_sensitivity",
    "RiemannianLaplace", "KNormGradient", "TangentGaussian", "PrivacyAccountant",
]
