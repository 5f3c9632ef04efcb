"""Inline continuation: the first node that a node run makes ready (the next node of a
chain) is run by the same worker instead of being sent through Redis; any others are sent
as usual. It is created already claimed by that worker (services/advance.py), in the
transaction that stored the previous result, and run next by the task that is still going
(services/node_run.py). A worker that dies before running it leaves a running node run
without a heartbeat, which the sweep sends again."""
from __future__ import annotations

import threading

chain_state = threading.local()
MAX_INLINE = 100
# A task continues a chain inline only while it is this young: the time limits are the
# task's (NODE_SOFT_TIME_LIMIT_SECONDS), so each node still gets all but a second of them.
INLINE_SECONDS = 1.0
