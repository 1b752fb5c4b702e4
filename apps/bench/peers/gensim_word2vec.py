"""gensim's skip-gram, the word2vec peer of `apps/bench/word2vec.sh` and `make demo`, with the
hyper-parameters of Darcy's runs: dim 100, window 5, 5 negatives, subsampling 1e-3, every word
kept. Usage: gensim_word2vec.py CORPUS OUT.bin THREADS EPOCHS (a binary word2vec file)."""
import sys

from gensim.models import Word2Vec


def main():
    corpus, out, threads, epochs = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    model = Word2Vec(corpus_file=corpus, vector_size=100, window=5, negative=5, sample=1e-3,
                     epochs=epochs, workers=threads, sg=1, hs=0, min_count=1, alpha=0.025,
                     seed=1)
    model.wv.save_word2vec_format(out, binary=True)


if __name__ == "__main__":
    main()
