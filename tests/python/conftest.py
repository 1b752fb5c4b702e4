# Fixtures of the Python package's tests: an in-process session per test, closed after it.
import numpy as np
import pytest

import darcy


@pytest.fixture
def session():
    s = darcy.Session.local(shards=2)
    yield s
    s.close()


@pytest.fixture
def rng():
    return np.random.default_rng(7)
