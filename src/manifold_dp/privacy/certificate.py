"""The privacy certificate a release carries: typed, frozen, with a documented JSON form.

Every field is a function of public parameters (never of the data): what was released, under
which guarantee, by which mechanism at which scale, and how the output was post-processed. The
JSON schema is ``CERTIFICATE_SCHEMA`` (a JSON Schema document) and is described in
``docs/certificate.md``; ``Certificate.to_json`` is the only serialisation (the CLI uses it).
Schema 2 added ``radius_selection`` (``radius="auto"``: the radius is itself a private release);
schema 3 ``center_selection`` (``center="auto"``: the stages of the private ball) and
``mechanism_selection`` (``mechanism="auto"``: the candidates compared, from public values only).
"""

import json
from dataclasses import asdict, dataclass, fields
from typing import TYPE_CHECKING, Any, ClassVar

__all__ = ["Certificate", "RadiusSelection", "BallStage", "CenterSelection", "MechanismCandidate", "MechanismSelection"]

SCHEMA_ID = "manifold_dp.certificate/3"


class JsonRecord:
    """``to_dict``/``to_json`` of a frozen dataclass of public fields (the certificates)."""

    if TYPE_CHECKING:  # every subclass is a dataclass
        __dataclass_fields__: ClassVar[dict[str, Any]]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def to_json(self, **kwargs: Any) -> str:
        return json.dumps(self.to_dict(), **kwargs)


@dataclass(frozen=True)
class RadiusSelection:
    """How a private radius was chosen (``radius="auto"``): the exponential mechanism over a
    public grid, its ε, and the radius it chose (itself a private output, released with the
    statistic). ``epsilon + release_epsilon`` is the certificate's ``epsilon`` (``composition``
    says by which theorem)."""

    mechanism: str
    theorem: str
    utility: str
    epsilon: float
    release_epsilon: float
    quantile: float
    grid: str
    candidates: int
    chosen_radius: float
    composition: str


@dataclass(frozen=True)
class BallStage:
    """One stage of ``center="auto"`` (``privacy.private_ball``): ``stage`` is ``"centre"`` (the
    rough centre that needs no ball), ``"radius"`` (a private or public radius around the current
    centre), ``"recentre"`` or ``"release"`` (the chosen mechanism at the current ball). ``epsilon``
    and ``delta`` are this stage's share; ``radius`` the ball's radius (``None`` for the centre);
    ``scale`` the noise scale (``None`` for the exponential mechanism and where there is no noise)."""

    stage: str
    mechanism: str
    theorem: str
    statistic: str
    sensitivity: float
    sensitivity_bound: str
    scale: float | None
    epsilon: float
    delta: float
    radius: float | None


@dataclass(frozen=True)
class CenterSelection:
    """How ``center="auto"`` built its private ball: every stage in order, and how they compose
    (``composition``: the stages' ``epsilon`` and ``delta`` add up to the certificate's, except
    that Gaussian stages compose exactly as one μ-GDP mechanism, each listed with its own
    ``(ε, δ)``). ``bound`` is the
    first stage's public bound (SPD ``b``, hyperbolic and Euclidean ``B``; ``None`` where none is
    needed); ``small_n_fallback`` says that the radius was the public fallback (``fallback_index``) because
    ``n·ε`` was too small to choose one (a function of public values)."""

    method: str
    rounds: int
    bound: float | None
    small_n_fallback: bool
    composition: str
    stages: tuple[BallStage, ...]


@dataclass(frozen=True)
class MechanismCandidate:
    """One mechanism ``mechanism="auto"`` compared: its ``expected_noise_distance`` and ``scale``
    at the public parameters, or ``None`` with ``note`` saying why it was refused or not
    calibrated (``note`` may also qualify a value)."""

    mechanism: str
    expected_noise_distance: float | None
    scale: float | None
    note: str


@dataclass(frozen=True)
class MechanismSelection:
    """How ``mechanism="auto"`` chose ``chosen`` (the certificate's ``mechanism``): ``rule``, and
    every candidate compared, in ``MECHANISMS`` order. A function of public parameters only,
    made before any record was read (``privacy.planning.choose_mechanism``)."""

    rule: str
    chosen: str
    candidates: tuple[MechanismCandidate, ...]


@dataclass(frozen=True)
class Certificate(JsonRecord):
    """What a release guarantees. ``mechanism`` is the name passed in (``"laplace"``, ``"kng"``,
    ``"tangent_gaussian"``, ``"ambient_laplace"``, ``"ambient_gaussian"``,
    ``"coordinate_laplace"``) and round-trips; ``mechanism_title`` is for people. ``delta`` is 0
    for a pure ε-DP release, whatever ``delta`` the call was given. ``sampler_acceptance`` is
    ``None`` where it would depend on the data (then it is withheld). ``radius_selection`` is
    ``None`` unless the radius was chosen privately (``radius="auto"``): then ``epsilon`` and
    ``delta`` are the totals of the selection and the release, ``radius`` is the chosen radius,
    and ``sensitivity``, ``scale`` and ``scale_rule`` are those of the release at that radius."""

    statistic: str
    mechanism: str
    mechanism_title: str
    theorem: str
    epsilon: float
    delta: float
    manifold: str
    n: int
    radius: float
    sensitivity: float
    sensitivity_bound: str
    scale: float
    scale_rule: str
    restriction: str
    sampler: str
    sampler_acceptance: float | None
    optimisation: str
    output_grid: str
    output_grid_spacing: float | None
    library_version: str
    radius_selection: RadiusSelection | None = None
    center_selection: CenterSelection | None = None
    mechanism_selection: MechanismSelection | None = None
    schema: str = SCHEMA_ID

    def summary(self) -> str:
        lines = [f"{self.mechanism_title} ({self.mechanism}): ({self.epsilon:g}, {self.delta:g})-DP {self.statistic} — "
                 f"{self.theorem}"]
        for key in ("manifold", "n", "radius", "sensitivity", "sensitivity_bound", "scale", "scale_rule",
                    "restriction", "sampler", "sampler_acceptance", "optimisation", "output_grid"):
            lines.append(f"  {key}: {getattr(self, key)}")
        if self.radius_selection is not None:
            sel = self.radius_selection
            lines.append(f"  radius_selection: {sel.mechanism} ({sel.theorem}), epsilon {sel.epsilon:g} of {self.epsilon:g}, "
                         f"quantile {sel.quantile:g}, {sel.candidates} candidates ({sel.grid}); {sel.composition}")
        if self.center_selection is not None:
            for st in self.center_selection.stages:
                lines.append(f"  center_selection: {st.stage}: {st.mechanism}, epsilon {st.epsilon:g}, delta {st.delta:g}"
                             + (f", radius {st.radius:g}" if st.radius is not None else ""))
        if self.mechanism_selection is not None:
            compared = ", ".join(f"{c.mechanism} {c.expected_noise_distance:.3g}" if c.expected_noise_distance is not None
                                 else f"{c.mechanism} -" for c in self.mechanism_selection.candidates)
            why = ("the smallest worst-case expected error of the whole private ball"  # planning.BALL_AUTO_RULE
                   if self.mechanism_selection.rule.startswith("center='auto'") else "the smallest expected noise distance")
            lines.append(f"  mechanism_selection: {self.mechanism_selection.chosen}, {why} ({compared})")
        return "\n".join(lines)


_SIMPLE: dict[object, str] = {str: "string", int: "integer", float: "number"}


def _json_type(annotation: object) -> dict[str, Any]:
    if annotation in _SIMPLE:
        return {"type": _SIMPLE[annotation]}
    if annotation == (RadiusSelection | None):
        return {"type": ["object", "null"], "required": [f.name for f in fields(RadiusSelection)],
                "additionalProperties": False,
                "properties": {f.name: {"type": _SIMPLE[f.type]} for f in fields(RadiusSelection)}}
    if annotation == (MechanismSelection | None):
        return {"type": ["object", "null"], "required": [f.name for f in fields(MechanismSelection)],
                "additionalProperties": False, "properties": _MECHANISM_SELECTION_PROPERTIES}
    if annotation == (CenterSelection | None):
        return {"type": ["object", "null"], "required": [f.name for f in fields(CenterSelection)],
                "additionalProperties": False, "properties": _CENTER_SELECTION_PROPERTIES}
    return {"type": ["number", "null"]}  # float | None


_NULLABLE = {"string": {"type": "string"}, "number": {"type": "number"}, "number?": {"type": ["number", "null"]},
             "integer": {"type": "integer"}, "boolean": {"type": "boolean"}}
_BALL_STAGE_TYPES = dict(stage="string", mechanism="string", theorem="string", statistic="string", sensitivity="number",
                         sensitivity_bound="string", scale="number?", epsilon="number", delta="number", radius="number?")
_CENTER_SELECTION_PROPERTIES = {
    "method": {"type": "string"}, "rounds": {"type": "integer"}, "bound": {"type": ["number", "null"]},
    "small_n_fallback": {"type": "boolean"}, "composition": {"type": "string"},
    "stages": {"type": "array", "items": {"type": "object", "required": list(_BALL_STAGE_TYPES), "additionalProperties": False,
                                           "properties": {k: _NULLABLE[v] for k, v in _BALL_STAGE_TYPES.items()}}}}


_MECHANISM_SELECTION_PROPERTIES = {
    "rule": {"type": "string"}, "chosen": {"type": "string"},
    "candidates": {"type": "array", "items": {
        "type": "object", "required": ["mechanism", "expected_noise_distance", "scale", "note"], "additionalProperties": False,
        "properties": {"mechanism": {"type": "string"}, "expected_noise_distance": {"type": ["number", "null"]},
                       "scale": {"type": ["number", "null"]}, "note": {"type": "string"}}}}}


CERTIFICATE_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": SCHEMA_ID,
    "title": "manifold_dp privacy certificate",
    "type": "object",
    "required": [f.name for f in fields(Certificate)],
    "additionalProperties": False,
    "properties": {f.name: _json_type(f.type) for f in fields(Certificate)},
}
