"""One error family: every exception class of the house derives from `EngineError` and
has a stable code. The classes are found by walking the modules, so a new root fails here."""
import importlib
import inspect
import pkgutil

import pytest

from agents.backends.base import BackendError
from core.errors import DocumentError, NotFound, SwitchyardError
from engine.conditions import ConditionError, parse_condition
from engine.context import errors as ref_errors
from engine.context.errors import RefError
from engine.context.resolution import ResolutionAborted, ResolutionFailure
from engine.errors import EngineError
from engine.jsonpath import PathError, compile_path
from engine.tot import errors as tot_errors
from engine.tot.errors import ToTError
from executions.node_errors import NodeFailure

PACKAGES = ("engine", "core", "agents", "workflows", "executions", "knowledge")


def exception_classes():
    found = []
    for name in PACKAGES:
        package = importlib.import_module(name)
        modules = [package] + [importlib.import_module(info.name)
                               for info in pkgutil.walk_packages(package.__path__, f"{name}.")]
        for module in modules:
            found += [value for value in vars(module).values()
                      if inspect.isclass(value) and issubclass(value, BaseException)
                      and value.__module__ == module.__name__]
    return found


def test_it_roots_every_exception_class_in_the_engine_error():
    classes = exception_classes()
    # The walk reaches every layer: the engine, core and the apps' deepest modules.
    assert {RefError, ToTError, SwitchyardError, BackendError, NodeFailure} <= set(classes)
    strays = [f"{cls.__module__}.{cls.__qualname__}" for cls in classes if not issubclass(cls, EngineError)]
    assert strays == [], "exceptions outside the one family: " + ", ".join(strays)
    codeless = [f"{cls.__module__}.{cls.__qualname__}" for cls in classes
                if not (isinstance(cls.code, str) and cls.code)]
    assert codeless == [], "exceptions without a code: " + ", ".join(codeless)


def test_it_keeps_the_code_message_and_details():
    error = EngineError("the thing is broken", code="BROKEN", details={"thing": 1})
    assert (error.code, error.message, error.details) == ("BROKEN", "the thing is broken", {"thing": 1})
    assert str(error) == "the thing is broken"
    assert error.as_dict() == {"code": "BROKEN", "message": "the thing is broken", "details": {"thing": 1}}


def test_it_takes_the_class_code_unless_an_instance_names_one():
    assert EngineError("x").code == "ENGINE_ERROR"
    assert NotFound("no such agent").code == "NOT_FOUND"
    assert SwitchyardError("taken", code="CONFLICT").code == "CONFLICT"
    assert SwitchyardError("taken", code="CONFLICT").as_dict()["code"] == "CONFLICT"
    assert SwitchyardError("plain").code == "SWITCHYARD_ERROR"


def test_it_gives_the_seed_codes_to_reference_and_tot_errors():
    ref = RefError(ref_errors.REF_NOT_FOUND, "no output 'a'")
    assert (ref.code, ref.message, str(ref)) == ("REF_NOT_FOUND", "no output 'a'", "no output 'a'")
    tot = ToTError(tot_errors.SEARCH_EXHAUSTED, "no path left", recoverable=False)
    assert tot.code == "SEARCH_EXHAUSTED" and str(tot) == "no path left"
    # The seed's `error` field keeps its own shape.
    assert tot.as_dict() == {"code": "SEARCH_EXHAUSTED", "message": "no path left", "recoverable": False}


def test_it_names_the_failure_code_when_resolution_aborts():
    failure = ResolutionFailure(reference={"ref_type": "task_output", "task_id": "a"}, name="draft",
                                error_code=ref_errors.REF_TIMEOUT, error_message="a did not finish",
                                fallback_strategy="abort", fallback_value=None, attempts=1, timestamp="")
    aborted = ResolutionAborted(failure)
    assert aborted.code == "REF_TIMEOUT"
    assert str(aborted) == aborted.message == "input 'draft': REF_TIMEOUT: a did not finish"


def test_it_lets_input_errors_still_be_caught_as_value_errors():
    with pytest.raises(ValueError) as raised:
        compile_path("no dollar")
    assert isinstance(raised.value, PathError) and isinstance(raised.value, EngineError)
    assert raised.value.code == "REF_PATH_INVALID"
    assert raised.value.message == str(raised.value) == "JSONPath 'no dollar' must start with '$'"
    with pytest.raises(ConditionError) as raised:
        parse_condition("output.x ==")
    assert isinstance(raised.value, ValueError)
    assert raised.value.code == "CONDITION_INVALID" and raised.value.message == str(raised.value)


def test_it_keeps_run_failures_out_of_the_errors_answered_to_a_request():
    # The API's handler answers SwitchyardError with a 4xx; a backend that did not answer
    # or a node run that failed is recorded on the run, and one that escapes a request is
    # a server error, as before.
    assert not issubclass(BackendError, SwitchyardError)
    assert not issubclass(NodeFailure, SwitchyardError)
    assert issubclass(DocumentError, SwitchyardError)
    gap = BackendError("no skill 'x'", code="CAPABILITY_GAP", retryable=False, details={"missing_skills": ["x"]})
    assert (gap.code, gap.retryable, gap.details, str(gap)) == (
        "CAPABILITY_GAP", False, {"missing_skills": ["x"]}, "no skill 'x'")
    assert BackendError("down").code == "BACKEND_ERROR" and BackendError("down").details == {}
    failure = NodeFailure("timed out", code="TIMEOUT", retryable=True)
    assert (failure.code, failure.retryable, failure.details, failure.record) == ("TIMEOUT", True, None, {})


def test_an_interrupt_goes_through_the_engine_code_that_records_failures():
    from engine.compression import DictCompressionCache, compress_dependencies
    from engine.errors import register_interrupt

    class TimeLimit(Exception):
        """Stands for a worker's soft time limit, raised wherever the node's code is."""

    def stopped(content, ratio, model):
        raise TimeLimit()

    text = "\n".join(f"line {i} of a long output" for i in range(200))
    failed = compress_dependencies({"a": text}, cache=DictCompressionCache(), compressor=stopped)
    assert failed.sections[0].failed and "compression failed (TimeLimit" in failed.sections[0].error  # recorded
    register_interrupt(TimeLimit)
    with pytest.raises(TimeLimit):
        compress_dependencies({"a": text}, cache=DictCompressionCache(), compressor=stopped)


def test_the_workers_soft_time_limit_is_an_interrupt():
    from celery.exceptions import SoftTimeLimitExceeded

    from engine.errors import reraise_interrupt

    with pytest.raises(SoftTimeLimitExceeded):  # registered by the executions app
        reraise_interrupt(SoftTimeLimitExceeded())
