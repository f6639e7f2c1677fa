"""What a rule keeps for its backward pass, in bytes per input element. Each function imports
its own framework alone."""


def torch_saved_bytes(fn, x) -> int:
    """Bytes of every tensor autograd packs for backward while computing fn(x)."""
    import torch
    seen = []

    def pack(t):
        seen.append(t.numel() * t.element_size())
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        fn(x.detach().requires_grad_(True))
    return sum(seen)


def jax_residual_bytes(fn, x, jit: bool = False) -> int:
    """Bytes of the residual arrays held by the vjp function (of the jitted vjp if jit)."""
    import jax
    vjp = (jax.jit(lambda v: jax.vjp(fn, v)) if jit else lambda v: jax.vjp(fn, v))(x)[1]
    return sum(int(leaf.nbytes) for leaf in jax.tree_util.tree_leaves(vjp)
               if hasattr(leaf, "dtype") and hasattr(leaf, "shape"))
