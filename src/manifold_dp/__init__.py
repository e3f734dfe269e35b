"""manifold_dp: differentially private Fréchet means of data on Riemannian manifolds."""

from typing import Any

from .manifolds import SO3, Euclidean, Hyperbolic, KendallShape2D, SPDAffineInvariant, SPDLogEuclidean, Sphere
from .privacy import (
    AutoCenter,
    AutoRadius,
    InvalidRecordsError,
    KNormGradient,
    PrivacyAccountant,
    PrivateRelease,
    RecordsWarning,
    ReleaseWarning,
    RiemannianLaplace,
    TangentGaussian,
    frechet_mean_sensitivity,
    private_frechet_mean,
    private_frechet_variance,
)
from .privacy.median import private_frechet_median
from .privacy.tangent_pca import private_tangent_pca
from .stats import CurvatureAssumptionError, frechet_mean

__version__ = "0.1.0"

__all__ = [
    "Euclidean", "Sphere", "Hyperbolic", "SPDAffineInvariant", "SPDLogEuclidean", "KendallShape2D", "SO3",
    "frechet_mean", "CurvatureAssumptionError",
    "private_frechet_mean", "private_frechet_variance", "private_frechet_median", "private_tangent_pca", "PrivateRelease",
    "frechet_mean_sensitivity",
    "AutoRadius", "AutoCenter", "RecordsWarning", "ReleaseWarning", "InvalidRecordsError",
    "RiemannianLaplace", "KNormGradient", "TangentGaussian", "PrivacyAccountant",
]


_ESTIMATORS = ("PrivateFrechetMean", "PrivateTangentPCA", "PrivateMDM")


def __getattr__(name: str) -> Any:
    """The estimators (``PrivateFrechetMean``, ``PrivateTangentPCA``, ``PrivateMDM``) need
    scikit-learn: they are imported only when asked for, so that ``import manifold_dp`` never
    imports scikit-learn (``manifold_dp.estimators``)."""
    if name in _ESTIMATORS:
        from . import estimators

        return getattr(estimators, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
