"""Privacy: sensitivities, calibration, exact samplers, mechanisms, accounting, releases."""

from .accounting import BudgetExceededError, GaussianEvent, PrivacyAccountant, PureEvent
from .calibration import analytic_gaussian_sigma, classical_gaussian_sigma
from .mechanisms import AmbientNoise, KNormGradient, RiemannianLaplace, TangentGaussian
from .release import PrivateRelease, prepare_records, private_frechet_mean
from .sensitivity import ambient_sensitivity, frechet_mean_sensitivity, hessian_lower_bound, log_lipschitz

__all__ = [
    "frechet_mean_sensitivity", "ambient_sensitivity", "hessian_lower_bound", "log_lipschitz",
    "analytic_gaussian_sigma", "classical_gaussian_sigma",
    "RiemannianLaplace", "KNormGradient", "TangentGaussian", "AmbientNoise",
    "private_frechet_mean", "PrivateRelease", "prepare_records",
    "PrivacyAccountant", "PureEvent", "GaussianEvent", "BudgetExceededError",
]
