"""Scorers: small JSON documents that say how an item's output is scored.

`check_scorers` reads an experiment's list of scorers once, refusing the first problem with
an error naming its field (`scorers[1].tolerance`), and gives `Scorer`s; `score` scores one
item's output with one of them. Every scorer gives a `Score` (a value in [0, 1] and why) or
`NotScored` (why it could not score: no expected value when it needs one, no output because
the run failed), which is not a 0 and is left out of means and pass rates.

Two kinds are checked here but scored by the Django side, which calls an agent or reads a
seed evaluation: `llm_judge` (its prompt and the reading of the judge's answer are in
`engine.experiments.judge`) and `evaluation` (`evaluation_score` below).

Adding a kind: one checking function, one scoring function, one line in `KINDS`.
"""
from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from engine.comparison import same
from engine.errors import EngineError
from engine.json_schema import PatternError, compile_pattern, field_problems, schema_refusal
from engine.jsonpath import PathError, compile_path, find_nodes
from engine.shapes import ID_PATTERN

MAX_SCORERS = 20
MAX_RUBRIC = 10_000  # characters
EVALUATION_SCORES = ("overall", "accuracy", "completeness", "efficiency")
DEFAULT_EVALUATION_PASS = 0.7  # the seed's pass score (engine.evaluation.Policy)
DEFAULT_JUDGE_PASS = 0.5

# Why a scorer could not score (NotScored.code).
NO_OUTPUT = "NO_OUTPUT"
NO_EXPECTED = "NO_EXPECTED"
EXPECTED_UNUSABLE = "EXPECTED_UNUSABLE"
NOT_MEASURED = "NOT_MEASURED"


class ScorerError(EngineError, ValueError):
    """A scorer document that cannot be used; `field` names where (`scorers[1].tolerance`)."""

    code = "SCORER_INVALID"

    def __init__(self, field: str, problem: str):
        super().__init__(f"{field} {problem}", details={"field": field})
        self.field = field


@dataclass(frozen=True)
class Score:
    """What a scorer gave: a value in [0, 1] and the reason, in words a person checks."""

    value: float
    reason: str

    def __post_init__(self) -> None:
        if not 0.0 <= self.value <= 1.0:  # also refuses NaN
            raise ValueError(f"a score is in [0, 1], not {self.value!r}")


@dataclass(frozen=True)
class NotScored:
    """A scorer that could not score this item: not a 0, and left out of means and pass rates."""

    code: str
    reason: str


@dataclass(frozen=True)
class Scorer:
    """A checked scorer: its name (unique in the experiment; by default its type), its type,
    the pass threshold (a score at or above it passes) and the fields of its type."""

    name: str
    type: str
    threshold: float
    config: Mapping[str, Any]

    def passes(self, score: Score) -> bool:
        return score.value >= self.threshold

    @property
    def local(self) -> bool:
        """Whether `score` scores it here (llm_judge and evaluation are scored by the Django side)."""
        return KINDS[self.type].score is not None


# -- checking --------------------------------------------------------------------------------


def check_scorers(doc: Any, *, field: str = "scorers") -> list[Scorer]:
    """The scorers of an experiment, checked; ScorerError naming the first problem's field."""
    if not isinstance(doc, list):
        raise ScorerError(field, "is a list of scorers")
    if len(doc) > MAX_SCORERS:
        raise ScorerError(field, f"has {len(doc)} scorers; at most {MAX_SCORERS}")
    scorers: list[Scorer] = []
    for index, raw in enumerate(doc):
        scorer = check_scorer(raw, field=f"{field}[{index}]")
        if any(other.name == scorer.name for other in scorers):
            problem = (f"is {scorer.name!r}, the name of an earlier scorer: give each scorer its own "
                       f"\"name\"" if "name" in raw else
                       f"is a second {scorer.type!r} scorer: give it a \"name\" of its own")
            raise ScorerError(f"{field}[{index}].name" if "name" in raw else f"{field}[{index}]", problem)
        scorers.append(scorer)
    return scorers


def check_scorer(raw: Any, *, field: str) -> Scorer:
    if not isinstance(raw, dict):
        raise ScorerError(field, "is a scorer, a JSON object with a \"type\"")
    kind_name = raw.get("type")
    if not isinstance(kind_name, str) or kind_name not in KINDS:
        raise ScorerError(f"{field}.type", f"is {_brief(kind_name)}; one of {', '.join(KINDS)}")
    kind = KINDS[kind_name]
    allowed = {"type", "name", "pass", *kind.fields}
    for key in raw:
        if key not in allowed:
            raise ScorerError(f"{field}.{key}", f"is not a field of a {kind_name} scorer "
                                                f"(its fields: {', '.join(sorted(allowed))})")
    name = raw.get("name", kind_name)
    if not isinstance(name, str) or not re.fullmatch(ID_PATTERN, name):
        raise ScorerError(f"{field}.name", "is 1 to 100 letters, digits and _ . : - (starting with a letter or digit)")
    config = kind.check(raw, field)
    threshold = kind.default_pass
    if "pass" in raw:
        threshold = _fraction(raw, "pass", field)
    if kind_name == "evaluation" and "pass_at" in raw:
        if "pass" in raw:
            raise ScorerError(f"{field}.pass_at", "and pass say the same: give one")
        threshold = config["pass_at"]
    return Scorer(name, kind_name, threshold, config)


def _fraction(raw: dict[str, Any], key: str, field: str) -> float:
    value = raw[key]
    if not _is_number(value) or not 0.0 <= value <= 1.0:
        raise ScorerError(f"{field}.{key}", f"is a number from 0 to 1, not {_brief(value)}")
    return float(value)


def _path(raw: dict[str, Any], key: str, field: str, *, required: bool = False) -> str | None:
    if key not in raw:
        if required:
            raise ScorerError(f"{field}.{key}", "is required: a JSONPath such as \"$.answer\"")
        return None
    if not isinstance(raw[key], str):
        raise ScorerError(f"{field}.{key}", f"is a JSONPath, as text, not {_brief(raw[key])}")
    try:
        compile_path(raw[key])
    except PathError as error:
        raise ScorerError(f"{field}.{key}", f"is not a JSONPath: {error}") from None
    path: str = raw[key]
    return path


def _flag(raw: dict[str, Any], key: str, field: str, default: bool) -> bool:
    value = raw.get(key, default)
    if not isinstance(value, bool):
        raise ScorerError(f"{field}.{key}", f"is true or false, not {_brief(value)}")
    return value


def _check_exact(raw: dict[str, Any], field: str) -> dict[str, Any]:
    return {"path": _path(raw, "path", field)}


def _check_contains(raw: dict[str, Any], field: str) -> dict[str, Any]:
    return {"path": _path(raw, "path", field), "case_sensitive": _flag(raw, "case_sensitive", field, True)}


def _check_json_schema(raw: dict[str, Any], field: str) -> dict[str, Any]:
    if "schema" not in raw:
        raise ScorerError(f"{field}.schema", "is required: the JSON Schema the output must meet")
    if not isinstance(raw["schema"], (dict, bool)):
        raise ScorerError(f"{field}.schema", "is a JSON Schema (an object)")
    refusal = schema_refusal(raw["schema"], field=f"{field}.schema")
    if refusal:
        raise ScorerError(f"{field}.schema", refusal)
    return {"schema": raw["schema"]}


def _check_jsonpath_equals(raw: dict[str, Any], field: str) -> dict[str, Any]:
    return {"path": _path(raw, "path", field, required=True), "expected_path": _path(raw, "expected_path", field)}


def _check_numeric(raw: dict[str, Any], field: str) -> dict[str, Any]:
    if "tolerance" not in raw:
        raise ScorerError(f"{field}.tolerance", "is required: how far from the expected number still scores 1")
    tolerance = raw["tolerance"]
    if not _is_number(tolerance) or not math.isfinite(tolerance) or tolerance < 0:
        raise ScorerError(f"{field}.tolerance", f"is a number ≥ 0, not {_brief(tolerance)}")
    return {"path": _path(raw, "path", field), "tolerance": float(tolerance),
            "relative": _flag(raw, "relative", field, False)}


def _check_regex(raw: dict[str, Any], field: str) -> dict[str, Any]:
    pattern = raw.get("pattern")
    if not isinstance(pattern, str) or not pattern:
        raise ScorerError(f"{field}.pattern", "is required: a regular expression (RE2), as text")
    try:
        compile_pattern(pattern)
    except PatternError as error:
        raise ScorerError(f"{field}.pattern", str(error)) from None
    return {"pattern": pattern, "path": _path(raw, "path", field)}


def _check_llm_judge(raw: dict[str, Any], field: str) -> dict[str, Any]:
    rubric = raw.get("rubric")
    if not isinstance(rubric, str) or not rubric.strip():
        raise ScorerError(f"{field}.rubric", "is required: what the judge scores, as text")
    if len(rubric) > MAX_RUBRIC:
        raise ScorerError(f"{field}.rubric", f"has {len(rubric)} characters; at most {MAX_RUBRIC}")
    agent = raw.get("agent")
    if agent is not None and (not isinstance(agent, str) or not re.fullmatch(ID_PATTERN, agent)):
        raise ScorerError(f"{field}.agent", f"is an agent id, not {_brief(agent)}")
    return {"rubric": rubric, "agent": agent}


def _check_evaluation(raw: dict[str, Any], field: str) -> dict[str, Any]:
    which = raw.get("score")
    if which not in EVALUATION_SCORES:
        raise ScorerError(f"{field}.score", f"is {_brief(which)}; one of {', '.join(EVALUATION_SCORES)}")
    config: dict[str, Any] = {"score": which}
    if "pass_at" in raw:
        config["pass_at"] = _fraction(raw, "pass_at", field)
    return config


# -- scoring ---------------------------------------------------------------------------------


def score(scorer: Scorer, *, input: Any, expected: Any, has_expected: bool, output: Any,
          has_output: bool = True) -> Score | NotScored:
    """One item's output scored. `has_expected`: the item has an `expected` (absent is not
    null); `has_output`: the run gave an output (False when it failed or was cancelled).
    `input` is the item's input, which no local scorer reads yet (the judge's prompt does)."""
    kind = KINDS[scorer.type]
    if kind.score is None:
        raise ScorerError(scorer.name, f"is a {scorer.type} scorer, scored by the Django side, not here")
    if not has_output:
        return NotScored(NO_OUTPUT, "no output to score: the run did not succeed")
    if kind.needs_expected and not has_expected:
        return NotScored(NO_EXPECTED, f"the item has no expected value, which a {scorer.type} scorer compares with")
    return kind.score(scorer.config, expected, output)


def evaluation_score(scorer: Scorer, scores: Mapping[str, Any]) -> Score | NotScored:
    """An `evaluation` scorer's score from a seed evaluation's scores (`accuracy`,
    `completeness`, `efficiency`, `overall_score`, as `engine.evaluation.Scored.scores()`
    gives them). An accuracy not measured (null) is not scored, never a 0."""
    which = scorer.config["score"]
    key = "overall_score" if which == "overall" and "overall" not in scores else which
    if key not in scores:
        return NotScored(NOT_MEASURED, f"the evaluation has no {which} score")
    value = scores[key]
    if value is None:
        return NotScored(NOT_MEASURED, f"the evaluation did not measure {which} (nothing verifiable)")
    if not _is_number(value) or not 0.0 <= value <= 1.0:
        raise ValueError(f"an evaluation's {which} is a number from 0 to 1, not {_brief(value)}")
    return Score(float(value), f"the evaluation's {which} is {value}")


def _single(path: str | None, data: Any, what: str) -> tuple[Any, str | None]:
    """The one value `path` selects in `data` (all of it without a path), or why there is none:
    a path that selects nothing or several nodes is not guessed at."""
    if path is None:
        return data, None
    try:
        nodes = find_nodes(path, data)
    except PathError as error:
        return None, f"{path} cannot be applied to the {what}: {error}"
    if len(nodes) != 1:
        return None, (f"{path} selects nothing in the {what}" if not nodes else
                      f"{path} selects {len(nodes)} values in the {what}, not one")
    return nodes[0].value, None


def _score_exact(config: Mapping[str, Any], expected: Any, output: Any) -> Score | NotScored:
    value, why = _single(config["path"], output, "output")
    if why:
        return Score(0.0, why)
    if same(value, expected):
        return Score(1.0, "the output equals the expected value")
    return Score(0.0, f"the output {_brief(value)} is not the expected {_brief(expected)}")


def _score_contains(config: Mapping[str, Any], expected: Any, output: Any) -> Score | NotScored:
    value, why = _single(config["path"], output, "output")
    if why:
        return Score(0.0, why)
    wanted = text_of(expected)
    if not wanted:
        return NotScored(EXPECTED_UNUSABLE, "the expected text is empty: every output would contain it")
    text = text_of(value)
    if not config["case_sensitive"]:
        wanted, text = wanted.casefold(), text.casefold()
    if wanted in text:
        return Score(1.0, f"the output contains {_brief(expected)}")
    return Score(0.0, f"the output does not contain {_brief(expected)}")


def _score_json_schema(config: Mapping[str, Any], expected: Any, output: Any) -> Score | NotScored:
    problems = field_problems(config["schema"], output, where="output")
    if problems:
        where, what = problems[0]
        more = f" (and {len(problems) - 1} more problems)" if len(problems) > 1 else ""
        return Score(0.0, f"{where}: {what}{more}")
    return Score(1.0, "the output meets the schema")


def _score_jsonpath_equals(config: Mapping[str, Any], expected: Any, output: Any) -> Score | NotScored:
    value, why = _single(config["path"], output, "output")
    if why:
        return Score(0.0, why)
    wanted, why = _single(config["expected_path"], expected, "expected value")
    if why:
        return NotScored(EXPECTED_UNUSABLE, why)
    if same(value, wanted):
        return Score(1.0, f"{config['path']} equals the expected value")
    return Score(0.0, f"{config['path']} is {_brief(value)}, not the expected {_brief(wanted)}")


def _score_numeric(config: Mapping[str, Any], expected: Any, output: Any) -> Score | NotScored:
    wanted = expected
    if not _is_number(wanted) or not math.isfinite(wanted):
        return NotScored(EXPECTED_UNUSABLE, f"the expected value {_brief(expected)} is not a number")
    value, why = _single(config["path"], output, "output")
    if why:
        return Score(0.0, why)
    if not _is_number(value):
        return Score(0.0, f"the output {_brief(value)} is {_json_type(value)}, not a number")
    if not math.isfinite(value):
        return Score(0.0, f"the output {value!r} is not a finite number")
    tolerance = config["tolerance"] * (abs(wanted) if config["relative"] else 1.0)
    distance = abs(value - wanted)
    within = "within" if distance <= tolerance else "beyond"
    how = f"{config['tolerance']:g} × |{wanted:g}|" if config["relative"] else f"{tolerance:g}"
    return Score(1.0 if distance <= tolerance else 0.0,
                 f"{value:g} is {distance:g} from {wanted:g}, {within} the tolerance {how}")


def _score_regex(config: Mapping[str, Any], expected: Any, output: Any) -> Score | NotScored:
    value, why = _single(config["path"], output, "output")
    if why:
        return Score(0.0, why)
    try:
        found = compile_pattern(config["pattern"]).search(text_of(value))
    except UnicodeEncodeError:  # a lone surrogate is not text RE2 can read
        return Score(0.0, "the output is not text RE2 can read (it holds a lone surrogate)")
    if found is None:
        return Score(0.0, f"the pattern {config['pattern']!r} does not match the output")
    return Score(1.0, f"the pattern {config['pattern']!r} matches {_brief(found.group(0))}")


@dataclass(frozen=True)
class Kind:
    """One type of scorer: its own fields, how they are checked, how it scores (None: by the
    Django side), whether it needs the item's expected value, its default pass threshold."""

    fields: tuple[str, ...]
    check: Callable[[dict[str, Any], str], dict[str, Any]]
    score: Callable[[Mapping[str, Any], Any, Any], Score | NotScored] | None
    needs_expected: bool
    default_pass: float = 1.0


KINDS: dict[str, Kind] = {
    "exact": Kind(("path",), _check_exact, _score_exact, True),
    "contains": Kind(("path", "case_sensitive"), _check_contains, _score_contains, True),
    "json_schema": Kind(("schema",), _check_json_schema, _score_json_schema, False),
    "jsonpath_equals": Kind(("path", "expected_path"), _check_jsonpath_equals, _score_jsonpath_equals, True),
    "numeric": Kind(("path", "tolerance", "relative"), _check_numeric, _score_numeric, True),
    "regex": Kind(("pattern", "path"), _check_regex, _score_regex, False),
    "llm_judge": Kind(("rubric", "agent"), _check_llm_judge, None, False, DEFAULT_JUDGE_PASS),
    "evaluation": Kind(("score", "pass_at"), _check_evaluation, None, False, DEFAULT_EVALUATION_PASS),
}


# -- values as text --------------------------------------------------------------------------


def text_of(value: Any) -> str:
    """A value as the text scorers read: a string is itself, anything else its JSON text."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)


def _brief(value: Any, limit: int = 80) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=repr)
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text) - limit} more characters)"


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, str):
        return "a string"
    return "an array" if isinstance(value, list) else "an object" if isinstance(value, dict) else type(value).__name__
