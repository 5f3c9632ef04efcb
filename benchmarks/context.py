"""Benchmarks of the context builder against the engines underneath it.

Ratios, not absolute times: both sides run in the same process, in alternate rounds, timed
by the CPU time this process spends (the best round of each). Wall time on a machine shared
with other work measures the others' load as much as ours, and a side measured before the
other meets a different load.
"""
import json
import random
import time
from typing import Any

from django.core.management.base import BaseCommand

from engine.context.assembler import ContextBuilder
from engine.context.content import render
from engine.context.limits import ContextLimits
from engine.context.resolution import Sources, select_path
from engine.jsonpath import compile_path
from engine.tokens import OFFLINE_ENCODINGS, TokenCounter, get_encoding

ASSEMBLY_TARGET = 1.5
JSONPATH_TARGET = 1.3
VOCABULARY = (
    "attention transformer encoder decoder layer head token sequence model training data result parallel "
    "recurrent position embedding softmax query key value score gradient optimiser dropout residual "
    "normalisation translation benchmark corpus vocabulary beam search label smoothing convergence "
    "architecture inference latency throughput evaluation baseline ablation hypothesis evidence claim"
).split()


def prose(rng: random.Random, words: int) -> str:
    out = []
    for i in range(words):
        word = rng.choice(VOCABULARY)
        out.append(word.capitalize() if i % 14 == 0 else word)
        if i % 14 == 13:
            out[-1] += rng.choice([".", ".", "!", "?"])
    return " ".join(out) + "."


def make_inputs(count: int, tokens_each: int, seed: int = 7) -> dict[str, object]:
    """`count` distinct task outputs of about `tokens_each` tokens: half prose, half knowledge atoms."""
    rng = random.Random(seed)
    words = int(tokens_each * 0.93)
    outputs: dict[str, object] = {}
    for n in range(count):
        if n % 2:
            outputs[f"task_{n:03d}"] = prose(rng, words)
        else:
            atoms: list[dict[str, Any]] = []
            while sum(len(a["content"]) for a in atoms) < words * 6:
                atoms.append({"atom_id": f"a{n}_{len(atoms)}", "atom_type": rng.choice(["claim", "evidence",
                              "methodology", "background"]), "content": prose(rng, 60),
                              "confidence": round(rng.uniform(0.4, 1.0), 3)})
            outputs[f"task_{n:03d}"] = {"atoms": atoms, "metadata": {"paper": f"p{n}"}}
    return outputs


def taken_in_turn(rounds: int, runs: dict, clock=time.process_time) -> dict[str, list[float]]:
    """The time each of `runs` took (by `clock`) in each of `rounds` rounds, each round running
    them all in turn, so that what slows the machine falls on every side alike."""
    times: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(rounds):
        for name, run in runs.items():
            started = clock()
            run()
            times[name].append(clock() - started)
    return times


def best_of_each(repeats: int, runs: dict) -> dict[str, float]:
    """The least CPU time each of `runs` took over `repeats` rounds, each round running them all in turn."""
    return {name: min(taken) for name, taken in taken_in_turn(repeats, runs).items()}


class Command(BaseCommand):
    help = "Measure context assembly and JSONPath resolution against bare tiktoken and jsonpath-rfc9535; print ratios."

    def add_arguments(self, parser):
        parser.add_argument("--inputs", type=int, default=100)
        parser.add_argument("--tokens-each", type=int, default=10_500)
        parser.add_argument("--repeats", type=int, default=3)
        parser.add_argument("--encoding", default="cl100k_base", choices=sorted(OFFLINE_ENCODINGS),
                            help="what to count in (o200k_base is today's OpenAI models')")
        parser.add_argument("--json", dest="as_json", action="store_true", help="print the figures as JSON")

    def handle(self, *args, inputs, tokens_each, repeats, encoding, as_json, **options):
        figures = [*self.assembly(inputs, tokens_each, repeats, encoding), self.jsonpath(repeats)]
        if as_json:
            self.stdout.write(json.dumps(figures, indent=2))
            return
        for f in figures:
            verdict = "ok" if f["ratio"] <= f["target"] else "OVER TARGET"
            self.stdout.write(f"{f['name']}: {f['ours_s']:.3f} s CPU vs {f['baseline']} {f['baseline_s']:.3f} s "
                              f"→ {f['ratio']:.2f}× (target ≤ {f['target']}×, {verdict}) — {f['detail']}")

    def assembly(self, count: int, tokens_each: int, repeats: int, name: str) -> list[dict]:
        outputs = make_inputs(count, tokens_each)
        texts = [render(value) for value in outputs.values()]
        encoding = get_encoding(name)
        total = sum(len(encoding.encode(text, disallowed_special=())) for text in texts)
        references = [{"ref_type": "task_output", "task_id": task_id} for task_id in outputs]
        items = [{"name": task_id, "content": value, "priority": 2 + n % 3} for n, (task_id, value)
                 in enumerate(outputs.items())]
        shapes = {"references, modes chosen by §5": {"references": references},
                  "inline items, trimmed by §6.3": {"items": items}}
        records: dict[str, dict] = {}

        def assemble(label: str):
            def run():
                # A fresh counter each time: nothing is remembered between runs.
                builder = ContextBuilder(limits=ContextLimits(), counter=TokenCounter(name),
                                         sources=Sources(task_output=outputs.__getitem__))
                records[label] = builder.assemble(task_id="bench", **shapes[label]).record
            return run

        best = best_of_each(repeats, {"bare": lambda: [encoding.encode(text, disallowed_special=()) for text in texts],
                                      **{label: assemble(label) for label in shapes}})
        bare = best["bare"]
        figures = []
        for label in shapes:
            ours = best[label]
            resolution = records[label]["resolution"]
            figures.append({
                "name": f"context assembly ({label})", "ours_s": ours, "baseline": "bare tiktoken encode",
                "baseline_s": bare, "ratio": ours / bare, "target": ASSEMBLY_TARGET,
                "detail": f"{count} inputs, {total:,} tokens in {name} → {resolution['final_tokens']:,} passed, "
                          f"{len(resolution['actions'])} actions",
            })
        return figures

    def jsonpath(self, repeats: int) -> dict:
        rng = random.Random(11)
        document = {
            "atoms": [{"atom_id": f"a{i}", "atom_type": rng.choice(["claim", "evidence", "methodology"]),
                       "confidence": round(rng.random(), 3), "content": prose(rng, 12),
                       "metadata": {"source_section": f"{rng.randint(1, 9)}.{rng.randint(1, 5)}"}} for i in range(40)],
            "relations": [{"relation_id": f"r{i}", "source": f"a{i}", "target": f"a{i + 1}"} for i in range(20)],
            "metadata": {"quality_score": 0.87, "paper": {"title": "Attention", "year": 2017}},
        }
        expressions = [
            "$.atoms", "$.atoms[0]", "$.atoms[*].content", "$.metadata.quality_score", "$.atoms[?(@.confidence>0.8)]",
            "$.atoms[?(@.atom_type=='claim')]", "$.atoms[-1:]", "$.atoms[0:5].atom_id", "$.relations[*].target",
            "$.metadata.paper.title", "$.atoms[*].metadata.source_section", "$.relations[?(@.source=='a3')]",
            "$.atoms[?(@.confidence<0.2)].atom_id", "$.metadata.paper", "$.relations[0]", "$.atoms[3].content",
            "$.atoms[?(@.atom_type!='evidence')].confidence", "$.relations", "$.metadata", "$.atoms[10:20]",
        ]
        calls = [expressions[i % len(expressions)] for i in range(10_000)]
        parsed = {expression: compile_path(expression) for expression in expressions}

        def bare():
            for expression in calls:
                [match.value for match in parsed[expression].find(document)]

        def ours():
            compile_path.cache_clear()  # the first use of each expression parses it, as in a fresh worker
            for expression in calls:
                select_path(document, expression)

        best = best_of_each(repeats, {"bare": bare, "ours": ours})
        baseline_s, ours_s = best["bare"], best["ours"]
        return {"name": "JSONPath resolution", "ours_s": ours_s, "baseline": "pre-parsed jsonpath-rfc9535 find",
                "baseline_s": baseline_s, "ratio": ours_s / baseline_s, "target": JSONPATH_TARGET,
                "detail": f"{len(calls):,} resolutions of {len(expressions)} distinct expressions"}

