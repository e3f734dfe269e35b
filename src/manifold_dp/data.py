"""The papers' data generators (docs/theory.md §6). Each takes ``rng=`` and returns a ``(n, ...)`` array."""

import numpy as np
from numpy.typing import ArrayLike

from ._random import RngLike, as_generator
from ._typing import Array, FloatArray
from .manifolds import KendallShape2D, SPDAffineInvariant, Sphere
from .manifolds.matrix import eig_apply

__all__ = ["wishart_spd", "sphere_cap", "eigen_spd", "noisy_shapes"]


def wishart_spd(n: int, k: int = 2, *, scale: ArrayLike | None = None, df: int = 2, max_radius: float = 1.5,
                rng: RngLike = None) -> FloatArray:
    """Wishart ``W(scale, df)`` draws kept only when ``ρ_AI(X, I) < max_radius`` (2021 App. A.2.1).

    Default ``scale = I/2``, ``df = 2`` as in the paper (requires ``df ≥ k``)."""
    from scipy.stats import wishart  # here, not at import: scipy.stats costs ~0.5 s to import

    rng = as_generator(rng)
    scale = np.eye(k) / 2 if scale is None else np.asarray(scale, float)
    if df < k:
        raise ValueError(f"df must be >= k={k}, got {df!r}")
    spd = SPDAffineInvariant(k)
    out: list[FloatArray] = []
    while sum(len(o) for o in out) < n:
        draws = np.asarray(wishart(df=df, scale=scale).rvs(size=max(2 * n, 16), random_state=rng)).reshape(-1, k, k)
        out.append(draws[spd.dist(np.eye(k), draws) < max_radius])
    return np.concatenate(out)[:n]


def sphere_cap(n: int, *, radius: float = np.pi / 8, dim: int = 2, rng: RngLike = None) -> Array:
    """Points at polar angle ``U[0, radius]`` from the north pole, direction uniform (2021 A.3.1).

    On ``S²`` the direction is the azimuth ``U[0, 2π)`` of the paper."""
    rng = as_generator(rng)
    s = Sphere(dim)
    u = s.random_unit_tangent(s.origin, size=n, rng=rng)
    return s.exp(s.origin, u * rng.uniform(0.0, radius, size=(n, 1)))


def eigen_spd(n: int, k: int, *, r: float = 0.25, rng: RngLike = None) -> FloatArray:
    """Eigenvalues ``U[e^−r, e^r]`` and Haar eigenvectors (2023 §6): in ``B_(√k r)(I)``."""
    rng = as_generator(rng)
    lam = rng.uniform(np.exp(-r), np.exp(r), size=(n, k))
    if k == 1:
        return lam[:, :, None]
    from scipy.stats import ortho_group

    u = ortho_group.rvs(k, size=n, random_state=rng).reshape(n, k, k)
    return eig_apply(u, lam)


def noisy_shapes(template: ArrayLike, n: int, *, noise: float = 0.05, rng: RngLike = None) -> Array:
    """Pre-shapes of ``template`` (real ``(k, 2)`` or complex ``(k,)``) plus iid Gaussian
    landmark noise of standard deviation ``noise`` (relative to the template's size)."""
    rng = as_generator(rng)
    kendall = KendallShape2D(np.asarray(KendallShape2D.to_complex(template)).shape[-1])
    t = kendall.preshape(template)
    z = t + noise / np.sqrt(2 * t.size) * (rng.standard_normal((n, t.size)) + 1j * rng.standard_normal((n, t.size)))
    return kendall.preshape(z)
