# apps/python/bert.py on a small generated corpus: the vocabulary lives in the service, one row
# a word with no dictionary, and masked words are learned from their context as the peer
# learns them.
import random


def test_masked_words_are_learned_from_their_context_with_the_vocabulary_in_the_service(
        run_app):
    # Sentences "s{g} a{g} b{g} c{g} d{g}" of 40 groups: every word tells its group, so a
    # masked word follows from the rest.
    rng = random.Random(3)
    lines = []
    for _ in range(600):
        g = rng.randrange(40)
        lines.append(f"s{g} a{g} b{g} c{g} d{g}")
    result = run_app("bert.py", lines, "--sentences", "600", "--epochs", "10", "--batch", "16",
                     "--num-sampled", "16")
    assert result["darcy_accuracy"] > 0.3, result
    assert result["torch_accuracy"] > 0.3, result
    # A row for each of the 200 words and [MASK] (sentences of one length need no [PAD]),
    # with no dictionary; the peer's table holds the training split's words and 3 specials.
    assert result["darcy_rows"] == 201, result
    assert result["torch_vocab"] <= 203, result
