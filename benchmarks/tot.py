"""The Tree-of-Thoughts search on every Game-of-24 puzzle of four numbers from 1 to 13.

The 1,820 multisets are enumerated here; `solve` (brute force) says which are solvable.
Each puzzle is searched in-process with the builtin roles (no Celery, no database: this
measures the search) by BFS keeping 1, 3 (the seed's example) and 5 nodes per level, and
by DFS. The builtin evaluator is a heuristic for three numbers and exact for two — not
GPT-4 — so the figures are not the ToT paper's (74 % for b=5 on its 100 hardest puzzles).

"reachable" is the ceiling set by the generator: the solvable puzzles whose tree, with k
candidates per expansion, holds a solution at all.
"""
import itertools
import json
import time
from fractions import Fraction

from django.core.management.base import BaseCommand, CommandError

from engine.tot import SearchConfig, builtin_roles, run_tot, solve, verify
from engine.tot.game24 import proposals
from engine.tot.tree import EXPANDED

SEARCHES = (("BFS b=1", {"strategy": "BFS", "breadth": 1}),
            ("BFS b=3", {"strategy": "BFS", "breadth": 3}),  # the seed's example: top-3 per level
            ("BFS b=5", {"strategy": "BFS", "breadth": 5}),
            ("DFS", {"strategy": "DFS"}))


def puzzles() -> list[tuple[int, ...]]:
    return list(itertools.combinations_with_replacement(range(1, 14), 4))


def reachable(state: list[Fraction], k: int) -> bool:
    """Whether the builtin proposer's first k steps at each state lead to 24 somewhere."""
    if len(state) == 1:
        return state[0] == 24
    return any(reachable([Fraction(value) for value in proposal["metadata"]["left"]], k)
               for proposal in proposals(state)[:k])


def measure(name: str, config: SearchConfig, cases: list[tuple[tuple[int, ...], bool]]) -> dict:
    roles = builtin_roles()
    solved = wrong = nodes = expanded = evaluator = llm = backtracks = 0
    examples = []
    started = time.perf_counter()
    for numbers, solvable in cases:
        run = run_tot(problem=" ".join(map(str, numbers)), task_type="math_reasoning", task_id="benchmark",
                      roles=roles, config=config)
        if run.final_solution is not None:
            errors = verify(run.final_solution["answer"], numbers)
            if errors or not solvable:
                wrong += 1
                examples.append({"numbers": numbers, "answer": run.final_solution["answer"],
                                 "errors": errors or ["the puzzle has no solution"]})
            else:
                solved += 1
        nodes += run.stats["total_nodes"]
        backtracks += run.stats["total_backtracks"]
        llm += run.stats["llm_calls"]
        evaluator += run.calls_by_role["evaluator"]
        expanded += sum(node.status == EXPANDED for node in run.tree.nodes.values())
    seconds = time.perf_counter() - started
    count = len(cases)
    solvable_count = sum(solvable for _, solvable in cases)
    return {
        "search": name, "branching_factor": config.branching_factor, "puzzles": count,
        "solvable": solvable_count, "solved": solved,
        "success_rate": solved / solvable_count if solvable_count else None,
        "wrong_answers": wrong, "wrong_examples": examples[:5],
        "mean_nodes": nodes / count, "mean_expanded": expanded / count,
        "mean_evaluator_calls": evaluator / count, "mean_llm_calls": llm / count,
        "mean_backtracks": backtracks / count, "seconds": seconds,
    }


class Command(BaseCommand):
    help = ("Run the Tree-of-Thoughts search (builtin roles, in-process) on every Game-of-24 puzzle of four "
            "numbers from 1 to 13 with BFS b=1, b=3 and b=5 and DFS; exit 1 on any wrong answer.")

    def add_arguments(self, parser):
        parser.add_argument("--limit", type=int, default=None, help="only the first N puzzles of the enumeration")
        parser.add_argument("--branching", type=int, nargs="+", default=[5, 8], metavar="K",
                            help="candidates asked per expansion (several: one table each); default 5 8")
        parser.add_argument("--json", dest="as_json", action="store_true", help="print the figures as JSON")

    def handle(self, *args, limit, branching, as_json, **options):
        if limit is not None and limit < 1:
            raise CommandError("--limit must be at least 1")
        if any(k < 1 for k in branching):
            raise CommandError("--branching must be at least 1")
        enumerated = puzzles()
        chosen = enumerated[:limit] if limit else enumerated
        started = time.perf_counter()
        cases = [(numbers, solve(numbers) is not None) for numbers in chosen]
        solve_seconds = time.perf_counter() - started
        solvable = [numbers for numbers, ok in cases if ok]
        tables = []
        for k in branching:
            ceiling = sum(reachable([Fraction(n) for n in numbers], k) for numbers in solvable)
            rows = [measure(name, SearchConfig.for_task("math_reasoning", branching_factor=k, **settings), cases)
                    for name, settings in SEARCHES]
            tables.append({"branching_factor": k, "reachable": ceiling, "rows": rows})
        figures = {"puzzles": len(cases), "enumerated": len(enumerated), "solvable": len(solvable),
                   "solve_seconds": solve_seconds, "evaluator": "builtin heuristic (not an LLM)", "tables": tables}
        if as_json:
            self.stdout.write(json.dumps(figures, indent=2))
        else:
            self.report(figures)
        rows = [row for table in tables for row in table["rows"]]
        wrong = sum(row["wrong_answers"] for row in rows)
        if wrong:
            examples = [example for row in rows for example in row["wrong_examples"]]
            raise CommandError(f"{wrong} wrong answer(s), for example: {json.dumps(examples[:5], ensure_ascii=False)}")

    def report(self, figures: dict) -> None:
        write = self.stdout.write
        write(f"Game of 24: {figures['puzzles']} of {figures['enumerated']} multisets of 4 numbers from 1-13, "
              f"{figures['solvable']} solvable (brute force, {figures['solve_seconds']:.1f} s).")
        write("Builtin roles, in-process; the evaluator is a heuristic (exact for 2 numbers), not GPT-4 — "
              "compare with care to the ToT paper's 74 % (GPT-4, b=5, its 100 hardest puzzles).")
        for table in figures["tables"]:
            solvable = figures["solvable"] or 1
            write(f"\nk = {table['branching_factor']} candidates per expansion — reachable: {table['reachable']} "
                  f"solvable puzzles ({100 * table['reachable'] / solvable:.1f} %) hold a solution within the "
                  f"proposer's first {table['branching_factor']} steps")
            write(f"{'search':<9} {'solved':>13} {'success':>8} {'wrong':>6} {'nodes':>7} {'expanded':>9} "
                  f"{'eval calls':>11} {'llm calls':>10} {'backtracks':>11} {'time':>8}")
            for row in table["rows"]:
                rate = "-" if row["success_rate"] is None else f"{100 * row['success_rate']:.1f} %"
                write(f"{row['search']:<9} {row['solved']:>6} / {row['solvable']:<4} {rate:>8} "
                      f"{row['wrong_answers']:>6} {row['mean_nodes']:>7.1f} {row['mean_expanded']:>9.1f} "
                      f"{row['mean_evaluator_calls']:>11.1f} {row['mean_llm_calls']:>10.1f} "
                      f"{row['mean_backtracks']:>11.2f} {row['seconds']:>6.1f} s")
        write("\nnodes: the tree's size per puzzle, root included; expanded: nodes whose children were asked for; "
              "means over all puzzles, solvable or not.")
