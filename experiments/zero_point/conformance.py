"""Reading the kink records (zero_point.kinks) back: each stored shape as a KinkShape, and both
verdicts of study.conformance on the derivative the run measured. No op is called here."""
from study.conformance import KinkShape
from study.stats import Estimate


def _estimate(stored) -> Estimate:
    return Estimate(*(float(v) for v in stored))


def shape_of(stored: dict) -> KinkShape:
    """The KinkShape a kink record stored (zero_point.kinks.shape_record)."""
    return KinkShape(tuple(stored["point"]), tuple(stored["normal"]), float(stored["value"]),
                     _estimate(stored["value_left"]), _estimate(stored["value_right"]),
                     tuple(_estimate(g) for g in stored["gradient_left"]),
                     tuple(_estimate(g) for g in stored["gradient_right"]),
                     tuple(stored["curvature_left"]), tuple(stored["curvature_right"]))
