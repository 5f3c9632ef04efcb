"""What the comparison tests share: experiments made directly, item by item, with the
scores, outputs, statuses, costs and runs a test chooses (written with bulk_create, not run),
over a dataset version of the test's items."""
from __future__ import annotations

import json
from datetime import timedelta

from django.utils import timezone

from core.documents import import_documents
from executions.models import Execution
from experiments.dataset_services import dataset_import
from experiments.models import DatasetItem, DatasetVersion, Experiment, ExperimentItem
from tests.experiments.core_support import ECHO
from workflows.models import Workflow

SCORERS = [{"type": "exact"}, {"type": "contains", "name": "mentions"}]


def dataset(items: list[dict], name: str = "capitals") -> DatasetVersion:
    """A dataset version of `items` (each {"id", "input", …}): the next version of `name`."""
    if not Workflow.objects.filter(workflow_id="echo").exists():
        import_documents(ECHO, actor="test")
    data = "\n".join(json.dumps({"input": {"question": item["id"]}, **item}) for item in items).encode()
    return dataset_import(name=name, data=data, fmt="jsonl")


def experiment(experiment_id: str, version: DatasetVersion, results: dict[str, dict], *, age: int = 0,
               scorers: list[dict] = SCORERS, runs: bool = False) -> Experiment:
    """An experiment over `version` whose item `item_id` ended as results[item_id] says:
    {"status" (success), "scores": {name: value, or None for not scored}, "output", "cost" (units),
    "latency", "error_code"}; an item absent from `results` is left pending. `age`: created this
    many minutes ago (the oldest is the default baseline). `runs`: each started item gets a run."""
    workflow = Workflow.objects.get(workflow_id="echo")
    made = Experiment.objects.create(
        experiment_id=experiment_id, workflow=workflow, workflow_version=workflow.versions.order_by("-number").first(),
        dataset_version=version, scorers=scorers, status="success",
        created_at=timezone.now() - timedelta(minutes=age))
    items = list(DatasetItem.objects.filter(version=version).order_by("position").values("pk", "item_id", "position"))
    executions = {}
    if runs:
        started = [row for row in items if row["item_id"] in results]
        Execution.objects.bulk_create([
            Execution(execution_id=f"{experiment_id}_{row['position']}", workflow=workflow, status="success", input={},
                      experiment=experiment_id) for row in started])
        by_id = dict(Execution.objects.filter(experiment=experiment_id).values_list("execution_id", "pk"))
        executions = {row["item_id"]: by_id[f"{experiment_id}_{row['position']}"] for row in started}
    rows = []
    for row in items:
        result = results.get(row["item_id"])
        if result is None:
            rows.append(ExperimentItem(experiment=made, dataset_item_id=row["pk"], position=row["position"]))
            continue
        rows.append(ExperimentItem(
            experiment=made, dataset_item_id=row["pk"], position=row["position"],
            status=result.get("status", "success"), execution_id=executions.get(row["item_id"]),
            output=result.get("output"), error_code=result.get("error_code", ""),
            scores={name: ({"score": value, "reason": "test"} if value is not None
                           else {"not_scored": "NO_EXPECTED", "reason": "test"})
                    for name, value in result.get("scores", {}).items()},
            cost=result.get("cost", 0), latency_seconds=result.get("latency", 1.0)))
    ExperimentItem.objects.bulk_create(rows, batch_size=2000)
    return made
