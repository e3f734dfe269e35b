"""Symmetric positive-definite matrices SPD(k) under two metrics (covariance matrices).

``SPDAffineInvariant``: ``⟨u,v⟩_p = tr(p⁻¹u p⁻¹v)``, curvature in ``[−1/2, 0]``.
``SPDLogEuclidean``: the pull-back of Frobenius through ``Logm``; flat. Tangent vectors of this
metric are kept in log coordinates (symmetric matrices), as docs/theory.md §1 describes.
Points ``(..., k, k)``.
"""

from dataclasses import dataclass

import numpy as np

from .._random import as_generator
from .matrix import expm_sym, funm_sym, invvecd, logm_spd, sqrtm_spd, sym, vecd
from .base import Manifold
from .euclidean import _check_dim

__all__ = ["SPDAffineInvariant", "SPDLogEuclidean"]


def _positive_definite(a):
    """Mask of numerically positive-definite symmetric matrices: smallest eigenvalue above
    ``k·ε·`` the largest (ε the float64 machine epsilon). Below that the eigenvalues from ``eigh``,
    on which ``Logm`` and every metric here rest, may come out ≤ 0 and the log is not finite;
    such a matrix is singular as far as float64 can tell. (Of 10⁴ random matrices with condition
    numbers up to 2e17, a Cholesky test passed 4.6 % and ``λ_min > 0`` 1.8 % whose log was not
    finite, and a release holding one could crash; this test passes none.)"""
    w = np.linalg.eigvalsh(a)
    k = a.shape[-1]
    return w[..., 0] > k * np.finfo(float).eps * np.abs(w[..., -1])


class _SPD(Manifold):
    point_shape = property(lambda self: (self.k, self.k))
    dim = property(lambda self: self.k * (self.k + 1) // 2)
    origin = property(lambda self: np.eye(self.k))
    injectivity_radius = np.inf

    def __post_init__(self):
        _check_dim(self.k, "k", 1)

    @classmethod
    def from_width(cls, width):
        k = int(round(np.sqrt(width)))
        if k * k != width:
            raise ValueError(f"SPD records must have k*k entries, got {width}")
        return cls(k)

    @classmethod
    def examples(cls):
        return (cls(3),)

    def _checks(self, x, atol):
        scale = np.maximum(np.linalg.norm(x, axis=(-2, -1)), np.finfo(float).tiny)
        asym = np.linalg.norm(x - np.swapaxes(x, -1, -2), axis=(-2, -1))
        symmetric = asym <= atol * scale
        return [
            (symmetric, f"not symmetric to relative tolerance {atol:g}"),
            (_positive_definite(sym(x)), "not positive definite"),
        ]

    def project(self, x):
        return sym(np.asarray(x, dtype=float))

    # -- capabilities shared by both metrics ---------------------------------------------------
    ambient_dim = property(lambda self: self.dim)

    def to_ambient(self, x):
        """``vecd``: an isometry of ``(Sym(k), Frobenius)`` onto ``R^(k(k+1)/2)``."""
        return vecd(np.asarray(x, float))

    def from_ambient(self, z, floor=1e-12):
        """Back to a matrix, eigenvalues floored at ``floor`` (a projection onto SPD)."""
        return funm_sym(invvecd(z, self.k), lambda w: np.maximum(w, floor))

    def ambient_radius(self, center, radius):
        """``λmax(center)(e^r − 1)`` bounds ``‖X − center‖_F`` over ``B_r(center)`` in either
        metric (affine-invariant: 2021 Prop. 1; log-Euclidean: Duhamel's formula)."""
        return float(np.linalg.eigvalsh(np.asarray(center, float))[-1]) * float(np.expm1(radius))

    def ambient_floor(self, center, radius):
        """``λmin(center)·e^(−r)``: every matrix of ``B_r(center)`` has eigenvalues above it."""
        return float(np.linalg.eigvalsh(center)[0] * np.exp(-radius))

    def float_error(self, center, radius):
        w = np.linalg.eigvalsh(center)
        return 16 * np.finfo(float).eps * (w[-1] / w[0]) * np.exp(2 * radius)

    def exp_coordinate_offset(self, center):
        return float(np.max(np.abs(np.log(np.linalg.eigvalsh(center)))))

    def grid_scales(self, center, radius, sigma):
        w = np.linalg.eigvalsh(center)
        return sigma * w[0] * np.exp(-radius), w[-1] * np.exp(radius + min(sigma, 50.0))

    def snap(self, points, grid):
        """Symmetrise and floor the eigenvalues at ``grid``: rounding must keep the point SPD."""
        return funm_sym(self.project(points), lambda w: np.maximum(w, grid))

    def mean_start_stats(self, block, weights):
        return np.tensordot(weights, logm_spd(np.asarray(block, float)), axes=(0, 0))

    def mean_start(self, stats):
        return expm_sym(stats)  # the log-Euclidean mean

    def _random_sym_unit(self, shape, rng):
        # sym(G) for a standard Gaussian G has vecd(sym G) ~ N(0, I_dim): isotropic under Frobenius
        s = sym(as_generator(rng).standard_normal(shape + (self.k, self.k)))
        return s / np.linalg.norm(s, axis=(-2, -1), keepdims=True)


@dataclass(frozen=True)
class SPDAffineInvariant(_SPD):
    """SPD(k) with the affine-invariant metric (Pennec et al. 2006).

    ``exp_p(v) = p^½ Expm(p^−½ v p^−½) p^½``, ``log_p(q) = p^½ Logm(p^−½ q p^−½) p^½``,
    ``ρ(p, q) = ‖Logm(p^−½ q p^−½)‖_F``. Invariant under ``p ↦ A p Aᵀ``. Curvature in
    ``[−1/2, 0]``; ``dim = k(k+1)/2``. Its Laplace law is not radial: it is sampled by the
    eigenvalue construction of docs/theory.md §4.

    Parameters
    ----------
    k : int
        The matrix size ``k ≥ 1``; points are symmetric positive-definite ``(..., k, k)`` arrays.

    Raises
    ------
    ValueError
        If ``k`` is not an integer ``≥ 1``.

    Examples
    --------
    >>> import numpy as np
    >>> from manifold_dp import SPDAffineInvariant
    >>> spd = SPDAffineInvariant(2)
    >>> p = np.diag([np.e, 1.0])
    >>> round(float(spd.dist(np.eye(2), p)), 12)
    1.0
    >>> bool(np.allclose(spd.exp(np.eye(2), spd.log(np.eye(2), p)), p))
    True
    """

    k: int
    curvature_bounds = (-0.5, 0.0)
    radial = False  # the Laplace law needs the eigenvalue construction, not a radial sampler
    laplace_sampler = "spd_log_eigen"

    @property
    def laplace_sigma_limit(self):
        return 1.0 / self.laplace_integrability_constant if self.k > 1 else np.inf

    @property
    def laplace_integrability_constant(self):
        """``c_k = ½ √(k(k²−1)/3)``: the Laplace law is integrable iff ``σ < 1/c_k``."""
        k = self.k
        return 0.5 * np.sqrt(k * (k * k - 1) / 3.0)

    def exp(self, p, v):
        s, si = sqrtm_spd(np.asarray(p, float))
        return sym(s @ expm_sym(sym(si @ v @ si)) @ s)

    def log(self, p, q):
        s, si = sqrtm_spd(np.asarray(p, float))
        return sym(s @ logm_spd(sym(si @ q @ si)) @ s)

    def dist(self, p, q):
        _, si = sqrtm_spd(np.asarray(p, float))
        w = np.linalg.eigvalsh(sym(si @ np.asarray(q, float) @ si))
        return np.sqrt(np.sum(np.log(w) ** 2, axis=-1))

    def inner(self, p, u, v):
        p = np.asarray(p, float)
        a = np.linalg.solve(p, u)
        b = np.linalg.solve(p, v)
        return np.einsum("...ij,...ji->...", a, b)

    def random_unit_tangent(self, p, size=None, *, rng=None):
        s, _ = sqrtm_spd(np.asarray(p, float))
        w = self._random_sym_unit(self._out_shape(p, size), rng)
        return sym(s @ w @ s)


@dataclass(frozen=True)
class SPDLogEuclidean(_SPD):
    """SPD(k) with the log-Euclidean metric (Arsigny et al. 2007): ``Logm`` is an isometry onto
    ``(Sym(k), Frobenius)``. ``exp_p(v) = Expm(Logm p + v)``, ``log_p(q) = Logm q − Logm p``
    (tangent vectors in log coordinates). Flat: the Fréchet mean has a closed form and the tangent
    Gaussian mechanism applies (docs/theory.md §4).

    Parameters
    ----------
    k : int
        The matrix size ``k ≥ 1``; points are symmetric positive-definite ``(..., k, k)`` arrays.

    Raises
    ------
    ValueError
        If ``k`` is not an integer ``≥ 1``.

    Examples
    --------
    >>> import numpy as np
    >>> from manifold_dp import SPDLogEuclidean
    >>> le = SPDLogEuclidean(2)
    >>> round(float(le.dist(np.eye(2), np.diag([np.e, np.e]))), 6)  # ‖diag(1, 1)‖_F
    1.414214
    """

    k: int
    curvature_bounds = (0.0, 0.0)
    radial_range = (0.0, np.inf)

    def exp(self, p, v):
        return expm_sym(logm_spd(np.asarray(p, float)) + sym(np.asarray(v, float)))

    def log(self, p, q):
        return logm_spd(np.asarray(q, float)) - logm_spd(np.asarray(p, float))

    def inner(self, p, u, v):
        return np.sum(np.asarray(u) * np.asarray(v), axis=(-2, -1))

    def dist(self, p, q):
        return np.linalg.norm(self.log(p, q), axis=(-2, -1))

    def random_unit_tangent(self, p, size=None, *, rng=None):
        return self._random_sym_unit(self._out_shape(p, size), rng)

    def log_volume_ratio(self, rho):
        return np.zeros_like(np.asarray(rho, dtype=float))

    # -- capability: Logm is an isometry onto R^dim -------------------------------------------
    flat_chart = True

    def to_chart(self, x):
        return vecd(logm_spd(np.asarray(x, float)))

    def from_chart(self, z):
        return expm_sym(invvecd(z, self.k))
