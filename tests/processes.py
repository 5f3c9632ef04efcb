"""The processes of this machine as /proc lists them, for tests that check what a worker or a
backend left running."""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple


class Process(NamedTuple):
    pid: int
    state: str  # Z (zombie) and X (dead) are gone but for their entry
    parent: int
    group: int


def processes() -> Iterator[Process]:
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:  # ended while we looked
            continue
        state, parent, group = text[text.rindex(")") + 2:].split()[:3]  # after the command's name
        yield Process(int(stat.parent.name), state, int(parent), int(group))


def in_group(pgid: int) -> list[int]:
    """The live processes (not zombies) of the process group `pgid`."""
    return [process.pid for process in processes() if process.group == pgid and process.state not in "ZX"]


def children(pid: int) -> list[int]:
    """The processes whose parent is `pid` (a prefork worker's pool processes)."""
    return [process.pid for process in processes() if process.parent == pid]
