"""The measuring core: what a rule is, and what it gives at given inputs.

    rule          Rule, a value: its function, framework, convention, kinks and relations
    rules         the study's registry of built-ins and custom rules (imports both frameworks)
    custom_rules  the custom autograd.Functions, custom_ops and custom_vjp/jvp rules it lists
    probe         the one probe: a rule's value and derivatives at inputs, per dtype,
                  placement and execution, as typed cells
    inputs        dtypes and the probe inputs (kinks, ±1 ulp, signed zeros, subnormals, NaN, inf)
    placement     where an element sits (packed, 0-d, fill, strided, 2-D rows)
    compiled      the probe's compiled half (torch.compile with inductor, jax.jit)
    devices       one code path for every device
    arithmetic    whether a device flushes subnormals
    frameworks    the numeric settings every measurement shares

Nothing here imports a framework until a rule of that framework is measured, but `rules`.
"""
