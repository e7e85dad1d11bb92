"""The divisors of a whole number, from its prime factors: trial division by the primes below
``TRIAL_BOUND``, then a deterministic Miller-Rabin test and Pollard's rho (Brent's variant) for
what is left: well under a millisecond for any n below 2^64 (trial division up to √n takes
seconds near 10^16).

Sources: the Miller-Rabin bases 2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37 are deterministic for
every n < 3.3 × 10^24 (Sorenson & Webster 2015, "Strong pseudoprimes to twelve prime bases",
Math. Comp. 86, 985-1003); Brent 1980, "An improved Monte Carlo factorization algorithm", BIT 20,
176-184, for the rho iteration with batched gcds.
"""

from __future__ import annotations

import math
from collections import Counter
from functools import lru_cache

TRIAL_BOUND = 1_000  # primes below this are divided out directly
MR_BASES = (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37)
MR_LIMIT = 3_317_044_064_679_887_385_961_981  # the bases above decide every n below this

_PRIMES = [p for p in range(2, TRIAL_BOUND) if all(p % q for q in range(2, math.isqrt(p) + 1))]


def _is_prime(n: int) -> bool:
    """Miller-Rabin with the fixed bases (n ≥ 2): exact below ``MR_LIMIT``, far above any batch."""
    for p in MR_BASES:
        if n % p == 0:
            return n == p
    if n >= MR_LIMIT:
        raise ValueError(f"{n} is too large to factorise exactly")
    d, s = n - 1, 0
    while d % 2 == 0:
        d, s = d // 2, s + 1
    for a in MR_BASES:
        x = pow(a, d, n)
        if x in (1, n - 1):
            continue
        for _ in range(s - 1):
            x = x * x % n
            if x == n - 1:
                break
        else:
            return False
    return True


def _rho(n: int) -> int:
    """A non-trivial factor of the odd composite ``n`` (Pollard's rho, Brent's cycle finding)."""
    for c in range(1, n):
        y, m, g, r, q = 2, 128, 1, 1, 1
        x = ys = y
        while g == 1:
            x = y
            for _ in range(r):
                y = (y * y + c) % n
            k = 0
            while k < r and g == 1:
                ys = y
                for _ in range(min(m, r - k)):
                    y = (y * y + c) % n
                    q = q * abs(x - y) % n
                g = math.gcd(q, n)
                k += m
            r *= 2
        if g == n:  # the batch overshot: step back one at a time
            g = 1
            while g == 1:
                ys = (ys * ys + c) % n
                g = math.gcd(abs(x - ys), n)
        if g != n:
            return g
    raise ArithmeticError(f"no factor found for {n}")  # pragma: no cover - n is composite


@lru_cache(maxsize=4096)
def prime_factors(n: int) -> tuple[tuple[int, int], ...]:
    """``n``'s prime factors and their powers, smallest first (``n`` a whole number ≥ 1)."""
    if n < 1:
        raise ValueError(f"expected a whole number of at least 1; found {n}")
    out: Counter[int] = Counter()
    for p in _PRIMES:
        if p * p > n:
            break
        while n % p == 0:
            out[p] += 1
            n //= p
    left = [n] if n > 1 else []  # what trial division leaves, split by rho into primes
    while left:
        m = left.pop()
        if _is_prime(m):
            out[m] += 1
        else:
            d = _rho(m)
            left += [d, m // d]
    return tuple(sorted(out.items()))


@lru_cache(maxsize=4096)
def divisors(n: int) -> tuple[int, ...]:
    """Every divisor of ``n`` (a whole number ≥ 1), in increasing order."""
    out = [1]
    for p, e in prime_factors(int(n)):
        out = [d * p**k for d in out for k in range(e + 1)]
    return tuple(sorted(out))
