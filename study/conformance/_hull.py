"""The point of least norm in the convex hull of a few points: Clarke's subdifferential at a tie
is the hull of the gradients of the pieces that meet there, and PyTorch's documented rule asks
for its minimum-norm element.

    >>> minimum_norm_point(np.array([[1.0, 0.0], [0.0, 1.0]]))[0].round(12).tolist()
    [0.5, 0.5]

The problem is a quadratic programme on the simplex, min |Σ λ_i p_i|² over λ ≥ 0 with Σ λ_i = 1,
solved exactly (up to rounding) by Wolfe's minimum-norm-point algorithm (Wolfe, "Finding the
nearest point in a polytope", Math. Programming 11, 1976): an active set of affinely
independent points, its affine minimiser found by a linear solve, and the set changed until no
point of the hull lies nearer the origin than the current point's supporting plane.
"""
import numpy as np

EPS = 1e-12  # relative: a weight, or a gain in x·x, this small is rounding


def minimum_norm_point(points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the hull's point of least Euclidean norm, the weights on `points`' rows that make it)."""
    points = np.asarray(points, np.float64)
    scale = max(1.0, float(np.max(np.sum(points ** 2, axis=1))))
    active = [int(np.argmin(np.sum(points ** 2, axis=1)))]
    weights = np.array([1.0])
    for _ in range(50 * len(points) + 50):  # Wolfe's algorithm ends in finitely many steps
        x = weights @ points[active]
        j = int(np.argmin(points @ x))
        if x @ x - points[j] @ x <= EPS * scale or j in active:
            break
        active, weights = active + [j], np.append(weights, 0.0)
        active, weights = _minor_cycles(points, active, weights)
    full = np.zeros(len(points))
    full[active] = weights
    return full @ points, full


def _minor_cycles(points, active, weights):
    """Move from the current weights toward the active set's affine minimiser, dropping the
    points whose weight reaches 0, until the minimiser lies inside the set's own hull."""
    while True:
        target = _affine_minimiser(points[active])
        if np.all(target > EPS):
            return active, target
        falling = target < weights
        theta = min(1.0, float(np.min(weights[falling] / (weights[falling] - target[falling]))))
        weights = np.clip(weights + theta * (target - weights), 0.0, None)
        keep = weights > EPS
        if not keep.any():  # rounding ate every weight: keep the nearest point alone
            keep[int(np.argmax(weights))] = True
        active = [a for a, k in zip(active, keep) if k]
        weights = weights[keep] / weights[keep].sum()


def _affine_minimiser(points: np.ndarray) -> np.ndarray:
    """The weights (summing to 1, of any sign) of the least-norm point of the points' affine
    hull: G v = μ 1 with G the points' Gram matrix and 1·v = 1."""
    m = len(points)
    system = np.zeros((m + 1, m + 1))
    system[:m, :m] = points @ points.T
    system[:m, m] = system[m, :m] = 1.0
    rhs = np.zeros(m + 1)
    rhs[m] = 1.0
    return np.linalg.lstsq(system, rhs, rcond=None)[0][:m]


def distance_to_hull(points: np.ndarray, y) -> float:
    """How far y lies from the convex hull of `points` (0 inside it)."""
    shifted = np.asarray(points, np.float64) - np.asarray(y, np.float64)[None, :]
    return float(np.linalg.norm(minimum_norm_point(shifted)[0]))
