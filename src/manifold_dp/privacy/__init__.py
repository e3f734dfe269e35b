"""Privacy: sensitivities, calibration, exact samplers, measurements, accounting, releases."""

from . import gdp, measurements, radius_selection
from .accounting import BudgetExceededError, PrivacyAccountant, gaussian_dp_event, pure_dp_event
from .calibration import analytic_gaussian_sigma, classical_gaussian_sigma
from .certificate import CERTIFICATE_SCHEMA, Certificate, RadiusSelection
from .measurements import Measurement
from .mechanisms import AmbientNoise, KNormGradient, RiemannianGaussian, RiemannianLaplace, TangentGaussian, WrappedNoise
from .private_ball import AutoCenter
from .radius_selection import AutoRadius
from .release import (
    InvalidRecordsError,
    PrivateRelease,
    RecordsWarning,
    ReleaseWarning,
    prepare_records,
    private_frechet_mean,
    private_frechet_variance,
)
from .sensitivity import ambient_sensitivity, frechet_mean_sensitivity, hessian_lower_bound, log_lipschitz

__all__ = [
    "frechet_mean_sensitivity", "ambient_sensitivity", "hessian_lower_bound", "log_lipschitz",
    "analytic_gaussian_sigma", "classical_gaussian_sigma",
    "measurements", "Measurement", "RiemannianLaplace", "KNormGradient", "TangentGaussian", "AmbientNoise",
    "RiemannianGaussian", "WrappedNoise", "gdp",
    "private_frechet_mean", "private_frechet_variance", "PrivateRelease", "Certificate", "CERTIFICATE_SCHEMA",
    "prepare_records", "AutoRadius", "AutoCenter", "RadiusSelection", "radius_selection", "RecordsWarning", "ReleaseWarning",
    "InvalidRecordsError", "PrivacyAccountant", "BudgetExceededError", "pure_dp_event", "gaussian_dp_event",
]
