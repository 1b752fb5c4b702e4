# apps/python/seq2seq.py on a small generated corpus: the vocabulary lives in the service on
# both sides, one row a word with no dictionary, and the next sentence is learned from the
# previous one as the peer learns it.
import random


def test_the_next_sentence_is_learned_from_the_previous_with_the_vocabulary_in_the_service(
        run_app):
    # Line pairs "p{g} q{g} r{g} x{g}" then "n{g} m{g} o{g}" of 30 groups: a pair within a
    # group is all predictable; across groups only the first word is not. The best accuracy
    # is 8/9.
    rng = random.Random(3)
    lines = []
    for _ in range(400):
        g = rng.randrange(30)
        lines += [f"p{g} q{g} r{g} x{g}", f"n{g} m{g} o{g}"]
    result = run_app("seq2seq.py", lines, "--pairs", "800", "--epochs", "10", "--batch", "16",
                     "--num-sampled", "16")
    assert result["darcy_accuracy"] > 0.6, result
    assert result["torch_accuracy"] > 0.6, result
    # A row for each of the 210 words, <s>, </s> and [PAD], with no dictionary; the peer's
    # table holds the training split's words, those 3 and [UNK].
    assert result["darcy_rows"] == 213, result
    assert result["torch_vocab"] == 214, result
