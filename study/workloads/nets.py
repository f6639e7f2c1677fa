"""The seed 001 two-layer net, loss = sum((act(x @ w1) @ w2 - 1)^2), in both frameworks (each
imported where a rule of it runs)."""
import numpy as np

from study.measure.devices import Device
from study.measure.rule import Rule


def seed_two_layer_data() -> dict[str, np.ndarray]:
    """x, w1, w2 exactly as printed in seed 001 (float32)."""
    return {
        "x": np.array([[3, 2, 1], [1, 0, 2], [4, 1, 2], [0, 0, 1]], np.float32),
        "w1": np.array([[1, 2], [0, 1], [4, 0]], np.float32),
        "w2": np.array([[-1, 1], [-2, 3]], np.float32),
    }


DATASETS = ("seed", "random_no_ties", "random_ties", "continuous_ties")
SEED = 0
RANDOM_SHAPES = {"x": (32, 16), "w1": (16, 24), "w2": (24, 4)}
ZERO_X_ROWS = slice(None, None, 8)  # examples whose every pre-activation is 0
ZERO_W1_COLUMNS = slice(None, None, 6)  # hidden units whose pre-activation is 0 on every example


def two_layer_dataset(name: str) -> dict[str, np.ndarray]:
    """Seed 001's net, or a random net of RANDOM_SHAPES drawn from SEED: continuous draws
    ("random_no_ties"), the same draws with rows of x and columns of w1 set to 0
    ("continuous_ties"), or small integers, whose x @ w1 is exact and often 0 ("random_ties")."""
    if name == "seed":
        return seed_two_layer_data()
    rng = np.random.default_rng(SEED)
    if name in ("random_no_ties", "continuous_ties"):  # continuous draws: a tie has measure 0
        data = {k: rng.standard_normal(s).astype(np.float32) for k, s in RANDOM_SHAPES.items()}
        if name == "continuous_ties":  # the same draws with zeros that no rounding can move
            data["x"][ZERO_X_ROWS] = 0
            data["w1"][:, ZERO_W1_COLUMNS] = 0
        return data
    return {k: rng.integers(-2, 3, s).astype(np.float32) for k, s in RANDOM_SHAPES.items()}


def torch_two_layer_loss(act, x, w1, w2):
    return ((act(x @ w1) @ w2 - 1) ** 2).sum()


def jax_two_layer_loss(w1, w2, x, act):
    import jax.numpy as jnp
    return jnp.sum((act(x @ w1) @ w2 - 1) ** 2)


def two_layer_gradients(rule: Rule, data: dict[str, np.ndarray], device: Device) -> dict:
    """Loss, dL/dw1, dL/dw2 (numpy), and the count and positions of exact zeros in x @ w1, in
    the rule's own framework and device."""
    if rule.framework == "torch":
        x = device.to_torch(data["x"])
        w1 = device.to_torch(data["w1"], requires_grad=True)
        w2 = device.to_torch(data["w2"], requires_grad=True)
        loss = torch_two_layer_loss(rule.fn, x, w1, w2)
        loss.backward()
        zeros = (x @ w1) == 0
        out = (loss, w1.grad, w2.grad)
    else:
        import jax
        x, w1, w2 = (device.to_jax(data[k]) for k in ("x", "w1", "w2"))
        loss, (g1, g2) = jax.value_and_grad(jax_two_layer_loss, argnums=(0, 1))(w1, w2, x,
                                                                                rule.fn)
        zeros = (x @ w1) == 0
        out = (loss, g1, g2)
    arrays = dict(zip(("loss", "grad_w1", "grad_w2"), (device.to_numpy(t) for t in out)))
    mask = device.to_numpy(zeros)
    return {**arrays, "zeros": int(mask.sum()), "zero_positions": np.argwhere(mask).tolist()}
