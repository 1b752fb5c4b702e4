# Tests python/darcy/wals.py: WALS from Python on a synthetic matrix and a ratings file.
import numpy as np
import pytest

import darcy
import darcy.wals


def test_synthetic_factors_have_their_shapes_lower_the_loss_and_repeat_exactly(session):
    runs = [darcy.wals.train(session, rows=300, cols=200, nnz=3000, dim=8, sweeps=3, seed=4)
            for _ in range(2)]
    first = runs[0]
    assert first.user_factors.shape == (300, 8) and first.user_factors.dtype == np.float32
    assert first.item_factors.shape == (200, 8)
    assert len(first.losses) == 3 and first.losses[-1] < first.losses[0]
    np.testing.assert_array_equal(first.user_factors, runs[1].user_factors)
    np.testing.assert_array_equal(first.item_factors, runs[1].item_factors)


def test_a_ratings_file_keeps_its_ids(session, tmp_path):
    ratings = tmp_path / "ratings.tsv"
    lines = [f"u{u}\ti{(u * 7 + j) % 30}\t{1 + j}" for u in range(40) for j in range(5)]
    ratings.write_text("\n".join(lines) + "\n")
    f = darcy.wals.train(session, ratings, format="tsv", dim=4, sweeps=2)
    assert f.users == 40 and f.items == 30
    assert sorted(f.row_ids) == sorted(f"u{u}" for u in range(40))
    assert f.user_factors.shape == (40, 4) and f.item_factors.shape == (30, 4)


@pytest.mark.parametrize("settings,error", [
    (dict(path="/nonexistent/ratings.tsv"), darcy.NotFound),
    (dict(rows=30, cols=20, nnz=100, dim=0), darcy.InvalidArgument),
    (dict(rows=30, cols=20, nnz=100, format="tsv"), darcy.InvalidArgument),
])
def test_bad_runs_raise(session, settings, error):
    with pytest.raises(error):
        darcy.wals.train(session, sweeps=1, **settings)
