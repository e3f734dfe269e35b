"""The one manifold protocol: geometry every space supplies, and capabilities it declares.

Geometry (required): ``dim``, ``point_shape``, ``curvature_bounds``, ``injectivity_radius``,
``origin``, ``exp``, ``log``, ``inner``, ``_checks`` (what makes an array a point), ``project``
(snap a point that passed the checks onto the manifold), ``random_unit_tangent``.

Capabilities (declared, with the defaults below; the privacy layer reads them and never asks
which class a manifold is):

- ``homogeneous``: the unrestricted Laplace normalising constant does not depend on the footpoint
  (2021 Thm 1 then allows ``σ = Δ/ε``);
- ``radial`` with ``log_volume(ρ)``, ``log_volume_slope(ρ)``, ``radial_range``: the polar volume
  density ``J`` of the Laplace radius law; ``radial = False`` names the sampler it needs instead
  (``laplace_sampler``);
- ``laplace_sigma_limit``: the largest (exclusive) ``σ`` with an integrable unrestricted Laplace;
- ``flat_chart`` with ``to_chart``/``from_chart``: an isometry onto ``R^dim`` (closed-form mean,
  tangent Gaussian);
- ``round_sphere``: the space is ``S^d`` of curvature ``κ = κmin = κmax``, so the proven spread
  constant of the unit sphere at ``r√κ`` bounds ``‖log_m x − log_m y‖/(2r)`` on its balls
  (``privacy.sensitivity.spread_bound``);
- ``to_tangent_coordinates``/``from_tangent_coordinates``: coordinates of tangent vectors at ``x`` in
  an orthonormal basis of ``T_x M`` (wrapped noise, tangent PCA);
- ``ambient_dim`` with ``to_ambient``/``from_ambient``/``ambient_radius``: a Euclidean embedding
  for the extrinsic baselines (``None`` when there is none);
- float64: ``float_error``, ``exp_coordinate_offset``, ``max_reach``, ``grid_scales``;
- representation: ``canonical`` (public representative of an equivalence class), ``as_points`` /
  ``to_user`` and ``user_point_shapes`` (other layouts users hand in, e.g. real landmarks);
- the Fréchet mean's start: ``mean_start_stats`` / ``mean_start``.

Everything here broadcasts over leading batch axes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Literal, cast

import numpy as np
from numpy.typing import ArrayLike

from .._random import RngLike, as_generator
from .._typing import Array, BoolArray, FloatArray

__all__ = ["sn_over", "space_form_log_volume", "check_order", "select", "finite_rows", "Manifold"]

GRADIENT_BLOCK = 1 << 16  # entries of the (points × records) table of logs weighted_log_sums holds at once ...
GRADIENT_MIN_RECORDS = 16  # ... but at least this many records per block (per-point work is redone per block)
POINT_ATOL = 1e-6  # how far (relative) a record may sit off the manifold and still be projected


@dataclass(frozen=True)
class NewtonConstants:
    """Public constants of the certified mean's projected Newton steps on ``B_r(c)``
    (docs/theory.md §2): with ``d = ρ(μ, x̄)``, one step moves ``μ`` to within
    ``E(d + δ)·δ`` of ``x̄``, ``δ = (L d²/2 + e d + g)/(h − e)``, ``E(T) = sinh(√k T)/(√k T)``
    (``k = expansion``; ``E = 1`` when ``k = 0``: ``exp_μ`` is then 1-Lipschitz).

    ``L``: Lipschitz bound of ``Hess F`` along geodesics of the ball (parallel transport);
    ``e``: bound on the computed Hessian's error ``‖Ĥ − Hess F(μ)‖``; ``expansion``: ``−κmin``
    (0 on the sphere); ``extrinsic``: the projected extrinsic mean's distance bound to ``x̄``
    (``None``: no such start); ``tangent``: a bound on ``‖Hess F(c) − I‖``, making
    ``exp_c((1/n) Σ log_c x_i)`` a Newton step with ``Ĥ = I`` (``None``: not offered);
    ``cost``: a Newton pass in gradient passes (public, for the schedule's choice);
    ``cheaper``: ``(order, e, cost)`` or ``(order, e, cost, g)`` of cheaper passes
    ``newton_terms(..., order=order)`` computes (affine-invariant SPD: ``t coth t`` truncated
    sooner; the sphere: ``θ/sin θ`` and its Hessian weight by power series of a public degree,
    with their own gradient error ``g``), which the schedule may take for the first steps, where
    the bound is still far above their errors; ``g``: a bound on the error of the computed
    gradient ``‖ĝ − ∇F(μ)‖`` (affine-invariant SPD: the logarithms by matrix products,
    ``matrix.logm_band``), which adds ``g/(h − e)`` to ``δ``."""

    L: float
    e: float
    expansion: float = 0.0
    extrinsic: float | None = None
    tangent: float | None = None
    cost: float = 2.0
    cheaper: tuple[tuple[Any, ...], ...] = ()
    order: int | None = None  # the order of ``e`` and ``cost`` (``None``: the exact Hessian)
    g: float = 0.0

    def levels(self) -> list[tuple[Any, ...]]:
        """Every pass a Newton step may take, as ``(order, e, cost, g)``: the cheaper ones first,
        the space's own last (a cheaper entry without its own ``g`` has the space's)."""
        cheaper = [tuple(level) + (self.g,) * (4 - len(level)) for level in self.cheaper]
        return cheaper + [(self.order, self.e, self.cost, self.g)]


def select(mask: ArrayLike, a: ArrayLike, b: ArrayLike) -> Array:
    """``np.where(mask, a, b)`` for float or complex arrays without a branch per element: numpy's
    masked selects take longer the more mixed their mask is, i.e. the more records are invalid or
    clipped (a timing channel; docs/security.md, Timing (c)). Bitwise, so NaN and inf pass
    through unchanged; ``mask`` broadcasts against ``a`` and ``b``."""
    a, b = np.asarray(a), np.asarray(b)
    if np.iscomplexobj(a) or np.iscomplexobj(b):  # as (real, imaginary) pairs of floats
        a, b = np.ascontiguousarray(a, dtype=complex), np.ascontiguousarray(b, dtype=complex)
        pairs = select(np.expand_dims(mask, -1), a.view(float).reshape(a.shape + (2,)), b.view(float).reshape(b.shape + (2,)))
        return pairs.reshape(pairs.shape[:-2] + (-1,)).view(complex)
    a, b = np.asarray(a, float), np.asarray(b, float)
    shape = np.broadcast_shapes(np.shape(mask), a.shape, b.shape)
    b_bits = np.array(np.broadcast_to(b, shape)).view(np.uint64)
    out = np.broadcast_to(a, shape).view(np.uint64) ^ b_bits  # b ^ ((a ^ b)·mask): a where 1, b where 0
    out *= np.asarray(mask, np.uint64)
    out ^= b_bits
    return out.view(float)


def finite_rows(x: ArrayLike, point_ndim: int) -> BoolArray:
    """Which points of ``x`` (the last ``point_ndim`` axes) have only finite entries, with the same
    work for every point (``np.all`` along short axes stops early on a non-finite entry)."""
    x = np.asarray(x)
    batch = x.shape[:x.ndim - point_ndim]
    flat: Array = x.reshape(batch + (-1,))
    with np.errstate(invalid="ignore"):
        return cast(BoolArray, (flat * 0) @ np.ones(flat.shape[-1]) == 0)


def sn_over(t: ArrayLike, kappa: float = 1.0) -> FloatArray:
    """``sn_κ(t)/t`` with ``sn_κ(t) = sin(√κ t)/√κ`` (``κ > 0``), ``t`` (``κ = 0``),
    ``sinh(√−κ t)/√−κ`` (``κ < 0``): the Jacobi-field ratio of the space form, with its Taylor
    branch ``1 − κt²/6`` near 0. Its reciprocal is ``t/sin t`` at ``κ = 1``."""
    t = np.asarray(t, dtype=float)
    a = np.sqrt(abs(kappa)) * t
    small = np.abs(a) < 1e-4
    safe = np.where(small, 1.0, a)
    exact = (np.sin(safe) if kappa > 0 else np.sinh(safe)) / safe
    return np.where(small, 1.0 - kappa * t * t / 6.0, exact) if kappa != 0 else np.ones_like(t)


def _clip_scale(rho: FloatArray, radius: float) -> FloatArray:
    """``min(1, r/ρ)`` record by record (1 inside the ball), without a masked select."""
    with np.errstate(divide="ignore"):
        return np.minimum(1.0, radius / rho)


def space_form_log_volume(d: int, kappa: float) -> tuple[Callable[[FloatArray], FloatArray], Callable[[FloatArray], FloatArray]]:
    """``(log J, (log J)')`` on the space form of curvature ``κ``: ``J = sn_κ(ρ)^(d−1)``
    (``ρ``, ``R sin(ρ/R)``, ``sinh(cρ)/c``); ``log sinh`` written so that it never overflows."""
    if d == 1:
        return (lambda r: np.zeros_like(r)), (lambda r: np.zeros_like(r))
    if kappa == 0:
        return (lambda r: (d - 1) * np.log(r)), (lambda r: (d - 1) / r)
    if kappa > 0:
        R = 1.0 / np.sqrt(kappa)
        return (lambda r: (d - 1) * np.log(np.maximum(R * np.sin(r / R), 0.0))), (lambda r: (d - 1) / (R * np.tan(r / R)))
    c = np.sqrt(-kappa)
    return ((lambda r: (d - 1) * (c * r + np.log(-np.expm1(-2 * c * r)) - np.log(2 * c))),
            (lambda r: (d - 1) * c / np.tanh(c * r)))


def check_order(X: object, manifold: object, function: str) -> None:
    """Every public function takes the records first and the manifold second (sklearn and
    pyRiemann put the data first): a call with the two swapped gets a clear ``TypeError``."""
    if isinstance(X, Manifold) or not isinstance(manifold, Manifold):
        raise TypeError(f"{function} takes (X, manifold, ...): the records first, then the manifold; "
                        f"got {type(X).__name__} and {type(manifold).__name__}")


class Manifold:
    """Base of the spaces: the protocol every manifold implements. Subclasses are small frozen
    dataclasses (``Euclidean``, ``Sphere``, ``Hyperbolic``, ``SPDAffineInvariant``,
    ``SPDLogEuclidean``, ``KendallShape2D``).

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

    dtype: type[np.float64] | type[np.complex128] = np.float64
    volume_growth_rate: float = 0.0  # c with log(J(ρ)/ρ^(d−1)) − cρ ≤ 0: shifts the Laplace radius proposal

    # -- declared capabilities (defaults; see the module docstring) --------------------------
    homogeneous: bool = True
    radial: bool = True
    laplace_sampler: str = "radial"
    flat_chart: bool = False
    round_sphere: bool = False
    ambient_dim: int | None = None
    max_reach: float = np.inf  # largest ρ(origin, centre) + r float64 keeps exact enough (hyperbolic)
    user_point_shapes: tuple[tuple[int, ...], ...] = ()  # other layouts of one point accepted from users (real landmarks)

    if TYPE_CHECKING:  # the geometry every space defines (as a field, a property or a method), and its optional parts
        __dataclass_fields__: ClassVar[dict[str, Any]]  # every space is a frozen dataclass
        @property
        def dim(self) -> int: ...
        @property
        def point_shape(self) -> tuple[int, ...]: ...
        @property
        def curvature_bounds(self) -> tuple[float, float]: ...
        @property
        def injectivity_radius(self) -> float: ...
        @property
        def origin(self) -> Array: ...
        @property
        def radial_range(self) -> tuple[float, float]: ...
        def exp(self, x: ArrayLike, v: ArrayLike) -> Array: ...
        def log(self, x: ArrayLike, y: ArrayLike) -> Array: ...
        def inner(self, x: ArrayLike, u: ArrayLike, v: ArrayLike) -> FloatArray: ...
        def _checks(self, x: Array, atol: float) -> Iterable[tuple[BoolArray, str]]: ...
        def project(self, x: ArrayLike) -> Array: ...
        def random_unit_tangent(self, x: ArrayLike, size: int | tuple[int, ...] | None = None, *,
                                rng: RngLike = None) -> Array: ...
        # the registry's constructors (``manifolds.REGISTRY``: the CLI and the shared property suite)
        @classmethod
        def from_width(cls, width: int) -> Manifold: ...
        @classmethod
        def examples(cls) -> tuple[Manifold, ...]: ...
        # flat charts (``flat_chart``) and Euclidean embeddings (``ambient_dim``)
        def to_chart(self, x: ArrayLike) -> FloatArray: ...
        def from_chart(self, z: ArrayLike) -> Array: ...
        def to_ambient(self, x: ArrayLike) -> FloatArray: ...
        def from_ambient(self, z: ArrayLike, floor: float = ...) -> Array: ...
        def ambient_radius(self, center: ArrayLike, radius: float) -> float: ...
        # Newton steps of the certified mean (where ``newton_constants`` gives constants)
        def newton_terms(self, x: Array, X: Array, weights: Any, ball: Any = None,
                         order: int | None = ...) -> tuple[Any, ...]: ...
        def newton_step(self, x: Array, g: Array, H: Any) -> Array: ...
        # one draw of ``exp_p(ρ u)`` with Python floats (where ``single_polar_frame`` gives a frame)
        def polar_point(self, p: Any, rho: float, rng: np.random.Generator) -> Array: ...

    @property
    def laplace_sigma_limit(self) -> float:
        """Largest ``σ`` (exclusive) with an integrable unrestricted Laplace law."""
        c = self.volume_growth_rate
        return 1.0 / c if c > 0 else np.inf

    def log_volume(self, rho: ArrayLike) -> FloatArray:
        """``log J(ρ)`` of the polar volume density: ``(d−1) log sn_κ(ρ)`` on a space of constant
        curvature κ (a space that is not must override it, or declare ``radial = False``)."""
        with np.errstate(divide="ignore"):
            return space_form_log_volume(self.dim, self._constant_curvature())[0](np.asarray(rho, float))

    def log_volume_slope(self, rho: ArrayLike) -> FloatArray:
        """``d/dρ log J(ρ)``."""
        with np.errstate(divide="ignore"):
            return space_form_log_volume(self.dim, self._constant_curvature())[1](np.asarray(rho, float))

    def _constant_curvature(self) -> float:
        lo, hi = self.curvature_bounds
        if lo != hi:
            raise NotImplementedError(f"{self!r} has non-constant curvature: it must define its own log_volume")
        return hi

    def float_error(self, center: Array, radius: float) -> float:
        """A public bound on the float64 error of distances and clipping near ``B_r(center)``."""
        return 16 * np.finfo(float).eps * (1.0 + radius)

    def ball_problem(self, center: Array, radius: float) -> str | None:
        """Why float64 cannot carry every point of ``B_r(center)`` alike (SPD: condition numbers or
        scales where the check of one matrix would take a path that depends on it), as a message
        quoting public values only; ``None`` when it can (the default)."""
        return None

    def exp_coordinate_offset(self, center: Array) -> float | None:
        """How far the centre's coordinates already sit along an ``exp`` that can overflow float64
        (``None``: coordinates are bounded or linear in ``ρ``)."""
        return None

    def grid_scales(self, center: Array, radius: float, sigma: float) -> tuple[float, float]:
        """``(move, magnitude)`` in array coordinates: how far noise of scale ``σ`` moves a point,
        and the public magnitude of the coordinates (the default output grid rests on both)."""
        scale = float(np.max(np.abs(self.origin)))
        return min(sigma, scale), scale

    def ambient_floor(self, center: Array, radius: float) -> float:
        """A public floor ``from_ambient`` keeps projected points above (SPD: eigenvalues)."""
        return 1e-12

    def canonical(self, center: ArrayLike, points: Array) -> Array:
        """The released representative of each point's class, fixed by public ``center``."""
        return points

    def as_points(self, X: Any) -> Any:
        """Users' layouts (``user_point_shapes``) converted to this manifold's arrays."""
        return X

    def to_user(self, points: Array) -> Array:
        """Points in the layout users read (inverse of ``as_points``)."""
        return points

    def snap(self, points: ArrayLike, grid: float) -> Array:
        """Back onto the manifold after rounding to ``grid`` (post-processing of a release)."""
        return self.project(points)

    def mean_start_stats(self, block: ArrayLike, weights: Array) -> Any:
        """Partial sums of a block for the Fréchet mean's starting point (reduced by ``+``)."""
        return np.tensordot(weights, np.asarray(block), axes=(0, 0))

    def mean_start(self, stats: Any) -> Array:
        """The starting point from the reduced partial sums: the extrinsic mean, projected."""
        return self.project(stats)

    def checked_start_stats(self, block: ArrayLike, weights: Array) -> tuple[tuple[bool, str], Any]:
        """``(check_point(block), mean_start_stats(block, weights))`` in one pass over a block: the
        plain mean's first pass (log-Euclidean SPD shares one ``eigh`` between the two). No sums for
        a block that fails the check (its error is raised instead)."""
        checked = self.check_point(block)
        return checked, (self.mean_start_stats(block, weights) if checked[0] else None)

    def weighted_log_sum(self, x: Array, X: Array, weights: Array) -> Array:
        """``Σ_i w_i log_x(X_i)`` over the records' axis 0, for one point ``x``: ``−∇F(x)`` of a
        block. Spaces override it to avoid the ``(n, *point_shape)`` table of logs (the sphere
        with two matrix–vector products, affine-invariant SPD in the frame of ``x``)."""
        return np.tensordot(np.asarray(weights, float), self.log(x, np.asarray(X)), axes=(0, 0))

    records_order: Literal["C", "F"] = "C"  # memory order of prepared records (``privacy.release.prepare_records``)

    def prepare_rows(self, rows: int, n: int, log_sum: bool = True) -> int:
        """Records per block of ``privacy.release.prepare_records`` of ``n`` records (``rows`` its
        default, which bounds the temporaries of the numpy passes; ``log_sum`` as in
        ``prepare_block``); a space whose pass needs fewer temporaries may take more."""
        return rows

    def centred_start_stats(self, block: Array, center: ArrayLike, weight: float) -> Any:
        """``mean_start_stats`` of ``block − center`` with every weight ``weight``: the extrinsic
        start's statistics around the centre, from a block of prepared records."""
        return self.mean_start_stats(np.asarray(block) - np.asarray(center, self.dtype), np.full(len(block), weight))

    def prepare_block(self, X: Array, center: Array, radius: float, weight: float, log_sum: bool = True,
                      keep: bool = True, out: Array | None = None) -> tuple[Any, ...] | None:
        """A space's fused pass for one block of ``privacy.release.prepare_records``, or ``None``
        (the generic path: ``belongs``, ``project``, ``clip_and_log_sum``); with ``log_sum``
        false it may return ``None`` for the sum of logs, with ``keep`` false ``None`` for the
        records (only their log sum is needed: flat charts). ``out``: where the caller keeps the
        block's records; a space may write them there and return ``out`` itself (no copy)."""
        return None

    def newton_constants(self, radius: float, n: int) -> NewtonConstants | None:
        """``NewtonConstants`` for Newton steps of the certified mean on a ball of radius
        ``radius`` holding ``n`` records, or ``None``: no proven constants here, the certified mean
        takes gradient steps only (``stats.frechet.certified_schedule``). A space giving constants
        also gives ``newton_terms`` and ``newton_step`` (the sphere, affine-invariant SPD)."""
        return None

    def weighted_log_sums(self, points: ArrayLike, X: ArrayLike, weights: Array) -> Array:
        """``Σ_i w_i log_{p_j}(X_i)`` for a batch of points ``(P, *point_shape)`` (KNG's proposals):
        the ``(points × records)`` table of logs, a block of records at a time (bounded memory)."""
        points, X = np.asarray(points), np.asarray(X)
        step = max(GRADIENT_MIN_RECORDS, GRADIENT_BLOCK // max(points.size, 1))
        out: Any = 0.0
        for i in range(0, X.shape[0], step):
            logs = self.log(points[:, None], X[i:i + step])  # (P, block, *point_shape)
            out = out + np.tensordot(logs, weights[i:i + step], axes=([1], [0]))
        return cast(Array, out)

    def karcher_terms(self, x: Array, X: Array, weights: Array, hessian: bool = False) -> tuple[Array, float, Any]:
        """One pass of the plain mean over a block at ``x``: ``(Σ w_i log_x(X_i), max_i ρ(x, X_i),
        hess)``. With ``hessian=True`` a space that can gives ``hess``, the map
        ``v ↦ Σ w_i Hess(½ρ²(·, X_i))(x)[v]`` on ``T_x`` built from the same decompositions (for
        Newton steps); ``None`` here."""
        v = self.log(x, np.asarray(X))
        far = float(np.max(self.norm(x, v))) if len(v) else 0.0
        return np.tensordot(np.asarray(weights, float), v, axes=(0, 0)), far, None

    def enclosing_lift(self, x: ArrayLike, X: ArrayLike) -> tuple[FloatArray, float, bool, Callable[[FloatArray], Array]] | None:
        """Unit vectors ``Y`` (``(n, D)``, real) with ``ρ(P(c), X_i) ≤ scale·∠(c, Y_i)`` for every
        unit ``c`` (``P(c)`` the point ``c`` stands for), as ``(Y, scale, exact, to_point)``:
        ``exact`` when the bound is an equality, so that the smallest enclosing cap of the ``Y_i``
        is the smallest enclosing ball (the sphere). ``None`` when the space has no such lift.
        ``x``: a point near the records (it fixes the representatives, e.g. Kendall's rotation)."""
        return None

    # -- derived geometry ------------------------------------------------------------------
    def norm(self, x: ArrayLike, v: ArrayLike) -> FloatArray:
        """Riemannian norm ``‖v‖_x`` of the tangent vector ``v`` at ``x``; shape ``(...)``."""
        return np.sqrt(np.maximum(self.inner(x, v, v), 0.0))

    def to_tangent_coordinates(self, x: ArrayLike, v: ArrayLike) -> FloatArray:
        """Coordinates ``(..., dim)`` of the tangent vector ``v`` at ``x`` in an orthonormal basis of
        ``T_x M`` (a fixed function of ``x``): ``inner(x, u, v)`` is the dot product of the
        coordinates. Inverse: ``from_tangent_coordinates``."""
        raise NotImplementedError(f"{type(self).__name__} must define to_tangent_coordinates")

    def from_tangent_coordinates(self, x: ArrayLike, c: ArrayLike) -> Array:
        """The tangent vector at ``x`` with orthonormal coordinates ``c`` (``(..., dim)``)."""
        raise NotImplementedError(f"{type(self).__name__} must define from_tangent_coordinates")

    def dist(self, x: ArrayLike, y: ArrayLike) -> FloatArray:
        """Geodesic distance ``ρ(x, y)``.

        Parameters
        ----------
        x, y : array_like
            Points, shape ``(..., *point_shape)``; the batch axes broadcast.

        Returns
        -------
        numpy.ndarray
            Distances, shape ``(...)``: radians on the unit sphere, ``‖Logm(x^-½ y x^-½)‖_F``
            on affine-invariant SPD, and so on (docs/theory.md §1).
        """
        return self.norm(x, self.log(x, y))

    @property
    def assumption_radius(self) -> float:
        """``r* = ½ min{inj M, π/(2√κmax)}`` (``inf`` when ``κmax ≤ 0``): a private release needs
        ``radius < r*`` (Assumption 1, docs/theory.md §3)."""
        kmax = self.curvature_bounds[1]
        bound = np.pi / (2.0 * np.sqrt(kmax)) if kmax > 0 else np.inf
        return 0.5 * min(self.injectivity_radius, bound)

    # -- points ----------------------------------------------------------------------------
    def _shape_ok(self, x: Array) -> bool:
        nd = len(self.point_shape)
        return x.ndim >= nd and tuple(x.shape[x.ndim - nd:]) == tuple(self.point_shape)

    def batch_shape(self, x: Array) -> tuple[int, ...]:
        return x.shape[: x.ndim - len(self.point_shape)]

    def belongs(self, x: ArrayLike, atol: float = POINT_ATOL) -> BoolArray:
        """Boolean mask over the batch axes: which entries are finite points of the manifold
        (within the relative tolerance ``atol``). Raises ``ValueError`` on a wrong point shape."""
        x = np.asarray(x)
        if not self._shape_ok(x):
            raise ValueError(f"points of {self!r} have shape {self.point_shape}, got an array of shape {x.shape}")
        axes = tuple(range(x.ndim - len(self.point_shape), x.ndim))
        ok = finite_rows(x, len(self.point_shape))
        safe = select(np.expand_dims(ok, axes), x, self._any_point())
        for mask, _ in self._checks(safe, atol):
            ok = ok & mask
        return ok

    def check_point(self, x: ArrayLike, atol: float = POINT_ATOL) -> tuple[bool, str]:
        """Whether every entry of ``x`` is a point of the manifold.

        Parameters
        ----------
        x : array_like
            Points, shape ``(..., *point_shape)``.
        atol : float
            Relative tolerance of the membership checks.

        Returns
        -------
        tuple of (bool, str)
            ``(ok, reason)``; ``reason`` is empty when ``ok`` and never quotes data values.
        """
        x = np.asarray(x)
        if not self._shape_ok(x):
            return False, f"expected shape (..., {', '.join(map(str, self.point_shape))}), got {x.shape}"
        if not np.all(np.isfinite(x)):
            return False, "contains NaN or infinite entries"
        for mask, reason in self._checks(x, atol):
            if not np.all(mask):
                return False, reason
        return True, ""

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

    def _validate_one(self, x: Array) -> Array | None:
        """A fast path of ``validate_point`` for one point with Python floats (single draws check
        their footpoint on every call): the projected point when ``x`` passes the same checks, else
        ``None`` and the general path decides (and names the reason). Default: always ``None``."""
        return None

    def single_polar_frame(self, x: Array) -> list[Any] | None:
        """One validated point as the list that ``polar_point(frame, ρ, rng)`` (one draw of
        ``exp_x(ρ u)``, ``u`` a uniform unit tangent, with Python floats) takes, or ``None`` where
        the space has no such path (the default)."""
        return None

    def _any_point(self) -> Array:
        """A fixed valid point, used to keep arithmetic on masked-out entries harmless."""
        return self.origin

    # -- balls -----------------------------------------------------------------------------
    def clip_to_ball(self, x: ArrayLike, center: ArrayLike, radius: float) -> Array:
        """Clip every point into the ball ``B_radius(center)``, record by record (docs/theory.md §5):
        ``x ↦ exp_c(min(1, r/ρ(c, x)) log_c x)``; points inside are returned unchanged.

        Parameters
        ----------
        x : array_like
            Points, shape ``(..., *point_shape)``.
        center : array_like
            One point, the ball's centre.
        radius : float
            The ball's radius, in the manifold's geodesic distance.

        Returns
        -------
        numpy.ndarray
            The clipped points, shape of ``x``.
        """
        return self._clip_with_logs(np.asarray(x), center, radius)[0]

    def clip_and_log_sum(self, x: ArrayLike, center: ArrayLike, radius: float,
                         weights: ArrayLike) -> tuple[Array, BoolArray, Array]:
        """``clip_to_ball`` of a block of records ``x`` (``(n, *point_shape)``), the mask of the
        records it moved, and ``Σ w_i log_center(x̃_i)`` over the clipped ``x̃_i`` — the certified
        mean's first gradient (and, on a flat chart, its closed form) — from the same pass: the log
        of a clipped record is its log scaled by ``r/ρ``."""
        x = np.asarray(x)
        out, v, scale, outside = self._clip_with_logs(x, center, radius)
        w = np.asarray(weights, float) * scale
        return out, outside, np.tensordot(w, v, axes=(0, 0))

    def clipped_log_sum(self, x: ArrayLike, center: ArrayLike, radius: float, weights: ArrayLike) -> tuple[BoolArray, Array]:
        """``(outside, Σ w_i log_center(x̃_i))`` of ``clip_and_log_sum`` without building the
        clipped records (the mean on a flat chart needs only their log mean): the same work for
        every record."""
        v = self.log(center, np.asarray(x))
        rho = self.norm(center, v)
        outside = ~(rho <= radius)
        scale = _clip_scale(rho, radius)
        return outside, np.tensordot(np.asarray(weights, float) * scale, v, axes=(0, 0))

    def _clip_with_logs(self, x: Array, center: ArrayLike, radius: float) -> tuple[Array, Array, FloatArray, BoolArray]:
        """``(clipped, log_center(x), min(1, r/ρ), outside)``. Every record is rebuilt by ``exp``,
        inside the ball or not: the work must not depend on how many records were clipped (an
        adversarial review measured ε_LB ≈ 4.5 from wall-clock time when only the clipped ones
        were rebuilt)."""
        v = self.log(center, x)
        rho = self.norm(center, v)
        outside = ~(rho <= radius)
        scale = _clip_scale(rho, radius)
        rebuilt = self.exp(center, v * self._expand(scale))
        out = select(self._expand(outside), rebuilt, x)
        return out, v, scale, outside

    def random_point(self, center: ArrayLike, radius: float, size: int | tuple[int, ...] | None = None, *,
                     rng: RngLike = None) -> Array:
        """Points ``exp_c(ρ u)``, ``u`` uniform unit tangent, ``ρ = radius·U^(1/dim)``.

        For tests and simulations; uniform in the tangent ball, not in Riemannian volume.
        """
        rng = as_generator(rng)
        u = self.random_unit_tangent(center, size=size, rng=rng)
        rho = radius * rng.uniform(size=self.batch_shape(u)) ** (1.0 / self.dim)
        return self.exp(center, u * self._expand(rho))

    def _expand(self, a: ArrayLike) -> Array:
        """Append singleton axes so a batch-shaped array multiplies points or tangent vectors."""
        a = np.asarray(a)
        return a.reshape(a.shape + (1,) * len(self.point_shape))

    def _out_shape(self, x: ArrayLike, size: int | tuple[int, ...] | None) -> tuple[int, ...]:
        batch = self.batch_shape(np.asarray(x))
        if size is None:
            return batch
        shape = cast("tuple[int, ...]", (size,)) if np.isscalar(size) else tuple(cast("Iterable[int]", size))
        return np.broadcast_shapes(shape, batch) if batch else shape
