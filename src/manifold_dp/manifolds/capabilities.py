"""What a manifold declares to the privacy layer: capabilities, never its class.

The privacy layer reads these attributes (``tests/test_structure.py`` forbids it to ask which
class a manifold is); a space claims a capability by overriding its default here and supplying
the members it brings:

- ``homogeneous``: the unrestricted Laplace normalising constant does not depend on the footpoint
  (2021 Thm 1 then allows ``σ = Δ/ε``); off by default, so a space that does not claim it gets
  ``σ = 2Δ/ε``;
- ``radial`` with ``log_volume(ρ)``, ``log_volume_slope(ρ)`` (the geometry layer), ``radial_range``:
  the polar volume density ``J`` of the Laplace radius law; ``volume_growth_rate`` and
  ``laplace_sigma_limit``: the largest (exclusive) ``σ`` with an integrable unrestricted Laplace;
- ``laplace_sampler``: the space's exact sampler of the Riemannian Laplace law (and of the
  Riemannian Gaussian where it has one), an object following ``LaplaceSampler``: the radial
  sampler by default (``privacy.radial_sampler.RADIAL``: the radius from ``log_volume``, a uniform
  direction); a space without a radial density registers its own (affine-invariant SPD:
  ``privacy.spd_sampler.SPD_LOG_EIGEN``), and the privacy layer asks the object, never its name;
- ``flat_chart`` with ``to_chart``/``from_chart``: an isometry onto ``R^dim`` (closed-form mean,
  tangent Gaussian);
- ``round_sphere``: its balls below ``r*`` are balls of ``S^d`` of curvature ``κ = κmin = κmax``
  (the sphere; SO(3), whose balls are those of ``S³(2)``), so the proven spread
  constant of the unit sphere at ``r√κ`` bounds ``‖log_m x − log_m y‖/(2r)`` on its balls
  (``privacy.sensitivity.spread_bound``);
- ``ambient_dim`` with ``to_ambient``/``from_ambient``/``ambient_radius``: a Euclidean embedding
  for the extrinsic baselines (``None`` when there is none); ``to_ambient`` must round each point
  within ``(4D + 64)·2⁻⁵³·‖φ‖`` of its exact embedding (a few products per coordinate), which the
  ambient sensitivity budgets (``privacy.sensitivity.ambient_float_error``);
- ``assumption_radius``: ``r*`` of Assumption 1;
- ``enclosing_lift``: a lift of the records to a sphere for the smallest enclosing ball;
- representation: ``canonical`` (public representative of an equivalence class), ``as_points`` /
  ``to_user`` and ``user_point_shapes`` (other layouts users hand in, e.g. real landmarks).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np
from numpy.typing import ArrayLike

from .._typing import Array, FloatArray
from .geometry import ManifoldGeometry

if TYPE_CHECKING:
    from .base import Manifold

__all__ = ["LaplaceSampler", "PrivacyCapabilities"]


@runtime_checkable
class LaplaceSampler(Protocol):
    """An exact sampler of the Riemannian Laplace law ``∝ exp(−ρ(η, x)/σ)`` on the manifolds that
    declare it (``PrivacyCapabilities.laplace_sampler``), and of the Riemannian Gaussian
    ``∝ exp(−ρ²/(2σ²))`` where ``gaussian``. Every method takes the manifold first; what it
    decides (refusals, acceptances, constants) depends on public parameters only."""

    @property
    def name(self) -> str:
        """A short name quoted in messages (``"radial"``, ``"spd_log_eigen"``)."""
    @property
    def description(self) -> str:
        """How a release's certificate reports the sampler."""
    @property
    def radial(self) -> bool:
        """Whether the radius comes from the manifold's ``log_volume`` and the direction uniformly."""
    @property
    def gaussian(self) -> bool:
        """Whether it also draws the Riemannian Gaussian exactly."""
    @property
    def gaussian_calibration(self) -> str | None:
        """The Riemannian Gaussian's GDP calibration on a curved space (``privacy.gdp.profile_method``)."""

    def supports_ball(self, manifold: Manifold) -> bool:
        """Whether laws restricted to a ball can be drawn without proposals outside it (the cap
        sampler of ``privacy.mechanisms``)."""
    def check_samplable(self, manifold: Manifold, sigma: float, rho_max: float) -> None:
        """Raise ``ValueError`` where the Laplace law at ``σ`` (truncated at ``rho_max``) is hopeless."""
    def draw(self, manifold: Manifold, eta: Array, sigma: float, n: int, rng: np.random.Generator,
             rho_max: float) -> tuple[Array, float]:
        """``n`` draws at footpoint(s) ``eta`` truncated at ``rho_max``, and the acceptance."""
    def restricted_acceptance(self, manifold: Manifold, sigma: float, center: Array, radius: float, edge: Array,
                              trials: int, rng: np.random.Generator) -> float:
        """A public estimate of the acceptance of the law at the boundary point ``edge`` restricted
        to ``B_radius(center)`` (proposals truncated at ``2·radius``)."""
    def footpoint_constants(self, manifold: Manifold, eta: Array) -> Any:
        """What single draws at one validated footpoint reuse."""
    def single_sampler(self, manifold: Manifold, sigma: float) -> Any:
        """The state of single draws at ``σ`` (public parameters only), kept by the law."""
    def single_draw(self, manifold: Manifold, kept: Any, eta: Array, constants: Any,
                    rng: np.random.Generator) -> tuple[Array, int]:
        """One draw at ``eta`` with Python floats, ``(x, proposals)``."""
    def check_gaussian(self, manifold: Manifold, sigma: float) -> None:
        """Raise ``ValueError`` where the exact Gaussian sampler at ``σ`` is hopeless."""
    def gaussian_draw(self, manifold: Manifold, eta: Array, sigma: float, n: int,
                      rng: np.random.Generator) -> Array:
        """``n`` exact draws of the Riemannian Gaussian at ``eta``, shape ``(n, *point_shape)``."""


@cache
def _radial_sampler() -> LaplaceSampler:
    """``privacy.radial_sampler.RADIAL``, imported once (single draws ask for it on every call):
    the sampler's code lives with the privacy layer, which imports this module."""
    from ..privacy.radial_sampler import RADIAL

    return RADIAL


class PrivacyCapabilities(ManifoldGeometry):
    """The privacy capabilities layer of ``base.Manifold``: declared defaults (see the module
    docstring) and the members a space brings with each capability it claims."""

    volume_growth_rate: float = 0.0  # c with log(J(ρ)/ρ^(d−1)) − cρ ≤ 0: shifts the Laplace radius proposal

    homogeneous: bool = False  # claimed by each space that is (every registered one): the safe default is σ = 2Δ/ε

    radial: bool = True


    flat_chart: bool = False

    round_sphere: bool = False

    ambient_dim: int | None = None
    # how far the projection back moves the point per unit norm of isotropic ambient noise:
    # √(d/D) (the tangential share) over the embedding's stretch of small distances (chord/ρ → s)
    ambient_noise_factor: float = 1.0

    radius_units: str = "geodesic distance"  # what a radius measures, in the command line's --help
    points_hint: str = ""  # how records of this space are laid out, for a RecordsWarning that found none inside
    user_point_shapes: tuple[tuple[int, ...], ...] = ()  # other layouts of one point accepted from users (real landmarks)


    @property
    def radial_range(self) -> tuple[float, float]:
        """``(0, ρ_max)``: how far the polar radius of a radial law reaches around any point; the
        injectivity radius unless the space says otherwise."""
        return 0.0, float(self.injectivity_radius)

    @property
    def laplace_sampler(self) -> LaplaceSampler:
        """The space's exact Laplace sampler (see the module docstring); the radial one here."""
        return _radial_sampler()

    if TYPE_CHECKING:  # the members a capability brings
        # flat charts (``flat_chart``) and Euclidean embeddings (``ambient_dim``)
        def to_chart(self, x: ArrayLike) -> FloatArray: ...
        def from_chart(self, z: ArrayLike) -> Array: ...
        def to_ambient(self, x: ArrayLike) -> FloatArray: ...
        def from_ambient(self, z: ArrayLike, floor: float = ...) -> Array: ...
        def ambient_radius(self, center: ArrayLike, radius: float) -> float: ...

    @property
    def laplace_sigma_limit(self) -> float:
        """Largest ``σ`` (exclusive) with an integrable unrestricted Laplace law."""
        c = self.volume_growth_rate
        return 1.0 / c if c > 0 else np.inf

    @property
    def assumption_radius(self) -> float:
        """``r* = ½ min{inj M, π/(2√κmax)}`` (``inf`` when ``κmax ≤ 0``): a private release needs
        ``radius < r*`` (Assumption 1, docs/theory.md §3)."""
        kmax = self.curvature_bounds[1]
        bound = np.pi / (2.0 * np.sqrt(kmax)) if kmax > 0 else np.inf
        return 0.5 * min(self.injectivity_radius, bound)

    def enclosing_lift(self, x: ArrayLike, X: ArrayLike) -> tuple[FloatArray, float, bool, Callable[[FloatArray], Array]] | None:
        """Unit vectors ``Y`` (``(n, D)``, real) with ``ρ(P(c), X_i) ≤ scale·∠(c, Y_i)`` for every
        unit ``c`` (``P(c)`` the point ``c`` stands for), as ``(Y, scale, exact, to_point)``:
        ``exact`` when the bound is an equality, so that the smallest enclosing cap of the ``Y_i``
        is the smallest enclosing ball (the sphere). ``None`` when the space has no such lift.
        ``x``: a point near the records (it fixes the representatives, e.g. Kendall's rotation)."""
        return None

    def canonical(self, center: ArrayLike, points: Array) -> Array:
        """The released representative of each point's class, fixed by public ``center``."""
        return points

    def as_points(self, X: Any) -> Any:
        """Users' layouts (``user_point_shapes``) converted to this manifold's arrays."""
        return X

    def to_user(self, points: Array) -> Array:
        """Points in the layout users read (inverse of ``as_points``)."""
        return points

