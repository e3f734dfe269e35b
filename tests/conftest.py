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
