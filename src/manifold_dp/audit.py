"""Empirical privacy audits of the public release path: statistical lower bounds on ε.

Every release here comes out of ``plan_release`` — the same validation, calibration, certified
mean, sampler and float-safe output grid that ``private_frechet_mean`` runs — so the audit tests
what users run, not a re-derived σ.

For a scenario we build a worst-case pair of neighbouring datasets (``n − 1`` records on the
ball's edge, the last one there in ``D`` and opposite in ``D'``), draw many releases from each,
and compute several test statistics of every release:

* ``loss``: ``ρ(y, μ') − ρ(y, μ)`` (``μ, μ'`` the non-private means): the Laplace log-likelihood
  ratio up to σ; for KNG also ``‖∇F_D'(y)‖ − ‖∇F_D(y)‖``, its exact log-likelihood ratio;
* Kendall: the phase ``|arg⟨μ, y⟩|`` and ``|arg⟨μ', y⟩|`` of the returned pre-shape — a release
  whose rotation follows the data is caught here;
* float bits of the first coordinates: the exponent, the low 8 mantissa bits (parity included)
  and the number of trailing zero bits (Mironov 2012).

Selection and bound are separated: on the first half of each sample we choose one statistic and
one event ``{t ≥ τ}`` or ``{t ≤ τ}`` (categorical bit features are first turned into a score
``log(count_D / count_D')`` learned on that half), and only the second halves enter the bound
``ε ≥ log((p − δ)/q)`` with Clopper–Pearson intervals (99 % overall). A private release gives
``ε_LB ≤ ε``; the power check under-noises the calibrated mechanism (σ × factor inside the
pipeline) and must be caught.

``radius="auto"`` (scenario ``laplace-auto-euclidean``): the observable is the pair (radius,
point). The pair of datasets moves one record across a candidate radius *and* to the opposite
side of the ball, so both the selection and the release at the likely radius leak; the
statistics are the chosen radius (categorical), the loss at it and the exact log-likelihood
ratio of the pair; ``under_noised`` scales the selection's ε₁ by ``1/factor`` as well.
"""

import dataclasses
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from ._random import RngLike, as_generator
from ._typing import Array
from .manifolds import Euclidean, Hyperbolic, KendallShape2D, SPDAffineInvariant, SPDLogEuclidean, Sphere
from .manifolds.base import Manifold
from .manifolds.kendall import hermitian
from .privacy import frechet_mean as _frechet_mean
from .privacy import radius_selection as _selection
from .privacy import release as _release
from .privacy.radius_selection import AutoRadius
from .stats import riemannian_gradient
from .stats.frechet import certified_frechet_mean

__all__ = ["Scenario", "AuditResult", "clopper_pearson", "epsilon_lower_bound", "float_bit_features",
           "public_center", "neighbouring_pair", "auto_radius_pair", "under_noised", "audit", "power_check"]

CONFIDENCE = 0.99
CHUNK = 50_000  # releases drawn per call: memory stays O(CHUNK · dim)
BIT_COORDINATES = 3  # float-bit features of the first few output coordinates


@dataclass(frozen=True)
class Scenario:
    """One audited configuration: a manifold, a public ball, a mechanism and its power factor.

    ``power_check`` multiplies σ by ``power_factor × slack`` (``slack = ρ(μ, μ')/Δ`` of the pair),
    which gives the audited pair a largest privacy loss of about ``ε/power_factor`` (exactly so
    for the Laplace on a homogeneous space) whatever the curvature leaves unused. 0.8 (loss
    1.25 ε) where σ = Δ/ε and dim ≤ 2; 0.6 in dimension 3–4 (0.5 for the ambient Laplace), where the likelihood ratio reaches
    its maximum on a set too small to see in 10⁵ releases; 0.1 in dimension ~100 (the loss
    concentrates near 0: only gross under-noising is visible); half these where the only proof
    needs σ = 2Δ/ε (KNG, restricted Laplace; 0.2 for KNG on Kendall, whose pair uses
    little of Δ_KNG); 0.3 for the Gaussian ones (tangent, Riemannian, wrapped), whose δ-tail no
    audit of 10⁶ releases can see; 0.6 for the wrapped Laplace (its loss is exact in the tangent
    space at the centre, ``tangent_loss``).

    ``auto`` set: the release uses ``radius=auto`` (``radius`` is then unused), the pair is
    ``auto_radius_pair`` and the slack is the largest ``ρ(μ_g, μ'_g)/Δ_g`` over the candidates.
    Its pair loses ``ε₁/2`` in the selection and ``≈ ε₂`` in the release at ``g1`` (``0.75 ε``
    with budget 0.5), so 0.6 under-noises it to ``≈ 1.25 ε``."""

    manifold: Manifold
    radius: float
    mechanism: str = "laplace"
    n: int = 10
    restrict: bool = False
    delta: float | None = None
    center_offset: float = 0.0  # public centre at this distance from the manifold's origin
    power_factor: float = 0.8
    auto: AutoRadius | None = None


SCENARIOS = {
    "laplace-euclidean": Scenario(Euclidean(1), 1.0),
    "laplace-euclidean-far": Scenario(Euclidean(3), 1.0, center_offset=3e5, power_factor=0.6),
    "laplace-euclidean-100": Scenario(Euclidean(100), 1.0, power_factor=0.1),
    "laplace-restricted-euclidean": Scenario(Euclidean(2), 1.0, restrict=True, power_factor=0.4),
    "laplace-sphere": Scenario(Sphere(2), np.pi / 8),
    "laplace-sphere-100": Scenario(Sphere(100), 0.5, power_factor=0.1),
    "laplace-hyperbolic": Scenario(Hyperbolic(2), 1.0, n=40),
    "laplace-hyperbolic-far": Scenario(Hyperbolic(2), 1.0, n=40, center_offset=6.0),
    "laplace-spd-le": Scenario(SPDLogEuclidean(2), 1.0, power_factor=0.6),
    "laplace-spd-ai": Scenario(SPDAffineInvariant(2), 1.0, power_factor=0.6),
    "laplace-kendall": Scenario(KendallShape2D(4), 0.3, power_factor=0.6),
    "laplace-kendall-100": Scenario(KendallShape2D(52), 0.3, power_factor=0.1),
    "kng-sphere": Scenario(Sphere(2), np.pi / 8, "kng", power_factor=0.4),
    "kng-euclidean": Scenario(Euclidean(1), 1.0, "kng", power_factor=0.4),
    "kng-kendall": Scenario(KendallShape2D(4), 0.3, "kng", power_factor=0.2),
    "tangent-gaussian-spd-le": Scenario(SPDLogEuclidean(2), 1.0, "tangent_gaussian", delta=1e-5, power_factor=0.3),
    "ambient-laplace-sphere": Scenario(Sphere(2), np.pi / 8, "ambient_laplace", power_factor=0.5),
    "laplace-auto-euclidean": Scenario(Euclidean(1), 1.0, power_factor=0.6,
                                       auto=AutoRadius(quantile=0.5, budget=0.5, grid=(0.5, 1.0))),
    "riemannian-gaussian-sphere": Scenario(Sphere(2), np.pi / 8, "riemannian_gaussian", delta=1e-5, power_factor=0.3),
    "riemannian-gaussian-hyperbolic": Scenario(Hyperbolic(2), 1.0, "riemannian_gaussian", n=40, delta=1e-5,
                                               power_factor=0.3),
    "wrapped-laplace-hyperbolic": Scenario(Hyperbolic(2), 1.0, "wrapped_laplace", n=40, power_factor=0.6),
    "wrapped-gaussian-spd-ai": Scenario(SPDAffineInvariant(2), 1.0, "wrapped_gaussian", delta=1e-5, power_factor=0.3),
}


@dataclass(frozen=True)
class AuditResult:
    mechanism: str
    epsilon: float
    delta: float
    epsilon_lb: float
    samples: int
    noise_factor: float
    slack: float  # ρ(μ, μ') / Δ for the audited pair: how tight the sensitivity bound is
    statistic: str  # the statistic the held-out selection chose
    epsilon_lb_bits: float = 0.0  # the same bound from the float-bit features alone

    def passed(self) -> bool:
        return self.epsilon_lb <= self.epsilon


def clopper_pearson(k: int, n: int, alpha: float) -> tuple[float, float]:
    """Two-sided ``1 − alpha`` Clopper–Pearson interval for ``k`` successes in ``n`` trials."""
    from scipy.stats import beta  # here, not at import: scipy.stats costs ~0.5 s to import

    lo = beta.ppf(alpha / 2, k, n - k + 1) if k > 0 else 0.0
    hi = beta.ppf(1 - alpha / 2, k + 1, n - k) if k < n else 1.0
    return float(lo), float(hi)


def _bound(p_count, n_p, q_count, n_q, delta, confidence):
    p_lo, _ = clopper_pearson(p_count, n_p, 1 - confidence)
    _, q_hi = clopper_pearson(q_count, n_q, 1 - confidence)
    return float(np.log(max(p_lo - delta, 1e-300) / q_hi)) if p_lo > delta else 0.0


def _best_event(a, b, delta, confidence):
    """``(bound, sign, τ)`` of the best event ``{sign·t ≥ τ}`` over a quantile grid."""
    best = (-np.inf, 1, np.inf)
    for sign in (1, -1):
        sa, sb = np.sort(sign * a), np.sort(sign * b)
        for tau in np.unique(np.quantile(sa, np.linspace(0.5, 0.999, 60))):
            p = sa.size - np.searchsorted(sa, tau, side="left")
            q = sb.size - np.searchsorted(sb, tau, side="left")
            est = _bound(int(p), sa.size, int(q), sb.size, delta, confidence)
            if est > best[0]:
                best = (est, sign, tau)
    return best


def _score(train_a, train_b, values):
    """A categorical feature as a number: ``log((count_D + ½)/(count_D' + ½))`` per category,
    counted on the training halves only (unseen categories score 0)."""
    cats, inv = np.unique(np.concatenate([train_a, train_b]), return_inverse=True)
    ca = np.bincount(inv[: train_a.size], minlength=cats.size)
    cb = np.bincount(inv[train_a.size:], minlength=cats.size)
    table = np.log((ca + 0.5) / (cb + 0.5))
    idx = np.clip(np.searchsorted(cats, values), 0, cats.size - 1)
    return np.where(cats[idx] == values, table[idx], 0.0)


def epsilon_lower_bound(t_a: Any, t_b: Any, delta: float = 0.0, confidence: float = CONFIDENCE,
                        categorical: tuple[str, ...] = ()) -> Any:
    """ε lower bound from statistics of releases under D (``t_a``) and D' (``t_b``).

    ``t_a``, ``t_b``: one array each, or dicts ``name → array`` of several statistics (names in
    ``categorical`` are scored first, see ``_score``). The statistic, direction and threshold are
    chosen on the first half of each sample; the bound uses only the second halves, so the choice
    does not bias it. Returns ``(epsilon_lb, chosen statistic)`` for dicts, ``epsilon_lb`` else."""
    single = not isinstance(t_a, dict)
    stats_a, stats_b = ({"t": t_a}, {"t": t_b}) if single else (t_a, t_b)
    best: tuple[Any, ...] = (-np.inf, None, 1, np.inf, None)
    for name in stats_a:
        a, b = np.asarray(stats_a[name]), np.asarray(stats_b[name])
        ha, hb = a.size // 2, b.size // 2
        if name in categorical:
            a_sc, b_sc = _score(a[:ha], b[:hb], a), _score(a[:ha], b[:hb], b)
        else:
            a_sc, b_sc = a.astype(float), b.astype(float)
        est, sign, tau = _best_event(a_sc[:ha], b_sc[:hb], delta, confidence)
        if est > best[0]:
            best = (est, name, sign, tau, (a_sc[ha:], b_sc[hb:]))
    _, name, sign, tau, (a, b) = best
    p, q = int(np.sum(sign * a >= tau)), int(np.sum(sign * b >= tau))
    lb = _bound(p, a.size, q, b.size, delta, confidence)
    return lb if single else (lb, name)


def float_bit_features(y: Array, coordinates: int = BIT_COORDINATES) -> dict[str, Array]:
    """Categorical features of the raw float64 bits of the first ``coordinates`` real numbers of
    each release: exponent (with sign), low 8 mantissa bits, trailing zero bits of the mantissa."""
    flat = np.ascontiguousarray(np.asarray(y).reshape(len(y), -1))
    if np.iscomplexobj(flat):
        flat = flat.view(np.float64)
    bits = flat[:, :coordinates].astype(np.float64).view(np.uint64)
    mant = bits & np.uint64((1 << 52) - 1)
    low = mant & (~mant + np.uint64(1))  # lowest set bit
    tz = np.where(mant == 0, 52, np.log2(np.maximum(low, np.uint64(1)).astype(float)).round().astype(np.int64))
    out = {}
    for j in range(bits.shape[1]):
        out[f"exponent[{j}]"] = (bits[:, j] >> np.uint64(52)).astype(np.int64)
        out[f"low8[{j}]"] = (mant[:, j] & np.uint64(255)).astype(np.int64)
        out[f"trailing_zeros[{j}]"] = tz[:, j]
    return out


def public_center(m: Manifold, offset: float, rng: np.random.Generator) -> Array:
    """A public centre at distance ``offset`` from the origin, in a random direction."""
    if offset == 0:
        return m.origin
    return m.exp(m.origin, offset * m.random_unit_tangent(m.origin, rng=rng))


def neighbouring_pair(m: Manifold, center: Array, radius: float, n: int, rng: np.random.Generator) -> tuple[Array, Array]:
    """``n − 1`` records on one point of the ball's edge; the last one there (D) or opposite (D')."""
    u = m.random_unit_tangent(center, rng=rng)
    a, b = m.exp(center, radius * u), m.exp(center, -radius * u)
    D = np.repeat(np.asarray(a)[None], n, axis=0)
    D2 = D.copy()
    D2[-1] = b
    return D, D2


def auto_radius_pair(m: Manifold, center: Array, auto: AutoRadius, n: int,
                     rng: np.random.Generator) -> tuple[Array, Array]:
    """A pair for ``radius=auto`` over a two-point grid ``g1 < g2`` with ``q·n`` an integer:
    ``q·n − 1`` records at ``g1/2``, one between ``g1`` and ``g2``, the rest at ``3·g2``, along
    one direction ``u``; the last record at ``0.998·g1`` on ``u`` (``D``) or at ``3·g2`` on ``−u``
    (``D'``). The counts below ``g1`` and ``g2`` are ``(qn, qn + 1)`` and ``(qn − 1, qn)``, so the
    utilities swap (``(0, −1)`` against ``(−1, 0)``), and at ``g1`` the last record sits on
    opposite edges of the ball (the mean moves by ≈ Δ)."""
    g1, g2 = cast("tuple[float, float]", auto.grid)  # the pair is built for a two-point grid
    k = int(round(auto.quantile * n)) - 1
    if not (k >= 1 and k + 2 < n):
        raise ValueError(f"auto_radius_pair needs 2 <= q·n <= n − 2, got q·n = {auto.quantile * n:g}")
    u = m.random_unit_tangent(center, rng=rng)
    at = lambda t: np.asarray(m.exp(center, t * u))
    D = np.stack([at(g1 / 2)] * k + [at((g1 + g2) / 2)] + [at(3 * g2)] * (n - k - 2) + [at(0.998 * g1)])
    D2 = D.copy()
    D2[-1] = at(-3 * g2)
    return D, D2


@contextmanager
def _quiet():
    """Silence what the audit's deliberately small, boundary-heavy scenarios trigger on every
    plan: the data holder's ``RecordsWarning`` and the public "mostly noise" / "unreliable"
    notes."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", _release.RecordsWarning)
        warnings.filterwarnings("ignore", message=".*(mostly noise|is unreliable)", category=_release.ReleaseWarning)
        yield


@contextmanager
def under_noised(factor: float) -> Iterator[None]:
    """Inside the block every release pipeline builds its measurement with σ × ``factor`` (and
    reports it): the mechanism a buggy calibration would build. For power checks only; not
    thread-safe."""
    original, original_weights = _frechet_mean.calibrate, _selection.selection_log_weights

    def scaled(*args, **kwargs):
        cal = original(*args, **kwargs)
        m = cal.measurement
        law = dataclasses.replace(m.law, sigma=m.law.sigma * factor)
        return dataclasses.replace(cal, measurement=dataclasses.replace(m, scale=m.scale * factor, law=law))

    def sharpened(utility, selection_epsilon, log_base):  # radius="auto": the selection's ε₁ grows by 1/factor
        return original_weights(utility, selection_epsilon / factor, log_base)

    if factor != 1.0:
        _frechet_mean.calibrate, _selection.selection_log_weights = scaled, sharpened
    try:
        yield
    finally:
        _frechet_mean.calibrate, _selection.selection_log_weights = original, original_weights


def _statistics(m, y, mean, mean2, kng_records, base=None):
    d, d2 = m.dist(y, mean), m.dist(y, mean2)
    stats = {"loss": d2 - d, "loss_sq": d2 * d2 - d * d}  # the Laplace's and the Riemannian Gaussian's log-likelihood ratios
    if base is not None:  # wrapped noise: the same in the tangent space at the base point
        ty = m.log(base, y)
        t1, t2 = (m.norm(base, ty - m.log(base, mu)) for mu in (mean, mean2))
        stats["tangent_loss"], stats["tangent_loss_sq"] = t2 - t1, t2 * t2 - t1 * t1
    if kng_records is not None:
        D, D2 = kng_records
        g = lambda X: m.norm(y, riemannian_gradient(m, y, X))
        stats["kng_loss"] = g(D2) - g(D)
    if np.iscomplexobj(y):  # a quotient by rotations (Kendall): is the representative's phase the data's?
        stats["phase_D"] = np.abs(np.angle(hermitian(mean, y)))
        stats["phase_D'"] = np.abs(np.angle(hermitian(mean2, y)))
    stats.update(float_bit_features(y))
    return stats


def audit(name: str, samples: int = 100_000, epsilon: float = 1.0, noise_factor: float | str = 1.0, *,
          rng: RngLike = None, progress: Callable[[int, int], Any] | None = None) -> AuditResult:
    """Audit scenario ``name`` of ``SCENARIOS`` with ``samples`` releases from each dataset,
    drawn through the public pipeline (``round_to`` left at its default). ``noise_factor < 1``
    under-noises the calibrated mechanism (``under_noised``); ``"power"`` uses the scenario's
    power factor times the pair's slack (see ``Scenario``). ``progress(done, total)`` is called
    after each chunk."""
    if name not in SCENARIOS:
        raise ValueError(f"unknown audit scenario {name!r}; choose from {', '.join(SCENARIOS)}")
    samples = int(samples)
    if samples < 100:
        raise ValueError(f"samples must be at least 100, got {samples}")
    rng = as_generator(rng)
    sc = SCENARIOS[name]
    with _quiet():
        run = _audit_auto if sc.auto is not None else _audit_fixed
        return run(name, sc, samples, epsilon, noise_factor, rng, progress)


def _audit_fixed(name, sc, samples, epsilon, noise_factor, rng, progress):
    m = sc.manifold
    center = public_center(m, sc.center_offset, rng)
    D, D2 = neighbouring_pair(m, center, sc.radius, sc.n, rng)
    kw = dict(center=center, radius=sc.radius, epsilon=epsilon, delta=sc.delta, mechanism=sc.mechanism,
              restrict=sc.restrict)
    cal = _release.plan_release(D, m, **kw).calibration
    accuracy = cal.accuracy or 1e-9 * sc.radius  # ambient mechanisms certify no Fréchet mean
    mean, mean2 = (_mean(m, X, center, sc.radius, accuracy) for X in (D, D2))
    slack = float(m.dist(mean, mean2)) / cal.sensitivity
    if noise_factor == "power":
        noise_factor = sc.power_factor * slack
    with under_noised(noise_factor):
        plans = [_release.plan_release(X, m, **kw) for X in (D, D2)]
    kng = (D, D2) if sc.mechanism == "kng" else None
    base = center if sc.mechanism.startswith("wrapped") else None
    draw = lambda plan, size: _statistics(m, np.asarray(plan.draw(size, rng=rng)), mean, mean2, kng, base)
    joined = _sample(plans, draw, samples, progress)
    categorical = [k for k in joined[0] if "[" in k]
    return _result(name, sc, joined, categorical, categorical, epsilon, samples, noise_factor, slack)


def _mean(m, X, center, radius, accuracy):
    return certified_frechet_mean(m, _release.prepare_records(m, X, center, radius)[0], center, radius, accuracy)


def _audit_auto(name, sc, samples, epsilon, noise_factor, rng, progress):
    """``radius=auto``: releases are pairs (radius, point) drawn by ``AutoPlan.draw``."""
    m = sc.manifold
    center = public_center(m, sc.center_offset, rng)
    D, D2 = auto_radius_pair(m, center, sc.auto, sc.n, rng)
    kw = dict(center=center, radius=sc.auto, epsilon=epsilon, delta=sc.delta, mechanism=sc.mechanism,
              restrict=sc.restrict)
    nominal = _release.plan_release(D, m, **kw)
    grid = np.asarray(nominal.candidates)
    cals = [cal for cal, _ in nominal.stages]
    means = [[_mean(m, X, center, g, cal.accuracy) for g, cal in zip(grid, cals)] for X in (D, D2)]
    log_p = [np.log(_selection.selection_probabilities(_selection.selection_log_weights(
        _selection.quantile_utility(_release.record_distances(m, X, center), grid, sc.auto.quantile),
        nominal.selection_epsilon, nominal.log_base))) for X in (D, D2)]
    slack = max(float(m.dist(a, b)) / cal.sensitivity for a, b, cal in zip(*means, cals))
    if noise_factor == "power":
        noise_factor = sc.power_factor * slack
    with under_noised(noise_factor):
        plans = [_release.plan_release(X, m, **kw) for X in (D, D2)]

    def draw(plan, size):
        radii, y = plan.draw(size, rng=rng)
        i = np.searchsorted(grid, radii)
        loss = np.empty(size)
        for j in np.unique(i):
            at = i == j
            loss[at] = m.dist(y[at], means[1][j]) - m.dist(y[at], means[0][j])
        stats = {"radius[index]": i, "loss": loss / np.array([cal.sensitivity for cal in cals])[i],
                 "llr": log_p[0][i] - log_p[1][i] + loss / np.array([c.sigma for c, _ in plan.stages])[i]}
        stats.update(float_bit_features(y))
        return stats

    joined = _sample(plans, draw, samples, progress)
    categorical = [k for k in joined[0] if "[" in k]
    bits = [k for k in categorical if k != "radius[index]"]
    return _result(name, sc, joined, categorical, bits, epsilon, samples, noise_factor, slack)


def _sample(plans, draw, samples, progress):
    parts = ([], [])
    done = 0
    while done < samples:
        size = min(CHUNK, samples - done)
        for plan, part in zip(plans, parts):
            part.append(draw(plan, size))
        done += size
        if progress is not None:
            progress(done, samples)
    return [{k: np.concatenate([c[k] for c in part]) for k in part[0]} for part in parts]


def _result(name, sc, joined, categorical, bit_names, epsilon, samples, noise_factor, slack):
    delta = float(sc.delta or 0.0)
    lb, stat = epsilon_lower_bound(*joined, delta=delta, categorical=categorical)
    bits = [{k: part[k] for k in bit_names} for part in joined]
    lb_bits, _ = epsilon_lower_bound(*bits, delta=delta, categorical=bit_names)
    return AuditResult(name, epsilon, delta, lb, samples, float(noise_factor), slack, stat, lb_bits)


def power_check(name: str, samples: int = 100_000, epsilon: float = 1.0, *, rng: RngLike = None,
                progress: Callable[[int, int], Any] | None = None) -> AuditResult:
    """The scenario's audit, under-noised so that the audited pair loses ``ε/power_factor``: a
    powerful audit reports ``ε_LB > ε``."""
    return audit(name, samples, epsilon, noise_factor="power", rng=rng, progress=progress)
