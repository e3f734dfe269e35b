"""Statistics on manifolds: the Fréchet mean."""

from .frechet import CurvatureAssumptionError, FrechetMeanResult, frechet_mean, gradient_norm, riemannian_gradient

__all__ = ["frechet_mean", "FrechetMeanResult", "CurvatureAssumptionError", "riemannian_gradient", "gradient_norm"]
