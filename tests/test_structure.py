"""The architecture as tests: capabilities instead of class dispatch, one place for ε → σ.

- No module outside ``manifolds/`` asks which class a manifold is (``isinstance`` against a
  manifold class) or probes it with ``hasattr``: the privacy layer reads declared capabilities.
- Only ``privacy/measurements.py`` and ``privacy/calibration.py`` turn ε into a scale: no other
  module divides by ``epsilon``/``eps`` or calls a Gaussian calibration.
- The registry drives the shared property suite (test_contract_manifolds.py, where each space's
  declared capabilities are checked) and the CLI.
- A manifold is layered: the geometry (``manifolds/geometry.py``) imports no other layer; privacy
  capabilities, the float64 model and the record passes (``manifolds/kernels/``) each define their
  own members, and ``base.Manifold`` only joins them; outside ``manifolds/`` nothing imports the
  speed kernels (they are reached through the manifold's hooks).
- A space's Laplace sampler is an object it declares (``manifold.laplace_sampler``): no module
  compares it with a string, so a new sampler needs no edit of ``privacy/``.
"""

import ast
from pathlib import Path

import manifold_dp
from manifold_dp.manifolds import REGISTRY
from manifold_dp.manifolds.base import Manifold
from manifold_dp.manifolds.capabilities import PrivacyCapabilities
from manifold_dp.manifolds.float_model import Float64Model
from manifold_dp.manifolds.geometry import Geometry, ManifoldGeometry
from manifold_dp.manifolds.kernels.passes import RecordPasses

SRC = Path(manifold_dp.__file__).parent
MANIFOLD_CLASSES = {cls.__name__ for cls in REGISTRY.values()} | {"Manifold", "_SPD"}
SCALE_MODULES = {"privacy/measurements.py", "privacy/calibration.py"}


def _modules():
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        yield rel, ast.parse(path.read_text(), filename=rel)


def _names(node):
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} | {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)}


def test_no_class_dispatch_on_manifolds_outside_manifolds():
    offences = []
    for rel, tree in _modules():
        if rel.startswith("manifolds/"):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                if node.func.id == "hasattr":
                    offences.append(f"{rel}:{node.lineno} hasattr")
                if node.func.id == "isinstance" and len(node.args) == 2 and _names(node.args[1]) & MANIFOLD_CLASSES:
                    offences.append(f"{rel}:{node.lineno} isinstance on a manifold class")
    assert offences == []


def test_only_the_measurement_constructors_turn_epsilon_into_a_scale():
    offences = []
    for rel, tree in _modules():
        if rel in SCALE_MODULES:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div) and _names(node.right) & {"epsilon", "eps", "EPSILON"}:
                offences.append(f"{rel}:{node.lineno} divides by epsilon")
            if isinstance(node, ast.Call) and _names(node.func) & {"analytic_gaussian_sigma", "classical_gaussian_sigma"}:
                offences.append(f"{rel}:{node.lineno} calls a Gaussian calibration")
    assert offences == []


def _imports(tree):
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            found.add("." * node.level + (node.module or ""))
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


def test_the_geometry_layer_imports_no_other_layer():
    tree = ast.parse((SRC / "manifolds" / "geometry.py").read_text())
    allowed = {"__future__", "collections.abc", "typing", "numpy", "numpy.typing", ".._random", ".._typing",
               ".kernels.arrays"}
    assert _imports(tree) <= allowed


def test_each_layer_defines_its_own_members_and_the_base_only_joins_them():
    layers = (ManifoldGeometry, PrivacyCapabilities, Float64Model, RecordPasses)
    owners = {}
    for layer in layers:
        for name in vars(layer):
            if not (name.startswith("__") and name.endswith("__")):
                owners.setdefault(name, []).append(layer.__name__)
    assert {name: where for name, where in owners.items() if len(where) > 1} == {}
    assert Manifold.__mro__[1:5] == (PrivacyCapabilities, Float64Model, RecordPasses, ManifoldGeometry)
    glue = {name for name in vars(Manifold) if not (name.startswith("__") and name.endswith("__"))}
    assert glue == {"validate_point"}


def test_the_spaces_keep_their_record_passes_in_kernels():
    """A space's overrides of the record-pass hooks live in ``manifolds/kernels/`` (mixins such as
    ``SpherePasses``); only the mean's extrinsic start, a formula of the space, stays with it."""
    hooks = {name for name in vars(RecordPasses) if not name.startswith("__")}
    offences = []
    for cls in REGISTRY.values():
        for owner in cls.__mro__:
            if owner.__module__.startswith("manifold_dp.manifolds.kernels") or owner in (
                    Manifold, PrivacyCapabilities, Float64Model, ManifoldGeometry, object):
                continue
            own = hooks & set(vars(owner)) - {"mean_start", "mean_start_stats"}
            offences += [f"{owner.__module__}.{owner.__name__}.{name}" for name in sorted(own)]
    assert offences == []


def test_every_registered_space_implements_the_geometry_protocol():
    for cls in REGISTRY.values():
        for m in cls.examples():
            assert isinstance(m, Geometry), m


def test_speed_kernels_are_reached_only_through_the_manifolds():
    offences = []
    for rel, tree in _modules():
        if rel.startswith("manifolds/"):
            continue
        offences += [f"{rel} imports {name}" for name in _imports(tree) if "kernels" in name.split(".")]
    assert offences == []


def test_no_module_compares_a_laplace_sampler_with_a_name():
    offences = []
    for rel, tree in _modules():
        for node in ast.walk(tree):
            if isinstance(node, ast.Compare) and "laplace_sampler" in _names(node) and any(
                    isinstance(c, ast.Constant) and isinstance(c.value, str) for c in [node.left, *node.comparators]):
                offences.append(f"{rel}:{node.lineno} compares laplace_sampler with a string")
            if isinstance(node, ast.Subscript) and "laplace_sampler" in _names(node.slice):
                offences.append(f"{rel}:{node.lineno} looks a sampler up by laplace_sampler")
    assert offences == []
