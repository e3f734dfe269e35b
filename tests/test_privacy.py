"""Sensitivity bounds, calibration, parameter validation and the public release path."""

import json

import dp_accounting
import numpy as np
import pytest

from conftest import MANIFOLDS
from manifold_dp import (
    Euclidean,
    Hyperbolic,
    KendallShape2D,
    SPDAffineInvariant,
    SPDLogEuclidean,
    Sphere,
    frechet_mean,
    frechet_mean_sensitivity,
    private_frechet_mean,
)
from manifold_dp.data import eigen_spd, sphere_cap
from manifold_dp.privacy import (
    CERTIFICATE_SCHEMA,
    BudgetExceededError,
    PrivacyAccountant,
    analytic_gaussian_sigma,
    classical_gaussian_sigma,
    gaussian_dp_event,
    log_lipschitz,
    pure_dp_event,
)
from manifold_dp.privacy.accounting import gaussian_epsilon
from manifold_dp.stats import riemannian_gradient


@pytest.mark.parametrize("eps,delta", [(0.1, 1e-6), (0.4, 1e-9), (1.0, 1e-5), (3.0, 1e-7), (10.0, 1e-3)])
def test_analytic_sigma_matches_dp_accounting(eps, delta):
    ours = analytic_gaussian_sigma(eps, delta, sensitivity=0.37)
    oracle = dp_accounting.get_sigma_gaussian(eps, delta) * 0.37
    assert abs(ours - oracle) / oracle < 1e-6
    assert ours < classical_gaussian_sigma(eps, delta, 0.37) if eps < 1 else True


def test_gaussian_composition_matches_pld_accountant():
    from dp_accounting.pld import pld_privacy_accountant
    zs = [3.0, 5.0, 4.0]
    acc = pld_privacy_accountant.PLDAccountant(dp_accounting.NeighboringRelation.REPLACE_ONE,
                                               value_discretization_interval=1e-4)
    for z in zs:
        acc.compose(gaussian_dp_event(z))  # REPLACE_ONE: the event carries 2z (dp_accounting's sensitivity 2)
    oracle = acc.get_epsilon(1e-6)
    ours = gaussian_epsilon(sum(z**-2 for z in zs) ** -0.5, 1e-6)
    assert abs(ours - oracle) / oracle < 2e-3
    spent, delta = PrivacyAccountant(10.0, 1e-6).spent([gaussian_dp_event(z) for z in zs])
    assert np.isclose(spent, ours, rtol=1e-12) and delta == 1e-6


def test_accountant_refuses_overspending():
    acc = PrivacyAccountant(1.0)
    acc.spend(pure_dp_event(0.6))
    with pytest.raises(BudgetExceededError, match="exceed"):
        acc.spend(pure_dp_event(0.5))
    assert acc.events == (pure_dp_event(0.6),)
    with pytest.raises(BudgetExceededError):
        acc.spend(gaussian_dp_event(10.0))  # δ = 0 budget: no Gaussian release fits
    gacc = PrivacyAccountant(1.0, 1e-6)
    z = analytic_gaussian_sigma(0.5, 1e-6)  # one (0.5, 1e-6) release
    gacc.spend(gaussian_dp_event(z))
    gacc.spend(gaussian_dp_event(z))  # composes tightly: two of them cost less than ε = 1.0
    assert gacc.spent()[0] < 1.0


def test_release_spends_from_accountant():
    s = Sphere(2)
    X = sphere_cap(50, rng=1)
    acc = PrivacyAccountant(1.5)
    private_frechet_mean(X, s, center=s.origin, radius=0.4, epsilon=1.0, accountant=acc, rng=1)
    with pytest.raises(BudgetExceededError):
        private_frechet_mean(X, s, center=s.origin, radius=0.4, epsilon=1.0, accountant=acc, rng=1)
    assert acc.spent()[0] == 1.0


@pytest.mark.parametrize("kappa,r", [(1.0, np.pi / 8), (1.0, 0.7), (4.0, 0.3), (0.25, 1.0)])
def test_tight_lipschitz_is_below_paper(kappa, r):
    assert log_lipschitz(r, kappa, "tight") <= log_lipschitz(r, kappa, "paper")


def test_tight_lipschitz_on_unit_sphere_matches_spec():
    assert np.isclose(log_lipschitz(np.pi / 8, 1.0, "tight"), 1.1107, atol=1e-4)
    assert np.isclose(log_lipschitz(np.pi / 8, 1.0, "paper"), 1.2146, atol=1e-4)


def _adversarial_pairs(m, center, r, n, rng, trials=30):
    """Neighbouring datasets in B_r(center): clustered and spread data; replace one record
    by a boundary point, including the point opposite the cluster."""
    for t in range(trials):
        spread = [0.0, 0.3, 1.0][t % 3] * r
        base = m.random_point(center, max(spread, 1e-9), size=n, rng=rng) if spread else np.repeat(m.exp(center, r * m.random_unit_tangent(center, rng=rng))[None], n, 0)
        base = m.clip_to_ball(base, center, r)
        a = m.exp(center, r * m.random_unit_tangent(center, rng=rng))
        opposite = m.exp(center, -m.log(center, base[0]) * (r / max(m.dist(center, base[0]), 1e-12)))
        for new in (a, opposite):
            Y = base.copy()
            Y[0] = new
            yield base, Y


@pytest.mark.parametrize("name", list(MANIFOLDS))
def test_adversarial_search_never_exceeds_sensitivity(name):
    m = MANIFOLDS[name]
    rng = np.random.default_rng(2)
    r = 0.9 * m.assumption_radius if np.isfinite(m.assumption_radius) else 1.0
    n = 5
    delta = frechet_mean_sensitivity(m, n=n, radius=r, kind="laplace")
    delta_kng = frechet_mean_sensitivity(m, n=n, radius=r, kind="kng")
    assert delta <= frechet_mean_sensitivity(m, n=n, radius=r, kind="laplace", bound="paper")
    worst, worst_kng = 0.0, 0.0
    for X, Y in _adversarial_pairs(m, m.origin, r, n, rng):
        mx, my = frechet_mean(X, m).point, frechet_mean(Y, m).point
        worst = max(worst, float(m.dist(mx, my)))
        probes = m.random_point(m.origin, r, size=20, rng=rng)
        g = riemannian_gradient(m, probes, X) - riemannian_gradient(m, probes, Y)
        worst_kng = max(worst_kng, float(np.max(m.norm(probes, g))))
    assert 0 < worst <= delta * (1 + 1e-9) and 0 < worst_kng <= delta_kng * (1 + 1e-9)


BAD_PARAMS = [
    (dict(epsilon=0.0), "epsilon"), (dict(epsilon=-1.0), "epsilon"), (dict(epsilon=float("nan")), "epsilon"),
    (dict(epsilon=float("inf")), "epsilon"), (dict(radius=0.0), "radius"), (dict(radius=float("nan")), "radius"),
    (dict(radius=np.pi / 4), "radius"), (dict(radius=2.0), "radius"), (dict(mechanism="nope"), "mechanism"),
    (dict(delta=0.0), "delta"), (dict(delta=1.0), "delta"), (dict(delta=-1e-3), "delta"),
    (dict(center=np.array([1.0, 1.0, 1.0])), "center"), (dict(bound="loose"), "bound"),
]


@pytest.mark.parametrize("override,word", BAD_PARAMS)
def test_bad_parameters_raise_value_error_naming_them(override, word):
    s = Sphere(2)
    kwargs = dict(center=s.origin, radius=0.3, epsilon=1.0)
    kwargs.update(override)
    with pytest.raises(ValueError, match=word):
        private_frechet_mean(sphere_cap(10, rng=0), s, **kwargs)


def test_gaussian_parameter_rules():
    le = SPDLogEuclidean(2)
    X = eigen_spd(20, 2, rng=0)
    with pytest.raises(ValueError, match="delta"):
        private_frechet_mean(X, le, center=np.eye(2), radius=0.5, epsilon=0.5, mechanism="tangent_gaussian")
    with pytest.raises(ValueError, match="epsilon < 1"):
        private_frechet_mean(X, le, center=np.eye(2), radius=0.5, epsilon=1.5, delta=1e-6,
                             mechanism="tangent_gaussian", calibration="classical")
    with pytest.raises(ValueError, match="SPDLogEuclidean"):
        private_frechet_mean(sphere_cap(5, rng=1), Sphere(2), center=Sphere(2).origin, radius=0.3, epsilon=1,
                             delta=1e-6, mechanism="tangent_gaussian")


def test_kendall_radius_limit_is_pi_over_8():
    k = KendallShape2D(4)
    with pytest.raises(ValueError, match=r"r\* = 0.392699"):
        frechet_mean_sensitivity(k, n=10, radius=0.4)


CASES = {
    "sphere": (Sphere(2), lambda rng: sphere_cap(40, rng=rng), 0.4, None),
    "spd_le": (SPDLogEuclidean(3), lambda rng: eigen_spd(40, 3, rng=rng), 0.5, None),
    "spd_ai": (SPDAffineInvariant(2), lambda rng: eigen_spd(40, 2, rng=rng), 0.5, None),
    "hyperbolic": (Hyperbolic(2), lambda rng: Hyperbolic(2).random_point(Hyperbolic(2).origin, 0.8, size=40, rng=rng), 1.0, None),
    "kendall": (KendallShape2D(5), lambda rng: KendallShape2D(5).random_point(KendallShape2D(5).origin, 0.2, size=40, rng=rng), 0.3, None),
    "euclidean": (Euclidean(3), lambda rng: Euclidean(3).random_point(np.zeros(3), 1.0, size=40, rng=rng), 1.0, None),
}
MECH_FOR = {
    "sphere": ["laplace", "kng", "ambient_laplace", "ambient_gaussian", "coordinate_laplace"],
    "spd_le": ["laplace", "kng", "tangent_gaussian", "ambient_laplace"],
    "spd_ai": ["laplace", "kng", "ambient_laplace"],
    "hyperbolic": ["laplace", "kng"],
    "kendall": ["laplace", "kng"],
    "euclidean": ["laplace", "kng", "tangent_gaussian", "ambient_gaussian"],
}


@pytest.mark.parametrize("case,mech", [(c, m) for c in CASES for m in MECH_FOR[c]])
def test_release_returns_a_valid_point_and_certificate(case, mech):
    m, make, r, _ = CASES[case]
    X = make(np.random.default_rng(3))
    delta = 1e-6 if "gaussian" in mech else None
    rel = private_frechet_mean(X, m, center=m.origin, radius=r, epsilon=1.0, delta=delta, mechanism=mech, rng=4)
    assert m.check_point(rel.point) == (True, "")
    mean = frechet_mean(m.clip_to_ball(X, m.origin, r), m).point
    assert m.dist(mean, rel.point) > 0  # noise was added: never the plain mean
    cert = rel.certificate
    assert cert.mechanism == mech and cert.statistic == "frechet_mean"  # the name asked for round-trips
    assert cert.delta == (1e-6 if "gaussian" in mech else 0.0)
    assert json.loads(cert.to_json()) == cert.to_dict()
    assert set(cert.to_dict()) == set(CERTIFICATE_SCHEMA["required"])
    again = private_frechet_mean(X, m, center=m.origin, radius=r, epsilon=1.0, delta=delta, mechanism=mech, rng=4)
    assert np.array_equal(rel.point, again.point)


def test_laplace_falls_back_to_restricted_when_not_integrable():
    h = Hyperbolic(3)
    X = h.random_point(h.origin, 0.5, size=4, rng=1)
    rel = private_frechet_mean(X, h, center=h.origin, radius=1.0, epsilon=0.5, rng=2)  # Δ/ε = 1 > 1/(d−1)
    assert "2Δ/ε" in rel.certificate.scale_rule and h.dist(h.origin, rel.point) <= 1.0


def test_bad_records_are_replaced_without_revealing_them():
    s = Sphere(2)
    X = sphere_cap(30, rng=5)
    marker = 123456.789
    X[3] = [marker, np.nan, 0.0]
    X[4] = [marker, marker, marker]  # off the manifold
    rel = private_frechet_mean(X, s, center=s.origin, radius=0.4, epsilon=1.0, rng=6)
    assert s.check_point(rel.point)[0]
    assert str(marker) not in str(rel.certificate) and "123456" not in rel.summary()
    with pytest.raises(ValueError) as err:
        private_frechet_mean(np.full((3, 4), marker), s, center=s.origin, radius=0.4, epsilon=1.0)
    assert "123456" not in str(err.value)


def test_round_to_snaps_the_release_to_a_public_grid():
    s = Sphere(2)
    X = sphere_cap(40, rng=7)
    a = private_frechet_mean(X, s, center=s.origin, radius=0.4, epsilon=1.0, round_to=1e-3, rng=8)
    b = private_frechet_mean(X, s, center=s.origin, radius=0.4, epsilon=1.0, rng=8)
    assert s.check_point(a.point)[0] and np.allclose(a.point, b.point, atol=2e-3)
    assert "grid of 0.001" in a.certificate.output_grid
    # the default grid is a public power of two, far below the noise scale
    g = b.certificate.output_grid_spacing
    assert g == 2.0 ** np.round(np.log2(g)) and g < 1e-5 * b.scale
    with pytest.warns(UserWarning, match="round_to=None"):
        raw = private_frechet_mean(X, s, center=s.origin, radius=0.4, epsilon=1.0, round_to=None, rng=8)
    assert raw.certificate.output_grid.startswith("none")
    spd = SPDAffineInvariant(2)
    W = eigen_spd(30, 2, rng=9)
    r = private_frechet_mean(W, spd, center=np.eye(2), radius=0.5, epsilon=1.0, round_to=1e-2, rng=10)
    assert spd.check_point(r.point)[0]
    with pytest.raises(ValueError, match="round_to"):
        private_frechet_mean(X, s, center=s.origin, radius=0.4, epsilon=1.0, round_to=-1.0)
