"""A sweep's quality at a pass budget: interpolation in log passes between a line's runs, linear or
by the monotone cubic (PCHIP: scipy.interpolate.PchipInterpolator's rule, vectorised over bootstrap
replicates, whose passes differ row by row)."""
import numpy as np


def sorted_points(passes, quality):
    """([R, m] log passes, [R, m] quality) of replicate rows, each sorted by passes."""
    passes, quality = np.atleast_2d(passes), np.atleast_2d(quality)
    order = np.argsort(passes, axis=1)
    return np.log(np.take_along_axis(passes, order, 1)), np.take_along_axis(quality, order, 1)


def interpolate(passes, quality, budget, kind="linear"):
    """Quality at ``budget`` on the line through (passes, quality) points, in log passes: linear,
    or ``kind="pchip"`` the monotone cubic (``pchip_rows``); NaN outside the points' range. Works
    on [R, m] replicate arrays (returns [R]) or [m] points."""
    x, y = sorted_points(passes, quality)
    values = np.array([np.interp(np.log(budget), xr, yr, left=np.nan, right=np.nan) for xr, yr in zip(x, y)])
    if kind == "pchip" and x.shape[1] >= 3:
        values = pchip_rows(x, y, np.log(budget), values)
    return values if len(values) > 1 else values[0]


def pchip_slopes(h, m):
    """[R, m + 1] node slopes of the monotone cubic through rows with gaps ``h`` and secants ``m``
    [R, m]: scipy's PchipInterpolator rule (weighted harmonic mean inside, zero at a local
    extremum, the shape-preserving three-point formula at both ends)."""
    same = (np.sign(m[:, 1:]) == np.sign(m[:, :-1])) & (m[:, 1:] != 0) & (m[:, :-1] != 0)
    w1, w2 = 2 * h[:, 1:] + h[:, :-1], h[:, 1:] + 2 * h[:, :-1]
    with np.errstate(divide="ignore", invalid="ignore"):
        inner = np.where(same, (w1 + w2) / (w1 / m[:, :-1] + w2 / m[:, 1:]), 0.0)
    first = pchip_edge(h[:, 0], h[:, 1], m[:, 0], m[:, 1])
    last = pchip_edge(h[:, -1], h[:, -2], m[:, -1], m[:, -2])
    return np.column_stack([first, inner, last])


def pchip_edge(h0, h1, m0, m1):
    """End slope of the monotone cubic (scipy's PchipInterpolator._edge_case), per row."""
    d = ((2 * h0 + h1) * m0 - h0 * m1) / (h0 + h1)
    d = np.where(np.sign(d) != np.sign(m0), 0.0, d)
    return np.where((np.sign(m0) != np.sign(m1)) & (np.abs(d) > 3 * np.abs(m0)), 3 * m0, d)


def pchip_rows(x, y, t, linear):
    """The monotone cubic through each row of sorted points (x, y) [R, m] at ``t``; NaN where
    ``linear`` (the same rows' linear interpolation) is NaN, and ``linear`` kept on a row with tied
    passes (no cubic through two points at one x)."""
    h = np.diff(x, axis=1)
    tied = (h <= 0).any(axis=1)
    h = np.where(h <= 0, 1.0, h)
    m = np.diff(y, axis=1) / h
    slopes = pchip_slopes(h, m)
    j = np.clip((x <= t).sum(axis=1) - 1, 0, x.shape[1] - 2)[:, None]
    width = np.take_along_axis(h, j, 1)[:, 0]
    s = (t - np.take_along_axis(x, j, 1)[:, 0]) / width
    y0, y1 = np.take_along_axis(y, j, 1)[:, 0], np.take_along_axis(y, j + 1, 1)[:, 0]
    d0, d1 = np.take_along_axis(slopes, j, 1)[:, 0], np.take_along_axis(slopes, j + 1, 1)[:, 0]
    cubic = ((2 * s ** 3 - 3 * s ** 2 + 1) * y0 + (s ** 3 - 2 * s ** 2 + s) * width * d0
             + (-2 * s ** 3 + 3 * s ** 2) * y1 + (s ** 3 - s ** 2) * width * d1)
    return np.where(np.isnan(linear) | tied, linear, cubic)
