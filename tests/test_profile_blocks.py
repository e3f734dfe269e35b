"""The Riemannian Gaussian's profile quadrature in blocks of rows (``gdp._angular_integral``) against
the whole ``(T, E, R, A)`` array it replaced: the same floats, so every calibrated σ and μ is unchanged."""

import numpy as np
import pytest
from scipy.special import betaln

from manifold_dp import Hyperbolic, KendallShape2D, SPDAffineInvariant, Sphere
from manifold_dp.privacy import gdp


def _whole_array(rows, d, sigma, a_panels, S_inv):
    """The angular integral on the whole array, every row computed (the reference)."""
    base, scale, rho_sq, eps, theta_star = rows
    if d == 1:
        th = np.broadcast_to(np.array([0.0, np.pi]), theta_star.shape[:-1] + (2,))
        lw = np.where(th >= theta_star, np.log(0.5), -np.inf)
    else:
        width = np.pi / 2 if d == 2 else float(np.arccos(np.exp(-gdp._WINDOW / (d - 2))))
        b = np.full(theta_star.shape[:-1], np.pi / 2 + width)
        a = np.minimum(np.maximum(theta_star[..., 0], np.pi / 2 - width), b)
        th, wt = gdp._composite(a, b, a_panels)
        with np.errstate(divide="ignore"):
            lw = (d - 2) * np.log(np.sin(th)) + np.log(wt) - betaln(0.5, 0.5 * (d - 1))
    rho2 = S_inv(base + scale * np.sin(th / 2.0) ** 2)
    loss = (rho2 * rho2 - rho_sq) / (2.0 * sigma * sigma)
    with np.errstate(all="ignore"):
        h = np.where(np.isfinite(loss), -np.expm1(eps - loss), 1.0)
        inner = np.where(np.isfinite(lw), h * np.exp(lw), 0.0)
    return np.clip(inner, 0.0, None).sum(axis=-1)


SPACES = [Sphere(1), Sphere(2), Sphere(6), Hyperbolic(2), Hyperbolic(5), KendallShape2D(4), SPDAffineInvariant(3),
          SPDAffineInvariant(10)]


@pytest.mark.parametrize("space", SPACES, ids=repr)
def test_blocks_give_the_whole_array_s_floats(space, monkeypatch):
    eps = np.concatenate([[0.0], np.geomspace(1e-3, 30.0, 60)])
    cases = [(sens, factor * sens) for sens in (1e-3, 0.6) for factor in (0.25, 1.0, 5.0)]
    new = [gdp.privacy_profile(space, sens, sigma, eps) for sens, sigma in cases]
    gdp._profile_cached.cache_clear()
    monkeypatch.setattr(gdp, "_BLOCK", 1000)  # many small blocks
    small = [gdp.privacy_profile(space, sens, sigma, eps) for sens, sigma in cases]
    gdp._profile_cached.cache_clear()
    monkeypatch.setattr(gdp, "_angular_integral", _whole_array)
    old = [gdp.privacy_profile(space, sens, sigma, eps) for sens, sigma in cases]
    gdp._profile_cached.cache_clear()
    for case, a, b, c in zip(cases, new, small, old, strict=True):
        assert np.array_equal(a, c) and np.array_equal(b, c), case


def test_the_spd_calibration_is_unchanged(monkeypatch):
    from manifold_dp.privacy import measurements

    space = SPDAffineInvariant(10)
    new = measurements._profile_calibration.__wrapped__(space, 1e-3, 1.0, 1e-6)
    monkeypatch.setattr(gdp, "_angular_integral", _whole_array)
    assert measurements._profile_calibration.__wrapped__(space, 1e-3, 1.0, 1e-6) == new
