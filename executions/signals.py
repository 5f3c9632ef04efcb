"""What the run core tells apps above it, which it never imports (triggers):
Django signals, sent once the change they announce has committed."""
from __future__ import annotations

import logging

from django.dispatch import Signal

from executions.models import Execution

logger = logging.getLogger(__name__)

# A run ended (success, failed or cancelled): sent by `LockedRun.end` once the transaction
# that ended it commits, with `execution_pk` and `status`. A receiver that raises is logged,
# never raised into the worker or request that ended the run.
run_ended = Signal()


def send_run_ended(execution_pk: int, status: str) -> None:
    for receiver, answer in run_ended.send_robust(sender=Execution, execution_pk=execution_pk, status=status):
        if isinstance(answer, Exception):
            logger.error("run_ended receiver %r failed for execution %s: %s", receiver, execution_pk, answer,
                         exc_info=answer)
