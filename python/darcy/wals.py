"""darcy.wals: weighted ALS (the chief, its workers and factor shards) from Python, over a
ratings file or a synthetic matrix, on a session in process or on a cluster."""

import collections
import os

from darcy import _darcy

Factors = collections.namedtuple(
    "Factors", "user_factors item_factors losses row_ids col_ids users items chief_restarts")
Factors.__doc__ = """The factors of a run: user_factors (rows, dim) and item_factors (cols, dim)
as float32 arrays (rows [users, ...) and columns [items, ...) are features), the loss after
each sweep, and the ids of rows and columns (empty for a synthetic matrix, whose ids are the
indices)."""


def train(session, path=None, format=None, rows=0, cols=0, nnz=0, dim=64, sweeps=10, workers=2,
          lambda_=0.1, sigma=0.5, alpha=1.0, cg_steps=3, seed=1, holdout=0.0,
          checkpoint_dir=None):
    """Trains WALS on the ratings in `path` ("tsv", "csv" or "lastfm": row, column, value) or,
    without a path, on a synthetic rows x cols matrix of about nnz entries. With
    checkpoint_dir the run checkpoints each sweep and a rerun resumes. Returns Factors."""
    options = _darcy._WalsOptions()
    options.path = os.fspath(path) if path else ""
    options.format = format or ("tsv" if path else "")
    options.rows, options.cols, options.nnz = rows, cols, nnz
    options.dim, options.sweeps, options.workers, options.cg_steps = dim, sweeps, workers, cg_steps
    options.lambda_, options.sigma, options.alpha = lambda_, sigma, alpha
    options.seed, options.holdout = seed, holdout
    options.checkpoint_dir = os.fspath(checkpoint_dir) if checkpoint_dir else ""
    result = _darcy._wals_train(session._handle, options)
    return Factors(**result)
