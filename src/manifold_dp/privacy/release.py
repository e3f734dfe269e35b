"""The public path: ``private_frechet_mean`` validates, clips, averages, calibrates and samples.

It never returns the non-private mean. What it returns carries a certificate naming the
mechanism, the theorem, ε, δ, the sensitivity and which bound it came from, and the scale.
"""

from dataclasses import dataclass, field

import numpy as np

from .._random import as_generator
from .._validation import check_delta, check_epsilon, check_positive, check_radius
from scipy.stats import gamma as gamma_dist

from ..manifolds import Euclidean, Hyperbolic, KendallShape2D, SPDAffineInvariant, SPDLogEuclidean
from ..manifolds._matrix import funm_sym
from ..stats._records import is_dask
from ..stats.frechet import frechet_mean, gradient_norm
from .accounting import GaussianEvent, PureEvent
from .calibration import analytic_gaussian_sigma, classical_gaussian_sigma
from .mechanisms import AmbientNoise, KNormGradient, RiemannianLaplace, TangentGaussian, laplace_sigma_limit
from .sensitivity import ambient_sensitivity, frechet_mean_sensitivity, hessian_lower_bound

MECHANISMS = ("laplace", "kng", "tangent_gaussian", "ambient_laplace", "ambient_gaussian", "coordinate_laplace")
OPTIMISATION_SLACK = 1e-6  # the mean is certified within OPTIMISATION_SLACK·Δ of the exact one


@dataclass(frozen=True)
class PrivateRelease:
    """A private Fréchet mean and its certificate. ``point`` is the only data-dependent value."""

    point: np.ndarray
    epsilon: float
    delta: float
    mechanism: str
    sensitivity: float
    scale: float
    certificate: dict = field(repr=False)

    def to_dict(self):
        p = np.asarray(self.point)
        point = {"real": p.real.tolist(), "imag": p.imag.tolist()} if np.iscomplexobj(p) else p.tolist()
        return {"point": point, "certificate": self.certificate}

    def summary(self):
        c = self.certificate
        lines = [f"{c['mechanism']}: ({c['epsilon']:g}, {c['delta']:g})-DP — {c['theorem']}"]
        for key in ("manifold", "n", "radius", "sensitivity", "sensitivity_bound", "scale", "scale_rule", "restriction", "sampler", "sampler_acceptance"):
            lines.append(f"  {key}: {c[key]}")
        return "\n".join(lines)


def prepare_records(manifold, X, center, radius):
    """SPEC §5, record by record: non-finite or off-manifold records become ``center``
    (data-independent), the rest are projected onto the manifold and clipped into
    ``B_radius(center)``. Returns ``(records, n_replaced)``; ``n_replaced`` is not private.
    Kendall accepts raw configurations ``(n, k, 2)`` or pre-shapes ``(n, k)``."""
    if isinstance(manifold, KendallShape2D):
        X = np.asarray(X)
        if not np.iscomplexobj(X) and X.ndim == 3 and X.shape[-1] == 2:
            with np.errstate(all="ignore"):
                X = manifold.preshape(X)
    if np.iscomplexobj(X) and not np.issubdtype(np.dtype(manifold.dtype), np.complexfloating):
        raise TypeError(f"X must be real-valued for {manifold!r}, got complex records")
    try:
        X = np.asarray(X, dtype=manifold.dtype)
    except (TypeError, ValueError):
        raise TypeError(f"X must be a numeric array of records of {manifold!r}") from None
    expected = (None,) + tuple(manifold.point_shape)
    if X.ndim != len(expected) or tuple(X.shape[1:]) != tuple(manifold.point_shape):
        raise ValueError(f"X must have shape (n, {', '.join(map(str, manifold.point_shape))}), got {X.shape}")
    if X.shape[0] == 0:
        raise ValueError("X must hold at least one record (n >= 1)")
    with np.errstate(all="ignore"):
        ok = manifold.belongs(X)
        safe = np.where(manifold._expand(ok), X, center)
        X = np.where(manifold._expand(ok), manifold.project(safe), center)
        X = manifold.clip_to_ball(X, center, radius)
    return X, int(np.sum(~ok))


def _prepare_dask(manifold, X, center, radius):
    """SPEC §5 inside the map step: each block of records is sanitised and clipped on its worker."""
    if X.ndim != len(manifold.point_shape) + 1 or tuple(X.shape[1:]) != tuple(manifold.point_shape):
        raise ValueError(f"X must have shape (n, {', '.join(map(str, manifold.point_shape))}), got {X.shape}")
    if X.shape[0] == 0:
        raise ValueError("X must hold at least one record (n >= 1)")
    X = X.rechunk({i: -1 for i in range(1, X.ndim)})
    return X.map_blocks(_prepare_block, manifold, center, radius, dtype=manifold.dtype)


def _prepare_block(block, manifold, center, radius):
    return prepare_records(manifold, block, center, radius)[0]


def _certified_mean(manifold, X, radius, sensitivity):
    """The Fréchet mean within ``OPTIMISATION_SLACK·Δ`` of the exact one: by ``h``-strong
    convexity ``ρ(μ, x̄) ≤ ‖∇F(μ)‖/h`` (SPEC §2); iterate until that is met."""
    h = hessian_lower_bound(radius, manifold.curvature_bounds[1])
    target = OPTIMISATION_SLACK * sensitivity * h
    res = frechet_mean(manifold, X, tol=min(1e-12, target), max_iter=20_000, check_assumption=False)
    gnorm = gradient_norm(manifold, res.point, X)
    if gnorm > target:
        # A numerical failure, not a data-dependent fallback: nothing is released.
        raise RuntimeError("the Fréchet mean could not be certified to the required accuracy; nothing was released")
    return res.point


def private_frechet_mean(X, manifold, *, center, radius, epsilon, delta=None, mechanism="laplace",
                         bound="tight", calibration="analytic", restrict=False, round_to=None, accountant=None, rng=None):
    """Release an ε-DP (or (ε, δ)-DP) Fréchet mean of the records ``X`` on ``manifold``.

    ``center`` and ``radius`` are public: the records are clipped into ``B_radius(center)``,
    ``radius < r*`` (SPEC §3). Neighbouring datasets replace one record; ``n = len(X)`` is public.

    Mechanisms: ``"laplace"`` (Riemannian Laplace, 2021 Thm 1/3), ``"kng"`` (2022 Thm 1),
    ``"tangent_gaussian"`` (log-Euclidean SPD or Euclidean, 2023 Thm 4; needs ``delta``),
    ``"ambient_laplace"`` / ``"coordinate_laplace"`` / ``"ambient_gaussian"``: noise on the
    Euclidean mean of the embedded records, projected back (baselines; sphere, SPD, Euclidean).
    Laplace uses ``σ = Δ/ε`` unrestricted when that law is integrable, else (or with
    ``restrict=True``) ``σ = 2Δ/ε`` restricted to the ball; the certificate says which.
    ``round_to=g`` snaps the release to a public grid of spacing ``g`` in its array coordinates and
    projects back (post-processing, so the guarantee is unchanged): a mitigation against
    floating-point low-order-bit leaks (docs/security.md).
    """
    if round_to is not None:
        check_positive(round_to, "round_to")
    epsilon = check_epsilon(epsilon)
    if mechanism not in MECHANISMS:
        raise ValueError(f"mechanism must be one of {MECHANISMS}, got {mechanism!r}")
    gaussian = mechanism in ("tangent_gaussian", "ambient_gaussian")
    delta = check_delta(delta, required=gaussian) if gaussian or delta is not None else None
    if calibration not in ("analytic", "classical"):
        raise ValueError(f"calibration must be 'analytic' or 'classical', got {calibration!r}")
    radius = check_radius(manifold, radius)
    center = manifold.validate_point(center, "center")
    if mechanism == "tangent_gaussian" and not isinstance(manifold, (SPDLogEuclidean, Euclidean)):
        raise ValueError(f"mechanism='tangent_gaussian' needs SPDLogEuclidean or Euclidean, got {manifold!r}")
    rng = as_generator(rng)
    if is_dask(X):
        if mechanism == "kng":
            raise ValueError("mechanism='kng' evaluates ∇F over all records at every proposal: not supported on Dask arrays")
        records = _prepare_dask(manifold, X, center, radius)
    else:
        records, _ = prepare_records(manifold, X, center, radius)
    n = records.shape[0]

    if mechanism.startswith("ambient") or mechanism == "coordinate_laplace":
        return _ambient_release(manifold, records, center, radius, epsilon, delta, mechanism, calibration, accountant, rng, round_to)

    kind = "kng" if mechanism == "kng" else "laplace"
    base = frechet_mean_sensitivity(manifold, n=n, radius=radius, kind=kind, bound=bound)
    sens = base * (1.0 + 2.0 * OPTIMISATION_SLACK)
    cert = {
        "manifold": repr(manifold), "n": n, "radius": radius, "epsilon": epsilon, "delta": delta or 0.0,
        "sensitivity_bound": _bound_name(manifold, bound, kind),
        "sensitivity": sens,
        "optimisation": f"mean certified within {OPTIMISATION_SLACK:g}·Δ of the exact minimiser (strong convexity); 2× that slack is included in the sensitivity",
    }
    event = GaussianEvent(0.0) if gaussian else PureEvent(epsilon)
    if mechanism == "tangent_gaussian":
        sigma = (analytic_gaussian_sigma if calibration == "analytic" else classical_gaussian_sigma)(epsilon, delta, sens)
        event = GaussianEvent(sigma / sens)
        _check_scale(manifold, center, radius, 3.0 * sigma)  # a Gaussian norm tail is lighter than Gamma(d, 3σ)'s
    elif mechanism == "laplace":
        # restricted (σ = 2Δ/ε) on request or when the unrestricted law is not integrable
        restrict = restrict or sens / epsilon >= laplace_sigma_limit(manifold)
        _check_scale(manifold, center, radius, sens / epsilon, restricted=restrict)
    _check_budget(accountant, event)
    mean = _certified_mean(manifold, records, radius, sens)

    if mechanism == "tangent_gaussian":
        point = TangentGaussian(manifold, sigma).sample(mean, rng=rng)
        cert.update(mechanism="tangent Gaussian", theorem=f"Utpala et al. 2023, Thm 4 ({calibration} calibration: "
                    + ("Balle & Wang 2018" if calibration == "analytic" else "Dwork & Roth 2014, Thm A.1") + ")",
                    scale=sigma, scale_rule=f"{calibration} Gaussian σ for (ε, δ) and Δ", restriction="none",
                    sampler="exact (Gaussian in log coordinates)", sampler_acceptance=1.0)
    elif mechanism == "laplace":
        point, cert = _laplace(manifold, mean, center, radius, epsilon, sens, restrict, rng, cert)
    else:
        sigma = 2.0 * sens / epsilon
        kng = KNormGradient(manifold, sigma, center, radius)
        point, _ = kng.sample_with_stats(records, mean, rng=rng)
        cert.update(mechanism="K-norm gradient (KNG)", theorem="Soto et al. 2022, Thm 1 with Thm 2 sensitivity",
                    scale=sigma, scale_rule="σ = 2Δ/ε (normalising constant depends on the data)",
                    restriction=f"B_r(center), r = {radius:g}",
                    sampler="exact rejection (2022 Lemma 1 envelope; a tighter data-adaptive radial envelope on positively curved spaces)",
                    sampler_acceptance="withheld: it depends on the data")
    point = _finish(manifold, point, cert["scale"], round_to, cert)
    if accountant is not None:
        accountant.spend(event)
    return PrivateRelease(point, epsilon, delta or 0.0, cert["mechanism"], sens, cert["scale"], cert)


def _laplace(manifold, mean, center, radius, epsilon, sens, restrict, rng, cert):
    limit = laplace_sigma_limit(manifold)
    if restrict:
        sigma = 2.0 * sens / epsilon
        mech = RiemannianLaplace(manifold, sigma, restrict_to=(center, radius))
        rule = "σ = 2Δ/ε (restricted to the ball: normalising constant depends on the footpoint)"
        if sens / epsilon >= limit:
            rule += f"; the unrestricted law is not integrable at σ = Δ/ε (needs σ < {limit:.4g})"
        restriction = f"B_r(center), r = {radius:g}"
    else:
        sigma = sens / epsilon
        mech = RiemannianLaplace(manifold, sigma)
        rule = "σ = Δ/ε (unrestricted law on a homogeneous space: normalising constant independent of the footpoint)"
        restriction = "none"
    point, acceptance = mech.sample_with_stats(mean, rng=rng)
    cert.update(mechanism="Riemannian Laplace", theorem="Reimherr et al. 2021, Thm 1 (" + ("Thm 3 restriction" if restrict else "homogeneous case") + ") with Thm 2 sensitivity",
                scale=sigma, scale_rule=rule, restriction=restriction,
                sampler="exact (" + ("eigenvalue construction, two-stage rejection" if hasattr(manifold, "laplace_integrability_constant") else "radial rejection + uniform direction") + ")",
                sampler_acceptance=round(acceptance, 4) if not restrict else "withheld: it depends on where the mean sits in the ball")
    return point, cert


def _ambient_release(manifold, records, center, radius, epsilon, delta, mechanism, calibration, accountant, rng, round_to):
    n = records.shape[0]
    sens = ambient_sensitivity(manifold, n=n, radius=radius, center=center)
    kind = {"ambient_laplace": "l2_laplace", "ambient_gaussian": "gaussian", "coordinate_laplace": "coordinate_laplace"}[mechanism]
    probe = AmbientNoise(manifold, kind, 1.0)
    D = probe.ambient_dim
    if kind == "gaussian":
        sigma = (analytic_gaussian_sigma if calibration == "analytic" else classical_gaussian_sigma)(epsilon, delta, sens)
        event, rule, thm = GaussianEvent(sigma / sens), f"{calibration} Gaussian σ", "Gaussian mechanism (Balle & Wang 2018)"
    elif kind == "l2_laplace":
        sigma, event, rule = sens / epsilon, PureEvent(epsilon), "σ = Δ_E/ε"
        thm = "ℓ2 K-norm mechanism (Hardt & Talwar 2010; 2021 App. A.4)"
    else:
        sigma, event, rule = np.sqrt(D) * sens / epsilon, PureEvent(epsilon), "b = √D·Δ_E/ε (ℓ1 ≤ √D ℓ2)"
        thm = "Laplace mechanism, coordinate-wise (Dwork et al. 2006)"
    _check_budget(accountant, event)
    floor = float(np.linalg.eigvalsh(center)[0] * np.exp(-radius)) if hasattr(manifold, "k") else 1e-12
    mech = AmbientNoise(manifold, kind, sigma, project=True, floor=floor)
    mean = (records.map_blocks(mech.to_ambient, dtype=float, drop_axis=list(range(2, records.ndim)), chunks=(records.chunks[0], (D,))).mean(axis=0).compute()
            if is_dask(records) else np.mean(mech.to_ambient(records), axis=0))
    point = mech.sample(mean, rng=rng)
    cert = {"manifold": repr(manifold), "n": n, "radius": radius, "epsilon": epsilon, "delta": delta or 0.0,
            "mechanism": f"ambient {kind} on the Euclidean mean, projected", "theorem": thm,
            "sensitivity": sens, "sensitivity_bound": "ambient ball radius r_E (2021 Prop. 1 / chord)",
            "scale": sigma, "scale_rule": rule, "restriction": "none (projection back onto the manifold is post-processing)",
            "sampler": "exact", "sampler_acceptance": 1.0}
    point = _finish(manifold, point, sigma, round_to, cert)
    if accountant is not None:
        accountant.spend(event)
    return PrivateRelease(point, epsilon, delta or 0.0, cert["mechanism"], sens, sigma, cert)


LOG_FLOAT_MAX = 700.0  # exp overflows float64 past ~709.78


def _check_scale(manifold, center, radius, sigma, restricted=False):
    """Refuse, from public parameters only, a noise scale whose release would overflow float64
    (eigenvalues e^λ on SPD, cosh ρ on hyperbolic space) with probability above 1e-12."""
    if restricted or not isinstance(manifold, (SPDAffineInvariant, SPDLogEuclidean, Hyperbolic)):
        return
    reach = gamma_dist.isf(1e-12, manifold.dim, scale=sigma)  # Laplace radius; covers the Gaussian norm too
    base = float(np.max(np.abs(np.log(np.linalg.eigvalsh(center))))) if hasattr(manifold, "k") else float(manifold.dist(manifold.origin, center))
    if base + radius + reach > LOG_FLOAT_MAX:
        raise ValueError(f"the noise scale sigma={sigma:.4g} is too large for a float64 release on {manifold!r}; "
                         "increase epsilon or n, or shrink radius")


def _finish(manifold, point, sigma, round_to, cert):
    """Optional snapping to a public grid (post-processing), then the representability check."""
    cert["output_rounding"] = "none" if round_to is None else f"snapped to a grid of {round_to:g}, then projected"
    if round_to is not None:
        snapped = np.round(np.asarray(point) / round_to) * round_to
        if np.iscomplexobj(point):
            snapped = np.round(point.real / round_to) * round_to + 1j * np.round(point.imag / round_to) * round_to
        point = manifold.project(snapped)
        if hasattr(manifold, "k"):  # keep SPD: eigenvalues floored at the grid spacing
            point = funm_sym(point, lambda w: np.maximum(w, round_to))
    _check_representable(manifold, point, sigma)
    return point


def _check_representable(manifold, point, sigma):
    """A release that overflowed (probability < 1e-12 after ``_check_scale``) is not returned."""
    if not manifold.check_point(point)[0]:
        raise ValueError(f"the release at noise scale sigma={sigma:.4g} is not representable in float64 on {manifold!r}; nothing was released")


def _bound_name(manifold, bound, kind):
    if manifold.curvature_bounds[1] <= 0:
        return "2r/n (non-positive curvature: h = L = 1)" if kind == "laplace" else "2r/n (KNG, non-positive curvature)"
    if bound == "tight":
        return "tight: L = 2r√κ/sin(2r√κ) (Rauch comparison, SPEC §3)"
    return "paper: L = 2 − h (Karcher; 2021 Thm 2 / 2022 Thm 2)"


def _check_budget(accountant, event):
    if accountant is not None and not accountant.can_spend(event):
        accountant.spend(event)  # raises BudgetExceededError with the message
