"""Rank-dependent inputs with exact closed-form results, as tests/support/test_support.h does for C++.

For element i on rank r of n ranks (signed types are shifted negative to cover signs):
    sum:     x = r + i%7 (- 3)                -> n*(i%7) + n(n-1)/2 (- 3n)
    prod:    x = 1 + (r+i)%2                  -> 2 ** #{r : (r+i) odd}
    min/max: x = (r+i)%n + i%5 (- 5)          -> min = i%5 (- 5), max = i%5 + n-1 (- 5)
    avg:     x = i%7 + 2r - (n-1) (+ n if unsigned) -> i%7 (+ n): the offsets cancel, so the mean is
             exact in every type (integer truncation is tested separately)
All values are small integers, exact in every dtype.
"""

import numpy as np


def is_signed(dtype):
    return not np.issubdtype(dtype, np.unsignedinteger)


def inputs(op, dtype, rank, n, count):
    i = np.arange(count, dtype=np.int64)
    shift = is_signed(dtype)
    if op == "sum":
        x = rank + i % 7 - (3 if shift else 0)
    elif op == "prod":
        x = 1 + (rank + i) % 2
    elif op in ("min", "max"):
        x = (rank + i) % n + i % 5 - (5 if shift else 0)
    else:
        x = i % 7 + 2 * rank - (n - 1) + (0 if shift else n)
    return x.astype(dtype)


def expected(op, dtype, n, count):
    i = np.arange(count, dtype=np.int64)
    shift = is_signed(dtype)
    if op == "sum":
        y = n * (i % 7) + n * (n - 1) // 2 - (3 * n if shift else 0)
    elif op == "prod":
        odd = np.zeros(count, dtype=np.int64)
        for r in range(n):
            odd += (r + i) % 2
        y = 2 ** odd
    elif op == "min":
        y = i % 5 - (5 if shift else 0)
    elif op == "max":
        y = i % 5 + n - 1 - (5 if shift else 0)
    else:
        y = i % 7 + (0 if shift else n)
    return y.astype(dtype)


def interesting_counts(n, segment_bytes, itemsize):
    """0, 1, n-1, n, n+1, a prime, and more than two ring segments per chunk."""
    big = 2 * n * segment_bytes // itemsize + 2 * segment_bytes // itemsize + 7
    return sorted({0, 1, max(n - 1, 0), n, n + 1, 1021, big})
