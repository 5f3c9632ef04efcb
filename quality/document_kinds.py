"""The kind of document this app brings to core's document registry: evaluations (§7)."""
from core.documents import Kind, register_kind
from executions.documents import evaluation_document
from executions.models import Evaluation
from quality.evaluations import evaluation_import_document


def register_document_kinds() -> None:
    register_kind(Kind("evaluation", "evaluation_id", Evaluation, "evaluation_id", evaluation_import_document,
                       evaluation_document))
