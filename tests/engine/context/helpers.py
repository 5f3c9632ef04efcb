"""Building inputs of an exact token size for the context tests."""
from engine.context.content import render
from engine.tokens import TokenCounter

COUNTER = TokenCounter("cl100k_base")
WORDS = ("attention transformer encoder decoder layer head token sequence model training data result "
         "parallel recurrent position embedding softmax query key value score").split()


def sentences(n_words: int, seed: int = 0) -> str:
    """Readable-ish prose of about `n_words` words, different for each seed."""
    words = []
    for i in range(n_words):
        words.append(WORDS[(i * 7 + seed * 13 + i // 5) % len(WORDS)])
        if i % 12 == 11:
            words[-1] += "."
    return " ".join(words).capitalize() + "."


def text_of(tokens: int, seed: int = 0) -> str:
    """A text of exactly `tokens` tokens."""
    text = sentences(tokens, seed)
    while COUNTER.count(text) > tokens:
        text = text[: int(len(text) * tokens / COUNTER.count(text)) - 1]
    while COUNTER.count(text) < tokens:
        text += " a"
    assert COUNTER.count(text) == tokens
    return text


def atoms_of(tokens: int, types=("claim", "evidence", "methodology", "background"), seed: int = 0) -> list[dict]:
    """A list of knowledge atoms whose JSON is exactly `tokens` tokens."""
    atoms = []
    while COUNTER.count(render(atoms)) < tokens - 150:
        i = len(atoms)
        atoms.append({"atom_id": f"atom_{seed}_{i:04d}", "atom_type": types[i % len(types)],
                      "content": sentences(60, seed * 1000 + i), "confidence": round(0.5 + (i % 50) / 100, 2)})
    atoms.append({"atom_id": f"atom_{seed}_pad", "atom_type": types[0], "content": "", "confidence": 0.5})
    while COUNTER.count(render(atoms)) < tokens:
        atoms[-1]["content"] += " a"
    while COUNTER.count(render(atoms)) > tokens:
        atoms[-1]["content"] = atoms[-1]["content"][:-2]
    assert COUNTER.count(render(atoms)) == tokens, COUNTER.count(render(atoms))
    return atoms
