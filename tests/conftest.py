"""Shared fixtures: every example of every registered manifold, points near a base point, and the
command line run in process."""

from collections import namedtuple

import pytest

from manifold_dp import cli
from manifold_dp.manifolds import REGISTRY

Result = namedtuple("Result", "returncode stdout stderr")

# read off the registry: a new manifold is picked up by the shared property suite without a list here
MANIFOLDS = {f"{name}-{i}" if i else name: example for name, cls in REGISTRY.items() for i, example in enumerate(cls.examples())}


@pytest.fixture(params=list(MANIFOLDS), ids=list(MANIFOLDS))
def manifold(request):
    return MANIFOLDS[request.param]


def base_point(m, rng):
    """A generic (not the origin) point of ``m``."""
    return m.random_point(m.origin, 0.5 * min(1.0, m.assumption_radius), rng=rng)


def near_points(m, center, n, rng, radius=None):
    radius = 0.9 * min(1.0, m.assumption_radius) if radius is None else radius
    return m.random_point(center, radius, size=n, rng=rng)


@pytest.fixture
def run(capsys):
    """``manifold-dp ARGS`` in process: its exit status and what it printed."""
    def call(*args):
        capsys.readouterr()
        code = cli.main([str(a) for a in args])
        out, err = capsys.readouterr()
        return Result(code, out, err)
    return call


@pytest.fixture(autouse=True, scope="session")
def _no_disk_cache():
    """The tests compute every public set-up value (a mutation of a calibration must not be hidden
    by a value kept on disk by an earlier run); tests/test_disk_cache.py turns the cache on in a
    temporary directory."""
    import os

    from manifold_dp._disk_cache import CACHE_ENV

    before = os.environ.get(CACHE_ENV)
    os.environ[CACHE_ENV] = "off"
    yield
    if before is None:
        os.environ.pop(CACHE_ENV, None)
    else:
        os.environ[CACHE_ENV] = before
