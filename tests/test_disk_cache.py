"""The disk cache of public set-up values (``manifold_dp._disk_cache``): exact values, only public
arguments, only trusted files, and a release that reads them gives the same bits."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from manifold_dp import SPDAffineInvariant, Sphere
from manifold_dp._disk_cache import CACHE_ENV, _code_digest, cache_directory, disk_cached
from manifold_dp.privacy import measurements, spd_sampler
from manifold_dp.stats import frechet


@pytest.fixture
def on(tmp_path, monkeypatch):
    monkeypatch.setenv(CACHE_ENV, str(tmp_path))
    return tmp_path


def _files(root):
    return sorted(p for p in root.rglob("*.json"))


def test_off_by_setting_and_keyed_by_the_code(on, monkeypatch):
    assert cache_directory() == on / _code_digest()
    for off in ("off", "0", "", "no"):
        monkeypatch.setenv(CACHE_ENV, off)
        assert cache_directory() is None
    monkeypatch.setenv(CACHE_ENV, "off")
    spd_sampler.spd_gaussian_acceptance.__wrapped__(3, 0.2, 400)
    assert _files(on) == []


@pytest.mark.parametrize("name, call", [
    ("calibration", lambda: measurements._profile_calibration.__wrapped__(Sphere(2), 0.05, 1.0, 1e-6)),
    ("gaussian pilot", lambda: spd_sampler.spd_gaussian_acceptance.__wrapped__(3, 0.2, 400)),
    ("laplace pilot", lambda: spd_sampler.spd_sampler_acceptance.__wrapped__(3, 0.2, np.inf, 400)),
    ("schedule", lambda: frechet._schedule_fields(SPDAffineInvariant(3), 0.5, 1e-4, 100)),
])
def test_a_value_read_back_is_the_value_computed_bit_for_bit(on, name, call):
    first = call()
    assert len(_files(on)) == 1
    again = call()  # read from the file
    assert repr(again) == repr(first) and type(again) is type(first)
    for a, b in zip(np.ravel(np.asarray(first, dtype=object)), np.ravel(np.asarray(again, dtype=object))):
        if isinstance(a, float):
            assert a.hex() == b.hex()


def test_only_public_arguments_are_keys(on):
    calls = []

    @disk_cached("probe", lambda v: type(v) is float)
    def probe(x):
        calls.append(1)
        return 1.5

    probe(np.array([1.0, 2.0]))  # an array could be records: never a key
    probe(Sphere(2))  # a registered space: a key
    assert len(_files(on)) == 1

    class Mine(Sphere):  # not a registered type (its parameters may not show in its repr)
        pass

    probe(Mine(2))
    probe(Sphere(2, radius=np.float64(1.0)))  # a field not of Python's own float: not a key
    probe(np.float64(0.5))
    assert len(_files(on)) == 1 and len(calls) == 5


def _poison(root, value):
    (path,) = _files(root)
    stored = json.loads(path.read_text())
    stored["value"] = value
    path.write_text(json.dumps(stored))
    return path


def _pilot():
    return spd_sampler.spd_gaussian_acceptance.__wrapped__(3, 0.2, 400)


def test_a_file_or_directory_others_may_write_is_not_read(on):
    true = _pilot()
    path = _poison(on, {"f": (0.123).hex()})
    os.chmod(path, 0o600)
    assert _pilot() == 0.123  # the user's own file is trusted like the installed code (docs/security.md)
    for mode in (0o666, 0o620, 0o602):
        os.chmod(path, mode)
        assert _pilot() == true
        _poison(on, {"f": (0.123).hex()})
    os.chmod(path, 0o600)
    for directory in (path.parent, path.parent.parent, on):  # the function's, the digest's, the base
        os.chmod(directory, 0o777)
        assert _pilot() == true
        os.chmod(directory, 0o700)
        _poison(on, {"f": (0.123).hex()})
    assert _pilot() == 0.123


def test_a_symbolic_link_is_not_followed(on, tmp_path_factory):
    true = _pilot()
    (path,) = _files(on)
    elsewhere = tmp_path_factory.mktemp("elsewhere") / "value.json"
    stored = json.loads(path.read_text())
    stored["value"] = {"f": (0.123).hex()}
    elsewhere.write_text(json.dumps(stored))
    os.chmod(elsewhere, 0o600)
    path.unlink()
    path.symlink_to(elsewhere)
    assert _pilot() == true


def test_a_damaged_foreign_or_ill_formed_file_is_recomputed(on):
    true = _pilot()
    (path,) = _files(on)
    key = json.loads(path.read_text())["key"]
    for text in ("{not json", "[" * 100_000, json.dumps({"key": key, "value": [1, 2]}),
                 json.dumps({"key": key, "value": {"f": (1.5).hex()}}),  # not a probability
                 json.dumps({"key": "spd_gaussian_acceptance(i4)", "value": {"f": (0.5).hex()}})):  # another key
        path.write_text(text)
        assert _pilot() == true


def test_an_unusable_place_changes_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv(CACHE_ENV, "off")
    true = _pilot()
    target = tmp_path / "file"
    target.write_text("")
    monkeypatch.setenv(CACHE_ENV, str(target))  # a file where the directory should be
    assert _pilot() == true
    monkeypatch.delenv(CACHE_ENV)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)

    def no_home():
        raise RuntimeError("Could not determine home directory.")

    monkeypatch.setattr(Path, "home", staticmethod(no_home))
    assert cache_directory() is None
    assert _pilot() == true


def test_a_path_with_a_tilde_is_the_users(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv(CACHE_ENV, "~/cache")
    assert cache_directory() == tmp_path / "cache" / _code_digest()


RELEASE = """
import sys, warnings
import numpy as np
warnings.simplefilter("ignore")
from manifold_dp import SPDAffineInvariant, private_frechet_mean
from manifold_dp.data import eigen_spd
X = eigen_spd(200, 3, r=0.05, rng=3)
out = [private_frechet_mean(X, SPDAffineInvariant(3), epsilon=1.0, center=np.eye(3), rng=s, **kw)
       for s in range(2) for kw in (dict(radius=0.5, mechanism="riemannian_gaussian", delta=1e-6), dict(radius="auto"))]
print(" ".join(float(v).hex() for r in out for v in np.ravel(r.value)))
"""


@pytest.mark.slow
def test_a_new_process_reading_the_cache_releases_the_same_bits(tmp_path):
    def run(setting):
        env = dict(os.environ, **{CACHE_ENV: setting})
        return subprocess.run([sys.executable, "-c", textwrap.dedent(RELEASE)], env=env, capture_output=True,
                              text=True, check=True).stdout

    computed = run("off")
    assert run(str(tmp_path)) == computed  # computes, writes
    assert _files(tmp_path)
    assert run(str(tmp_path)) == computed  # reads
