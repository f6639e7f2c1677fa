"""What a rule is put through, beyond its value at a point: the seed nets and their training,
Bertoin et al.'s bifurcation count, time and memory, transformations (compile, export, vmap,
higher order, forward mode) and the clone hazard's graphs."""
