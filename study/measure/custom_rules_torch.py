"""The study's custom torch rules: autograd.Functions in each style and torch.library custom
ops, each with a declared convention c, the factor its backward applies to the incoming gradient
at exactly x == 0. Imports torch alone (study.measure.custom_rules names both frameworks' rules).
"""
import functools

import torch

from study.measure.rule import not_in_release, release_of

# --- torch custom rules --------------------------------------------------------------

class MyReLU(torch.autograd.Function):
    """Seed 000 / tutorial rule, verbatim: legacy style, clone then zero where input < 0."""

    @staticmethod
    def forward(ctx, input):
        ctx.save_for_backward(input)
        return input.clamp(min=0)

    @staticmethod
    def backward(ctx, grad_output):
        input, = ctx.saved_tensors
        grad_input = grad_output.clone()
        grad_input[input < 0] = 0
        return grad_input


def torch_relu_slope_times(grad: torch.Tensor, x: torch.Tensor, c: float) -> torch.Tensor:
    zero = torch.zeros_like(grad)
    return torch.where(x > 0, grad, torch.where(x == 0, grad * c, zero))


@functools.cache
def torch_relu_with_convention(c: float) -> type[torch.autograd.Function]:
    """Modern-style (`setup_context`) ReLU whose backward multiplies the gradient by c at 0."""

    class ReLUWithConvention(torch.autograd.Function):
        convention = c

        @staticmethod
        def forward(x):
            return x.clamp(min=0)

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(inputs[0])

        @staticmethod
        def backward(ctx, grad_output):
            x, = ctx.saved_tensors
            return torch_relu_slope_times(grad_output, x, c)

    ReLUWithConvention.__name__ = ReLUWithConvention.__qualname__ = f"ReLUWithConvention_c{c}"
    return ReLUWithConvention


def torch_relu_style(style: str) -> type[torch.autograd.Function]:
    """The c = 0 modern rule with extra features: "vmap" (generate_vmap_rule), "jvp" (a jvp
    staticmethod for forward mode), "vmap+jvp" (both) or "once" (@once_differentiable)."""
    base = torch_relu_with_convention(0.0)

    if style == "vmap":
        class ReLUVmap(base):
            generate_vmap_rule = True
        return ReLUVmap
    if style == "jvp":
        class ReLUJvp(base):
            @staticmethod
            def setup_context(ctx, inputs, output):
                ctx.save_for_backward(inputs[0])
                ctx.save_for_forward(inputs[0])

            @staticmethod
            def jvp(ctx, x_tangent):
                x, = ctx.saved_tensors
                return torch_relu_slope_times(x_tangent, x, 0.0)
        return ReLUJvp
    if style == "vmap+jvp":
        class ReLUVmapJvp(torch_relu_style("jvp")):
            generate_vmap_rule = True
        return ReLUVmapJvp
    if style == "once":
        class ReLUOnce(base):
            @staticmethod
            @torch.autograd.function.once_differentiable
            def backward(ctx, grad_output):
                x, = ctx.saved_tensors
                return torch_relu_slope_times(grad_output, x, 0.0)
        return ReLUOnce
    raise ValueError(f"unknown style {style!r}")


_BIT_WEIGHTS = (1, 2, 4, 8, 16, 32, 64, 128)


def torch_pack_bits(mask: torch.Tensor) -> torch.Tensor:
    """Bool tensor -> uint8, eight elements a byte (little-endian within the byte)."""
    flat = mask.reshape(-1)
    padded = torch.nn.functional.pad(flat, (0, -flat.numel() % 8)).reshape(-1, 8)
    weights = torch.tensor(_BIT_WEIGHTS, dtype=torch.uint8, device=mask.device)
    return (padded.to(torch.uint8) * weights).sum(-1, dtype=torch.uint8)


def torch_unpack_bits(packed: torch.Tensor, shape) -> torch.Tensor:
    weights = torch.tensor(_BIT_WEIGHTS, dtype=torch.uint8, device=packed.device)
    bits = (packed[:, None] & weights) != 0
    return bits.reshape(-1)[: torch.Size(shape).numel()].reshape(shape)


class ReLUSavesBoolMask(torch.autograd.Function):
    """c = 0 ReLU that saves only x > 0 (1 byte an element) instead of a float tensor."""

    @staticmethod
    def forward(x):
        return x.clamp(min=0)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0] > 0)

    @staticmethod
    def backward(ctx, grad_output):
        positive, = ctx.saved_tensors
        return torch.where(positive, grad_output, torch.zeros_like(grad_output))


class ReLUSavesBitMask(ReLUSavesBoolMask):
    """c = 0 ReLU that saves x > 0 packed eight to a byte (1/8 byte an element)."""

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(torch_pack_bits(inputs[0] > 0))
        ctx.shape = inputs[0].shape

    @staticmethod
    def backward(ctx, grad_output):
        packed, = ctx.saved_tensors
        positive = torch_unpack_bits(packed, ctx.shape)
        return torch.where(positive, grad_output, torch.zeros_like(grad_output))


# --- torch.library.custom_op rules ---------------------------------------------------------

CUSTOM_OP_NAMESPACE = "relu_study"


@functools.cache
def torch_custom_op_relu(c: float, with_vmap: bool = False):
    """`torch.library.custom_op` ReLU (PyTorch's recommended style for torch.compile) with
    `register_fake` and `register_autograd`, and `register_vmap` when asked for."""
    name = f"{CUSTOM_OP_NAMESPACE}::relu_c{c:g}".replace(".", "_") + ("_vmap" if with_vmap else "")
    if not hasattr(torch.library, "custom_op"):
        return not_in_release("torch.library.custom_op", release_of(torch))

    @torch.library.custom_op(name, mutates_args=())
    def relu(x: torch.Tensor) -> torch.Tensor:
        return x.clamp(min=0)

    @relu.register_fake
    def _(x):
        return torch.empty_like(x)

    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])

    def backward(ctx, grad_output):
        x, = ctx.saved_tensors
        return torch_relu_slope_times(grad_output, x, c)

    relu.register_autograd(backward, setup_context=setup_context)
    if with_vmap and not hasattr(relu, "register_vmap"):
        return not_in_release("torch.library.custom_op(...).register_vmap", release_of(torch))
    if with_vmap:
        relu.register_vmap(lambda info, in_dims, x: (relu(x), in_dims[0]))  # elementwise
    return relu
