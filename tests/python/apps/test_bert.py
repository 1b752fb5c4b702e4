# apps/python/bert.py on a small generated corpus: the vocabulary lives in the service, one row
# a word with no dictionary, and masked words are learned from their context as the peer
# learns them.
import json
import pathlib
import random
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[3]


def test_masked_words_are_learned_from_their_context_with_the_vocabulary_in_the_service(tmp_path):
    # Sentences "s{g} a{g} b{g} c{g} d{g}" of 40 groups: every word tells its group, so a
    # masked word follows from the rest.
    rng = random.Random(3)
    lines = []
    for _ in range(600):
        g = rng.randrange(40)
        lines.append(f"s{g} a{g} b{g} c{g} d{g}")
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(lines) + "\n")
    run = subprocess.run([sys.executable, str(ROOT / "apps" / "python" / "bert.py"),
                          "--corpus", str(corpus), "--sentences", "600", "--epochs", "10",
                          "--batch", "16", "--num-sampled", "16"],
                         capture_output=True, text=True, timeout=280)
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout.strip().splitlines()[-1])
    assert result["darcy_accuracy"] > 0.3, result
    assert result["torch_accuracy"] > 0.3, result
    # A row for each of the 200 words and [MASK] (sentences of one length need no [PAD]),
    # with no dictionary; the peer's table holds the training split's words and 3 specials.
    assert result["darcy_rows"] == 201, result
    assert result["torch_vocab"] <= 203, result
