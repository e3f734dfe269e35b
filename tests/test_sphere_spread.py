"""The computer-assisted bound on the sphere's spread constant C(r) (experiments/sphere_spread.py):
the stored coverings decode to exactly their cells, a seeded sample of cells is re-bounded in ball
arithmetic below each target (every cell of r = π/8 in the slow suite), each proven bound lies above
a numerical maximum (a proof of a smaller value would prove a wrong function), and the cell bound
encloses the library's own log map at random points."""

import json
import math

import numpy as np
import pytest

pytest.importorskip("flint")

from manifold_dp.experiments import sphere_spread
from manifold_dp.experiments.r21_f2 import free_log_spread
from manifold_dp.manifolds import Sphere

TABLE = json.loads(sphere_spread.TABLE.read_text(encoding="utf-8"))
RADII = sorted(TABLE["radii"])
HEADLINE = ("1/12", "1/8", "1/6", "1/5", "1/4")  # the free optimisation of R21-F2 is checked here; every radius in
# tests/test_spread_constant.py


def test_the_table_holds_every_target_and_its_bound_is_below_it():
    assert set(TABLE["radii"]) == set(sphere_spread.TARGETS)
    assert TABLE["precision_bits"] == sphere_spread.PRECISION and tuple(TABLE["initial_cells"]) == sphere_spread.INITIAL
    assert TABLE["radius_widening_log2"] == sphere_spread.RADIUS_WIDENING_LOG2
    for fraction, row in TABLE["radii"].items():
        assert row["target"] == sphere_spread.TARGETS[fraction]
        assert 1.0 < float(row["proven_upper_bound"]) <= row["target"]


@pytest.mark.parametrize("fraction", RADII)
def test_a_sample_of_cells_is_re_bounded_below_the_target(fraction):
    row = TABLE["radii"][fraction]
    bits = sphere_spread.decode(row["tree"])
    assert len(bits) == row["tree_nodes"] and bits.count("0") == row["cells"]
    cells = sphere_spread.leaves(fraction, bits)  # raises if the tree does not cover the box exactly
    assert len(cells) == row["cells"]
    size = 300 if fraction in HEADLINE else 60
    sample = np.random.default_rng(2024).choice(len(cells), size=min(size, len(cells)), replace=False).tolist()
    ok, _ = sphere_spread.verify(fraction, bits, row["target"], cells=sample)
    assert ok


@pytest.mark.slow
def test_every_cell_at_pi_over_8_is_re_bounded():
    row = TABLE["radii"]["1/8"]
    ok, count = sphere_spread.verify("1/8", sphere_spread.decode(row["tree"]), row["target"])
    assert ok and count == row["cells"]


def test_the_cells_tile_the_parameter_box():
    """The leaves' volumes add up to the box [0, a_max] × [0, π⁺] × [0, 2π⁺] (no gap, no overlap)."""
    row = TABLE["radii"]["1/8"]
    cells = sphere_spread.leaves("1/8", sphere_spread.decode(row["tree"]))
    volume = sum(math.prod(hi - lo for lo, hi in c) for c in cells)
    a_max = max(c[0][1] for c in cells)
    assert a_max >= math.pi / 8
    assert volume == pytest.approx(a_max * sphere_spread.PI_HI * sphere_spread.TWO_PI_HI, rel=1e-12)


@pytest.mark.parametrize("fraction", HEADLINE)
def test_each_proven_bound_is_above_a_numerical_maximum(fraction):
    num, den = (int(v) for v in fraction.split("/"))
    r = math.pi * num / den
    found = free_log_spread(Sphere(2), r)[0] / (2 * r)
    assert found <= float(TABLE["radii"][fraction]["proven_upper_bound"])
    assert found > 1.0


def test_the_cell_bound_encloses_the_log_map_of_the_sphere():
    arb = sphere_spread._flint()
    radius = arb.pi() / 8
    r = float(radius.mid())
    s, rng = Sphere(2), np.random.default_rng(7)
    for _ in range(50):
        a, u, v = rng.uniform(0, r), rng.uniform(0, np.pi), rng.uniform(0, 2 * np.pi)
        m = np.array([np.sin(a), 0.0, np.cos(a)])
        x = np.array([np.sin(r) * np.cos(u), np.sin(r) * np.sin(u), np.cos(r)])
        y = np.array([np.sin(r) * np.cos(v), np.sin(r) * np.sin(v), np.cos(r)])
        value = float(np.sum((s.log(m, x) - s.log(m, y)) ** 2))
        cell = ((max(a - 1e-3, 0.0), a + 1e-3), (u - 1e-3, u + 1e-3), (v - 1e-3, v + 1e-3))
        assert float(sphere_spread.cell_bound(cell, radius)) >= value * (1 - 1e-12)
