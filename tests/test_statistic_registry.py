"""The registries the release path reads: mechanisms (``privacy.mechanism_specs.MECHANISMS``) and
statistics (``privacy.release.STATISTICS``). A statistic declares the mechanisms it may be
released with, and its public function is ``release_statistic`` with it."""

import numpy as np
import pytest

from manifold_dp import Sphere, private_frechet_mean, private_frechet_variance
from manifold_dp.privacy.mechanism_specs import GAUSSIAN_MECHANISMS, MECHANISMS
from manifold_dp.privacy.public import PublicParams, check_public
from manifold_dp.privacy.release import STATISTICS, Statistic, release_statistic

S = Sphere(2)
X = S.random_point(S.origin, 0.2, size=30, rng=0)
PUBLIC = dict(center=S.origin, radius=0.4, epsilon=1.0, bound="tight", calibration="analytic", restrict=False,
              accountant=None)


def test_registry_names_and_delta():
    assert all(name == spec.name for name, spec in MECHANISMS.items())
    assert GAUSSIAN_MECHANISMS == tuple(name for name, spec in MECHANISMS.items() if spec.needs_delta)
    assert all(spec.perturbs in ("footpoint", "gradient_field", "ambient_mean") for spec in MECHANISMS.values())


def test_unsupported_is_the_refusal_check_public_raises():
    for name, spec in MECHANISMS.items():
        reason = spec.unsupported(S, dask=False)
        delta = 1e-6 if spec.needs_delta else None
        if reason is None:
            assert isinstance(check_public(X, S, mechanism=name, delta=delta, **PUBLIC), PublicParams)
        else:
            with pytest.raises(ValueError) as err:
                check_public(X, S, mechanism=name, delta=delta, **PUBLIC)
            assert str(err.value) == reason


def test_public_params_are_frozen():
    p = check_public(X, S, mechanism="laplace", delta=None, **PUBLIC)
    assert (p.n, p.radius, p.epsilon, p.mechanism, p.auto) == (30, 0.4, 1.0, "laplace", None)
    with pytest.raises(AttributeError):
        p.epsilon = 2.0  # type: ignore[misc]


def test_a_statistic_refuses_the_mechanisms_it_does_not_declare():
    for mechanism in ("laplace", "auto"):
        with pytest.raises(ValueError, match="for this statistic"):
            check_public(X, S, mechanism=mechanism, delta=None, mechanisms=("kng",), auto_mechanism=False, **PUBLIC)
    assert check_public(X, S, mechanism="kng", delta=None, mechanisms=("kng",), **PUBLIC).mechanism == "kng"


def test_the_statistics_registry():
    assert {"frechet_mean", "frechet_variance", "frechet_median"} <= set(STATISTICS)  # and any a new module adds
    assert all(isinstance(s, Statistic) and s.name == name for name, s in STATISTICS.items())
    assert all(set(s.mechanisms) <= set(MECHANISMS) for s in STATISTICS.values())


def test_public_functions_are_the_generic_release():
    kw = dict(center=S.origin, radius=0.4, epsilon=1.0)
    mean = private_frechet_mean(X, S, rng=5, **kw)
    generic = release_statistic(STATISTICS["frechet_mean"], X, S, rng=5, **kw)
    assert np.array_equal(mean.point, generic.point) and mean.certificate == generic.certificate
    var = private_frechet_variance(X, S, rng=6, **kw)
    generic = release_statistic(STATISTICS["frechet_variance"], X, S, rng=6, **kw)
    assert var.value == generic.value and isinstance(generic.value, float)
    assert generic.certificate.statistic == "frechet_variance"


def test_the_command_line_offers_every_registered_statistic_with_a_name():
    """``manifold-dp release --statistic`` reads the registry: each statistic with a ``cli_name`` is
    a choice, released through ``release_statistic``; a median refuses ``radius="auto"`` there as in
    Python (``radius_auto``)."""
    from manifold_dp import cli

    named = {s.cli_name for s in STATISTICS.values() if s.cli_name}
    names = [s.cli_name for s in STATISTICS.values() if s.cli_name]
    assert {"mean", "variance", "median"} <= named and len(names) == len(named) and "tangent-pca" not in named
    assert set(cli.STATISTIC_CHOICES) == named | {"tangent-pca"}
    with pytest.raises(ValueError, match="radius must be a number for frechet_median"):
        release_statistic(STATISTICS["frechet_median"], X, S, center=S.origin, radius="auto", epsilon=1.0,
                          mechanism="kng")
