"""The kinds of documents this app brings to core's document registry: executions,
evaluations, and the thought trees of Tree-of-Thoughts searches (export only, by node run id)."""
from core.documents import Kind, register_kind
from executions.documents import evaluation_document, execution_document, thought_tree_document
from executions.evaluations import evaluation_import_document
from executions.models import Evaluation, Execution, ThoughtSearch
from executions.services.document_import import execution_import_document
from executions.node_kinds.tot import thought_tree_import_document


def register_document_kinds() -> None:
    register_kind(Kind("execution", "execution_id", Execution, "execution_id", execution_import_document,
                       execution_document))
    register_kind(Kind("evaluation", "evaluation_id", Evaluation, "evaluation_id", evaluation_import_document,
                       evaluation_document))
    register_kind(Kind("thought_tree", "task_id", ThoughtSearch, "node_run__id", thought_tree_import_document,
                       thought_tree_document))
