"""The one manifold protocol, with the operations every space derives from exp/log/inner.

A manifold subclass supplies ``dim``, ``point_shape``, ``curvature_bounds``,
``injectivity_radius``, ``exp``, ``log``, ``inner``, ``_checks`` (what makes an array a point),
``project`` (snap a point that passed the checks onto the manifold) and
``random_unit_tangent``. Everything here broadcasts over leading batch axes.
"""

import numpy as np

from .._random import as_generator

POINT_ATOL = 1e-6  # how far (relative) a record may sit off the manifold and still be projected


class Manifold:
    """Base of the six spaces. Subclasses are small frozen dataclasses."""

    dtype = np.float64
    volume_growth_rate = 0.0  # c with log(J(ρ)/ρ^(d−1)) − cρ ≤ 0: shifts the Laplace radius proposal

    # -- derived geometry ------------------------------------------------------------------
    def norm(self, x, v):
        """Riemannian norm of the tangent vector ``v`` at ``x``; shape ``(...)``."""
        return np.sqrt(np.maximum(self.inner(x, v, v), 0.0))

    def dist(self, x, y):
        """Geodesic distance; shape ``(...)``."""
        return self.norm(x, self.log(x, y))

    @property
    def assumption_radius(self):
        """``r* = ½ min{inj M, π/(2√κmax)}`` of SPEC §3 (``inf`` when ``κmax ≤ 0``)."""
        kmax = self.curvature_bounds[1]
        bound = np.pi / (2.0 * np.sqrt(kmax)) if kmax > 0 else np.inf
        return 0.5 * min(self.injectivity_radius, bound)

    # -- points ----------------------------------------------------------------------------
    def _shape_ok(self, x):
        nd = len(self.point_shape)
        return x.ndim >= nd and tuple(x.shape[x.ndim - nd:]) == tuple(self.point_shape)

    def batch_shape(self, x):
        return x.shape[: x.ndim - len(self.point_shape)]

    def belongs(self, x, atol=POINT_ATOL):
        """Boolean mask over the batch axes: which entries are finite points of the manifold."""
        x = np.asarray(x)
        if not self._shape_ok(x):
            raise ValueError(f"points of {self!r} have shape {self.point_shape}, got an array of shape {x.shape}")
        axes = tuple(range(x.ndim - len(self.point_shape), x.ndim))
        ok = np.all(np.isfinite(x), axis=axes)
        safe = np.where(np.expand_dims(ok, axes), x, self._any_point())
        for mask, _ in self._checks(safe, atol):
            ok = ok & mask
        return ok

    def check_point(self, x, atol=POINT_ATOL):
        """``(ok, reason)``: is every entry of ``x`` a point? The reason never quotes data values."""
        x = np.asarray(x)
        if not self._shape_ok(x):
            return False, f"expected shape (..., {', '.join(map(str, self.point_shape))}), got {x.shape}"
        if not np.all(np.isfinite(x)):
            return False, "contains NaN or infinite entries"
        for mask, reason in self._checks(x, atol):
            if not np.all(mask):
                return False, reason
        return True, ""

    def validate_point(self, x, name="point"):
        """Return ``x`` as an array or raise ``ValueError`` naming the parameter."""
        x = np.asarray(x, dtype=self.dtype)
        ok, reason = self.check_point(x)
        if not ok:
            raise ValueError(f"{name} is not a point of {self!r}: {reason}")
        return self.project(x)

    def _any_point(self):
        """A fixed valid point, used to keep arithmetic on masked-out entries harmless."""
        return self.origin

    # -- balls -----------------------------------------------------------------------------
    def clip_to_ball(self, x, center, radius):
        """SPEC §5: ``x ↦ exp_c(min(1, r/ρ(c, x)) log_c x)``, record by record."""
        v = self.log(center, x)
        rho = self.norm(center, v)
        inside = rho <= radius
        scale = np.where(inside, 1.0, radius / np.where(inside, 1.0, rho))
        clipped = self.exp(center, v * self._expand(scale))
        return np.where(self._expand(inside), x, clipped)

    def random_point(self, center, radius, size=None, rng=None):
        """Points ``exp_c(ρ u)``, ``u`` uniform unit tangent, ``ρ = radius·U^(1/dim)``.

        For tests and simulations; uniform in the tangent ball, not in Riemannian volume.
        """
        rng = as_generator(rng)
        u = self.random_unit_tangent(center, size=size, rng=rng)
        rho = radius * rng.uniform(size=self.batch_shape(u)) ** (1.0 / self.dim)
        return self.exp(center, u * self._expand(rho))

    def _expand(self, a):
        """Append singleton axes so a batch-shaped array multiplies points or tangent vectors."""
        a = np.asarray(a)
        return a.reshape(a.shape + (1,) * len(self.point_shape))

    def _out_shape(self, x, size):
        batch = self.batch_shape(np.asarray(x))
        if size is None:
            return batch
        size = (size,) if np.isscalar(size) else tuple(size)
        return np.broadcast_shapes(size, batch) if batch else size
