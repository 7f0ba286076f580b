# _dcstep and _line_search are derived from scipy/optimize/_dcsrch.py (a Python port of MINPACK-2's
# dcsrch/dcstep by J. J. Moré and D. J. Thuente), used under SciPy's BSD-3-Clause license:
# Copyright (c) 2001-2002 Enthought, Inc. 2003, SciPy Developers. All rights reserved.
# Redistribution and use in source and binary forms, with or without modification, are permitted
# provided that the conditions of the BSD-3-Clause license are met (see scipy's LICENSE.txt):
# source redistributions retain this notice; binary redistributions reproduce it in their
# documentation; the names of the copyright holders are not used to endorse derived products.
# THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND.
"""L-BFGS as scipy's L-BFGS-B runs it on an unconstrained problem (what tslearn's
``softdtw_barycenter`` calls), one coroutine per problem: :func:`_lbfgs`, with the Moré–Thuente
line search of MINPACK-2 (:func:`_line_search`, :func:`_dcstep`). The driver that evaluates the
trial points of many problems together is ``softdtw_torch._barycenter_solvers._solve_lbfgs``.
"""
import math
from typing import Any, Generator, List, Optional, Tuple

import numpy as np

# A coroutine yields ("eval", x) and is sent back (f, g) for that point, and yields
# ("iter", (x, f)) once per completed iteration (sent back None). It returns why it stopped.
_Request = Tuple[str, Any]
_Coroutine = Generator[_Request, Any, str]

# L-BFGS-B's constants (lnsrlb / mainlb in scipy's lbfgsb): line-search tolerances, largest step,
# evaluations per line search (scipy's maxls), memory (maxcor).
_LS_FTOL, _LS_GTOL, _LS_XTOL, _LS_STPMAX = 1e-3, 0.9, 0.1, 1e10
_MAX_LS = 20
_HISTORY_SIZE = 10
_EPS = float(np.finfo(np.float64).eps)


def _dcstep(stx: float, fx: float, dx: float, sty: float, fy: float, dy: float, stp: float, fp: float,
            dp: float, brackt: bool, stpmin: float, stpmax: float
            ) -> Tuple[float, float, float, float, float, float, float, bool]:
    """Moré–Thuente safeguarded step (MINPACK-2 ``dcstep``, as ported to Python in scipy's ``_dcsrch.py``).

    Updates the interval [stx, sty] known to contain a step satisfying the sufficient-decrease and
    curvature conditions and returns the next trial step, from cubic / quadratic / secant models
    of the line function through the best point (stx) and the current trial (stp).
    """
    sgnd = math.copysign(1.0, dp) * math.copysign(1.0, dx) if dp != 0 and dx != 0 else 0.0
    if fp > fx:
        # Higher value: the minimum is bracketed. Cubic step if closer to stx than the quadratic step,
        # else their average.
        theta = 3.0 * (fx - fp) / (stp - stx) + dx + dp
        s = max(abs(theta), abs(dx), abs(dp))
        gamma = s * math.sqrt(max(0.0, (theta / s) ** 2 - (dx / s) * (dp / s)))
        if stp < stx:
            gamma = -gamma
        p = (gamma - dx) + theta
        q = ((gamma - dx) + gamma) + dp
        stpc = stx + (p / q) * (stp - stx)
        stpq = stx + ((dx / ((fx - fp) / (stp - stx) + dx)) / 2.0) * (stp - stx)
        stpf = stpc if abs(stpc - stx) <= abs(stpq - stx) else stpc + (stpq - stpc) / 2.0
        brackt = True
    elif sgnd < 0.0:
        # Lower value, derivatives of opposite signs: bracketed. Cubic step if farther from stp than
        # the secant step, else the secant step.
        theta = 3.0 * (fx - fp) / (stp - stx) + dx + dp
        s = max(abs(theta), abs(dx), abs(dp))
        gamma = s * math.sqrt(max(0.0, (theta / s) ** 2 - (dx / s) * (dp / s)))
        if stp > stx:
            gamma = -gamma
        p = (gamma - dp) + theta
        q = ((gamma - dp) + gamma) + dx
        stpc = stp + (p / q) * (stx - stp)
        stpq = stp + (dp / (dp - dx)) * (stx - stp)
        stpf = stpc if abs(stpc - stp) > abs(stpq - stp) else stpq
        brackt = True
    elif abs(dp) < abs(dx):
        # Lower value, same-sign derivatives, decreasing in magnitude: cubic step only if the cubic
        # tends to infinity in the step's direction or its minimum is beyond stp, else secant.
        theta = 3.0 * (fx - fp) / (stp - stx) + dx + dp
        s = max(abs(theta), abs(dx), abs(dp))
        gamma = s * math.sqrt(max(0.0, (theta / s) ** 2 - (dx / s) * (dp / s)))
        if stp > stx:
            gamma = -gamma
        p = (gamma - dp) + theta
        q = (gamma + (dx - dp)) + gamma
        r = p / q
        if r < 0 and gamma != 0:
            stpc = stp + r * (stx - stp)
        elif stp > stx:
            stpc = stpmax
        else:
            stpc = stpmin
        stpq = stp + (dp / (dp - dx)) * (stx - stp)
        if brackt:
            stpf = stpc if abs(stpc - stp) < abs(stpq - stp) else stpq
            if stp > stx:
                stpf = min(stp + 0.66 * (sty - stp), stpf)
            else:
                stpf = max(stp + 0.66 * (sty - stp), stpf)
        else:
            stpf = stpc if abs(stpc - stp) > abs(stpq - stp) else stpq
            stpf = min(max(stpf, stpmin), stpmax)
    else:
        # Lower value, same-sign derivatives, not decreasing: cubic step if bracketed, else a bound.
        if brackt:
            theta = 3.0 * (fp - fy) / (sty - stp) + dy + dp
            s = max(abs(theta), abs(dy), abs(dp))
            gamma = s * math.sqrt(max(0.0, (theta / s) ** 2 - (dy / s) * (dp / s)))
            if stp > sty:
                gamma = -gamma
            p = (gamma - dp) + theta
            q = ((gamma - dp) + gamma) + dy
            stpf = stp + (p / q) * (sty - stp)
        elif stp > stx:
            stpf = stpmax
        else:
            stpf = stpmin
    if fp > fx:
        sty, fy, dy = stp, fp, dp
    else:
        if sgnd < 0:
            sty, fy, dy = stx, fx, dx
        stx, fx, dx = stp, fp, dp
    return stx, fx, dx, sty, fy, dy, stpf, brackt


def _line_search(x: np.ndarray, d: np.ndarray, stp: float, f0: float, g0: float
                 ) -> Generator[_Request, Any, Optional[Tuple[float, float, np.ndarray]]]:
    """Moré–Thuente line search (MINPACK-2 ``dcsrch``) with L-BFGS-B's settings.

    Finds a step satisfying the strong Wolfe conditions f(x + stp·d) <= f0 + ftol·stp·g0 and
    |∇f(x + stp·d)·d| <= gtol·|g0|, at most ``_MAX_LS`` evaluations. Returns (stp, f, gradient) at
    the accepted step (also when dcsrch stops with a warning, as L-BFGS-B does), or None on failure.
    """
    ftol, gtol, xtol, stpmin, stpmax = _LS_FTOL, _LS_GTOL, _LS_XTOL, 0.0, _LS_STPMAX
    gtest = ftol * g0
    width = stpmax - stpmin
    width1 = width / 0.5
    brackt = False
    stage = 1
    stx, fx, gx = 0.0, f0, g0
    sty, fy, gy = 0.0, f0, g0
    stmin, stmax = 0.0, stp + 4.0 * stp
    for _ in range(_MAX_LS):
        f, grad = yield ("eval", x + stp * d)
        if not math.isfinite(f):
            return None
        g = float(grad @ d)
        ftest = f0 + stp * gtest
        if stage == 1 and f <= ftest and g >= 0:
            stage = 2
        warn = ((brackt and (stp <= stmin or stp >= stmax))
                or (brackt and stmax - stmin <= xtol * stmax)
                or (stp == stpmax and f <= ftest and g <= gtest)
                or (stp == stpmin and (f > ftest or g >= gtest)))
        if warn or (f <= ftest and abs(g) <= gtol * -g0):
            return stp, f, grad
        if stage == 1 and f <= fx and f > ftest:
            # modified function psi(stp) = f(stp) − f0 − stp·gtest while no sufficient decrease yet
            stx, fxm, gxm, sty, fym, gym, stp, brackt = _dcstep(
                stx, fx - stx * gtest, gx - gtest, sty, fy - sty * gtest, gy - gtest,
                stp, f - stp * gtest, g - gtest, brackt, stmin, stmax)
            fx, fy = fxm + stx * gtest, fym + sty * gtest
            gx, gy = gxm + gtest, gym + gtest
        else:
            stx, fx, gx, sty, fy, gy, stp, brackt = _dcstep(stx, fx, gx, sty, fy, gy, stp, f, g, brackt,
                                                          stmin, stmax)
        if brackt:
            if abs(sty - stx) >= 0.66 * width1:
                stp = stx + 0.5 * (sty - stx)     # bisection when the interval shrinks too slowly
            width1 = width
            width = abs(sty - stx)
            stmin, stmax = min(stx, sty), max(stx, sty)
        else:
            stmin, stmax = stp + 1.1 * (stp - stx), stp + 4.0 * (stp - stx)
        stp = min(max(stp, stpmin), stpmax)
        if (brackt and (stp <= stmin or stp >= stmax)) or (brackt and stmax - stmin <= xtol * stmax):
            stp = stx
        if not math.isfinite(stp):
            return None
    return None


def _lbfgs(x: np.ndarray, f: float, g: np.ndarray, lr: float, max_iter: int, tol: float) -> _Coroutine:
    """L-BFGS for one problem, as scipy's L-BFGS-B runs it without bounds (what tslearn calls).

    tslearn runs ``scipy.optimize.minimize(method="L-BFGS-B", tol=tol, options={"maxiter": max_iter})``,
    i.e. ftol = gtol = tol. Same here: the direction is −H·g with the L-BFGS inverse Hessian from the
    last 10 pairs (s, y) and H0 = (sᵀy / yᵀy)·I (the two-loop recursion; L-BFGS-B computes the same
    product in its compact form); pairs with sᵀy <= eps·(−gᵀs) are skipped. The first step has length
    1 (stp = 1 / ||d||), later ones start at stp = 1 (times ``lr``), refined by the Moré–Thuente line
    search. Stops, after an iteration, when max|g| <= tol, when (f_k − f_{k+1}) / max(|f_k|, |f_{k+1}|, 1)
    <= tol, or after max_iter iterations; also before the first iteration when max|g| <= tol. A failed
    line search restarts from steepest descent with an empty memory, and ends the run if the memory
    was already empty.
    """
    if max_iter <= 0:
        return "max_iter"
    if float(np.abs(g).max()) <= tol:
        return "gtol"
    old_s: List[np.ndarray] = []
    old_y: List[np.ndarray] = []
    rho: List[float] = []
    n_iter = 0
    while True:
        # two-loop recursion: d = −H g
        q = -g
        alpha = [0.0] * len(old_s)
        for i in range(len(old_s) - 1, -1, -1):
            alpha[i] = rho[i] * float(old_s[i] @ q)
            q = q - alpha[i] * old_y[i]
        if old_s:
            q = q * (float(old_s[-1] @ old_y[-1]) / float(old_y[-1] @ old_y[-1]))
        for i in range(len(old_s)):
            beta = rho[i] * float(old_y[i] @ q)
            q = q + (alpha[i] - beta) * old_s[i]
        d = q
        gd = float(g @ d)
        if not gd < 0:
            if old_s:          # not a descent direction: forget the memory, retry along −g
                old_s, old_y, rho = [], [], []
                continue
            return "no_descent"
        stp = (1.0 / float(np.linalg.norm(d)) if n_iter == 0 else 1.0) * lr
        result = yield from _line_search(x, d, stp, f, gd)
        if result is None:
            if old_s:
                old_s, old_y, rho = [], [], []
                continue
            return "line_search"
        stp, f_new, g_new = result
        f_old, g_old = f, g
        x = x + stp * d
        f, g = f_new, g_new
        n_iter += 1
        yield ("iter", (x, f))
        if n_iter >= max_iter:
            return "max_iter"
        if float(np.abs(g).max()) <= tol:
            return "gtol"
        if f_old - f <= tol * max(abs(f_old), abs(f), 1.0):
            return "ftol"
        s = stp * d
        y = g - g_old
        sy = float(s @ y)
        if sy > _EPS * (-gd * stp):
            if len(old_s) == _HISTORY_SIZE:
                old_s.pop(0)
                old_y.pop(0)
                rho.pop(0)
            old_s.append(s)
            old_y.append(y)
            rho.append(1.0 / sy)
