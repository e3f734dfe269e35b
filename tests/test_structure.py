"""The architecture as tests: capabilities instead of class dispatch, one place for ε → σ.

- No module outside ``manifolds/`` asks which class a manifold is (``isinstance`` against a
  manifold class) or probes it with ``hasattr``: the privacy layer reads declared capabilities.
- Only ``privacy/measurements.py`` and ``privacy/calibration.py`` turn ε into a scale: no other
  module divides by ``epsilon``/``eps`` or calls a Gaussian calibration.
- The registry drives the shared property suite (test_contract_manifolds.py, where each space's
  declared capabilities are checked) and the CLI.
"""

import ast
from pathlib import Path

import manifold_dp
from manifold_dp.manifolds import REGISTRY

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
