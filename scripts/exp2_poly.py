#!/usr/bin/env python3
"""Derives the polynomial of attngen's software exp2 (attn.exp2_diff's
emulated_eighths; codegen/lib/Exp2Emulation.h holds the result).

2^t = 2^j * 2^f with j = round(t), f = t - j in [-0.5, 0.5]. 2^f is
approximated by p(f) = 1 + f * (c1 + f * (c2 + f * c3)): the constant term is
exactly 1 so that t = -127 (the clamp, where -inf lands) gives the bit
pattern 0 (+0.0) once j = -127 is added to p's exponent.

The coefficients minimise the maximum relative error |p(f) / 2^f - 1| over
[-0.5, 0.5] (Lawson's algorithm: least squares reweighted towards the worst
points until the error equioscillates), are rounded to float32, and the
float32 Horner sequence is then evaluated with correctly rounded FMAs
(float64 products of float32 values are exact) to report the error the
kernel gets.

    python3 scripts/exp2_poly.py            # prints the coefficients and errors
    python3 scripts/exp2_poly.py --check codegen/lib/Exp2Emulation.h
                                            # exit 1 unless the header's kC1..kC3 match
"""
import re
import sys

import numpy as np

DEGREE = 3
SAMPLES = 20001
ITERATIONS = 400


def minimax_coefficients():
    """c1..c3 of p(f) = 1 + f (c1 + f (c2 + f c3)), minimax in relative error."""
    f = np.linspace(-0.5, 0.5, SAMPLES)
    target = np.exp2(f)
    # Relative error e = (1 + sum_k c_k f^k) / 2^f - 1 is linear in c:
    # e = A c - b with A[:, k] = f^(k+1) / 2^f and b = 1 - 1 / 2^f.
    a = np.stack([f ** (k + 1) / target for k in range(DEGREE)], axis=1)
    b = 1.0 - 1.0 / target
    weights = np.full(SAMPLES, 1.0 / SAMPLES)
    for _ in range(ITERATIONS):
        sw = np.sqrt(weights)
        c, *_ = np.linalg.lstsq(a * sw[:, None], b * sw, rcond=None)
        err = np.abs(a @ c - b)
        weights *= err
        weights /= weights.sum()
    return c


def fma32(x, y, z):
    """Correctly rounded float32 fma (the float64 product is exact)."""
    return np.float32(np.float64(x) * np.float64(y) + np.float64(z))


def horner32(f, c):
    """The kernel's three FMAs on float32 f."""
    c1, c2, c3 = (np.float32(v) for v in c)
    q = fma32(c3, f, c2)
    q = fma32(q, f, c1)
    return fma32(q, f, np.float32(1.0))


def header_coefficients(path):
    """kC1..kC3 of Exp2Emulation.h, as float32."""
    text = open(path).read()
    values = []
    for k in range(1, DEGREE + 1):
        match = re.search(rf"constexpr float kC{k} = ([0-9a-fA-Fx.p+-]+)f;", text)
        if not match:
            raise SystemExit(f"{path}: no 'constexpr float kC{k} = <hex float>f;'")
        values.append(np.float32(float.fromhex(match.group(1))))
    return values


def main():
    c = minimax_coefficients()
    c32 = [np.float32(v) for v in c]
    if len(sys.argv) == 3 and sys.argv[1] == "--check":
        header = header_coefficients(sys.argv[2])
        same = all(a == b for a, b in zip(header, c32))
        print(f"{sys.argv[2]}: coefficients {'match' if same else 'DIFFER'}: "
              f"header {[float(v) for v in header]}, derived {[float(v) for v in c32]}")
        return 0 if same else 1
    f = np.linspace(-0.5, 0.5, SAMPLES).astype(np.float32)
    exact = np.exp2(f.astype(np.float64))
    ideal = 1.0 + f * (c[0] + f * (c[1] + f * c[2]))
    kernel = np.array([horner32(x, c32) for x in f], dtype=np.float64)
    print(f"minimax relative error (float64 coefficients): "
          f"{np.max(np.abs(ideal / exact - 1)):.3e}")
    print(f"float32 Horner relative error:               "
          f"{np.max(np.abs(kernel / exact - 1)):.3e}")
    for k, v in enumerate(c32, start=1):
        mantissa, exponent = float(v).hex().split("p")
        print(f"c{k} = {mantissa.rstrip('0')}p{exponent}f  // {float(v):.9g}")


if __name__ == "__main__":
    sys.exit(main())
