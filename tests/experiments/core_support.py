"""What the experiments' core tests share: a one-node workflow whose builtin agent answers
a digest of its input (so a `contains` scorer can check it), a dataset of a few questions,
and running an experiment's items in this process."""
from __future__ import annotations

import json
import sys

from core.documents import import_documents
from executions.models import Execution
from experiments.dataset_services import dataset_import
from experiments.models import Experiment, ExperimentItem
from experiments.scoring import item_run_ended
from tests.executions.conftest import drain

ECHO = [
    {"agent_id": "Echo", "name": "Echo", "version": "1.0.0", "type": "business", "status": "active",
     "prompt_config": {"system_prompt": "Repeat what you are given."}, "capabilities": {"skills": []},
     "runtime": {"backend": "builtin"}},
    {"workflow_id": "echo", "name": "Echo", "topology": "seq",
     "nodes": [{"id": "say", "agent_ref": "Echo", "input_mapping": {"question": "$.input.question"}}],
     "error_handling": {"retry_count": 0}},
]

QUESTIONS = [
    {"id": "q1", "input": {"question": "the capital of France is Paris"}, "expected": "Paris"},
    {"id": "q2", "input": {"question": "the capital of Italy is Rome"}, "expected": "Rome"},
    {"id": "q3", "input": {"question": "the capital of Spain is Madrid"}, "expected": "Lisbon"},
    {"id": "q4", "input": {"question": "no expected value here"}},
]

# A judge on the command backend: reads the prompt, answers a fixed score and reason.
JUDGE_ARGV = [sys.executable, "-c", "import json, sys; sys.stdin.read(); "
              "print(json.dumps({'score': 0.75, 'reason': 'names the city'}))"]


JUDGE = {"agent_id": "Judge", "name": "Judge", "version": "1.0.0", "type": "business", "status": "active",
         "prompt_config": {"system_prompt": "Judge."}, "capabilities": {"skills": []},
         "runtime": {"backend": "judge_command"}}


def judge_backend(settings) -> None:
    """A backend `judge_command` that answers as a judge, and the agent Judge on it."""
    settings.LLM_BACKENDS = {**settings.LLM_BACKENDS, "judge_command": {"kind": "command", "argv": JUDGE_ARGV}}
    import_documents([JUDGE], actor="test")


def load(items=QUESTIONS, name: str = "capitals"):
    import_documents(ECHO, actor="test")
    data = "\n".join(json.dumps(item) for item in items).encode()
    return dataset_import(name=name, data=data, fmt="jsonl")


def run_in_process(experiment: Experiment, limit: int = 200) -> Experiment:
    """Run the experiment's running items' runs here, scoring each as the task would, until
    none is left running."""
    for _ in range(limit):
        running = list(ExperimentItem.objects.filter(experiment=experiment, status="running")
                       .values_list("execution_id", flat=True))
        if not running:
            break
        for execution_pk in running:
            drain(Execution.objects.get(pk=execution_pk))
            item_run_ended(execution_pk=execution_pk)
    experiment.refresh_from_db()
    return experiment


def runs_per_item(experiment: Experiment) -> dict[int, int]:
    """How many runs each item of the experiment has (its runs name it; execution ids carry the position)."""
    counts: dict[int, int] = {}
    for execution_id in Execution.objects.filter(experiment=experiment.experiment_id).values_list("execution_id",
                                                                                                  flat=True):
        position = int(execution_id[len(experiment.experiment_id) + 1:].split("_")[0])
        counts[position] = counts.get(position, 0) + 1
    return counts
