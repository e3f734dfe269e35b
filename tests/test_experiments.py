"""Each experiment is a pure ``run(config, rng)`` with a smoke test at a tiny size."""

import numpy as np
import pytest

from manifold_dp.experiments import MODULES, resolve

TINY = {
    "R21-F1ab": dict(ns=[20, 40], reps=10, pairs=3),
    "R21-F1cd": dict(ns=[10, 20], reps=10, draws=2, pairs=3),
    "R21-F2": dict(radii=3, boundary=24, footpoints=3),
    "S22-F1": dict(ns=[10, 20], reps=4, spd_reps=4),
    "S22-F2/3": dict(epsilons=[1.0, 5.0], reps=4),
    "U23-F1": dict(ks=[2, 3], epsilons=[0.1, 0.4], deltas=[1e-6, 1e-9], reps=3),
    "U23-F2/3": dict(epsilons=[0.5], deltas=[1e-5], reps=3),
    "U23-F4": dict(ks=[2, 3], mcmc_steps=20, draws=5),
}


@pytest.mark.parametrize("mod", MODULES, ids=[m.ID for m in MODULES])
def test_experiment_runs_and_reports(mod, tmp_path):
    config = TINY[mod.ID]
    assert set(config) == set(mod.PROFILES["quick"])
    a = mod.run(config, np.random.default_rng(0))
    b = mod.run(config, np.random.default_rng(0))
    if mod.ID != "U23-F4":  # timings differ run to run; everything else is seeded
        assert repr(a) == repr(b)
    else:
        assert all(np.all(np.isfinite(v)) and np.all(np.asarray(v) > 0) for v in a.values())
    res = mod.report(a, config, tmp_path)
    assert res.ours and res.comparison and res.paper_claim
    assert all((tmp_path / f).exists() for f in res.figures)


def test_resolve_names():
    assert [m.ID for m in resolve(["R21-F1a/b", "r21-f1ab", "u23-f4"])] == ["R21-F1ab", "U23-F4"]
    with pytest.raises(ValueError, match="unknown experiment"):
        resolve(["R99"])
