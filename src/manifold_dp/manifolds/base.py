"""The manifold: one base class joining four layers, each in its own module.

1. **Geometry** (``geometry``): the ``Geometry`` protocol — ``dim``, ``point_shape``, ``origin``,
   ``curvature_bounds``, ``injectivity_radius``, ``exp``, ``log``, ``dist``, ``inner``, ``norm``,
   ``belongs``/``check_point``, ``project``, ``random_unit_tangent``, tangent coordinates — and
   ``ManifoldGeometry``, which derives most of it (and the polar volume density ``log_volume``
   where it exists) from what a space writes: ``exp``, ``log``, ``inner``, ``_checks`` (what makes
   an array a point), ``project``, ``random_unit_tangent``.
2. **Privacy capabilities** (``capabilities``): what the privacy layer may assume — homogeneity,
   a radial volume density, the space's Laplace sampler, a flat chart, a Euclidean embedding,
   ``r*`` — declared, never inferred from the class.
3. **The float64 model** (``float_model``): error bounds, reach, output grid.
4. **Record passes** (``kernels``): fused, compiled and power-series passes over records, with
   generic defaults.

A new space writes the geometry and claims only the capabilities it has; the defaults of the
other layers hold for any space whose coordinates float64 carries well. Everything broadcasts
over leading batch axes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from .._typing import Array
from .capabilities import PrivacyCapabilities
from .float_model import Float64Model
from .geometry import POINT_ATOL, Geometry, ManifoldGeometry, sn_over, space_form_log_volume
from .kernels.arrays import finite_rows, select
from .kernels.passes import GRADIENT_BLOCK, GRADIENT_MIN_RECORDS, NewtonConstants, RecordPasses

__all__ = ["sn_over", "space_form_log_volume", "check_order", "select", "finite_rows", "Manifold", "Geometry",
           "ManifoldGeometry", "NewtonConstants", "POINT_ATOL", "GRADIENT_BLOCK", "GRADIENT_MIN_RECORDS"]


def check_order(X: object, manifold: object, function: str) -> None:
    """Every public function takes the records first and the manifold second (sklearn and
    pyRiemann put the data first): a call with the two swapped gets a clear ``TypeError``."""
    if isinstance(X, Manifold) or not isinstance(manifold, Manifold):
        raise TypeError(f"{function} takes (X, manifold, ...): the records first, then the manifold; "
                        f"got {type(X).__name__} and {type(manifold).__name__}")


class Manifold(PrivacyCapabilities, Float64Model, RecordPasses):
    """Base of the spaces: the four layers of the module docstring. Subclasses are small frozen
    dataclasses (``Euclidean``, ``Sphere``, ``Hyperbolic``, ``SPDAffineInvariant``,
    ``SPDLogEuclidean``, ``KendallShape2D``, ``SO3``) that implement the ``Geometry`` protocol and claim
    their capabilities.

    Points have shape ``(..., *point_shape)`` and tangent vectors the same shape as their base
    point; every method broadcasts over the leading batch axes, base point first. Formulas and
    curvature of each space: docs/theory.md §1.

    Attributes
    ----------
    dim : int
        The manifold's dimension ``d`` (not the ambient one).
    point_shape : tuple of int
        The array shape of one point.
    curvature_bounds : tuple of float
        ``(κmin, κmax)``, bounds on the sectional curvature.
    injectivity_radius : float
        Below this distance ``log`` is the inverse of ``exp``.
    origin : numpy.ndarray
        A fixed reference point (north pole, ``e0``, the identity, the regular ``k``-gon, ``0``).

    Methods
    -------
    exp(x, v)
        The point reached at time 1 along the geodesic from ``x`` with initial velocity ``v``.
    log(x, y)
        The tangent vector at ``x`` pointing to ``y`` with length ``ρ(x, y)`` (inverse of ``exp``
        within the injectivity radius).
    inner(x, u, v)
        The Riemannian inner product of tangent vectors ``u``, ``v`` at ``x``; shape ``(...)``.
    project(x)
        Snap an array that passed the point checks exactly onto the manifold.
    random_unit_tangent(x, size=None, *, rng=None)
        Unit tangent vectors at ``x``, uniform on the unit sphere of ``T_x M``.

    Examples
    --------
    >>> import numpy as np
    >>> from manifold_dp import Sphere
    >>> s = Sphere(2)
    >>> x, y = s.origin, np.array([1.0, 0.0, 0.0])
    >>> v = s.log(x, y)
    >>> bool(np.allclose(s.exp(x, v), y)), round(float(s.dist(x, y)), 6)
    (True, 1.570796)
    """

    if TYPE_CHECKING:  # the registry's constructors (``manifolds.REGISTRY``: the CLI and the shared property suite)
        @classmethod
        def from_width(cls, width: int) -> Manifold: ...
        @classmethod
        def examples(cls) -> tuple[Manifold, ...]: ...

    def validate_point(self, x: ArrayLike, name: str = "point") -> Array:
        """``x`` as an array projected onto the manifold, or ``ValueError`` naming the parameter
        ``name`` (with ``check_point``'s reason) when it is not a point."""
        x = np.asarray(x, dtype=self.dtype)
        if x.shape == tuple(self.point_shape):
            quick = self._validate_one(x)
            if quick is not None:
                return quick
        ok, reason = self.check_point(x)
        if not ok:
            raise ValueError(f"{name} is not a point of {self!r}: {reason}")
        return self.project(x)

