"""The T family's cross-key configuration checks: the shapes its matrices must share, the indices it reads."""

# (key, its dimension, "==" or ">=", other key or a number the code fixes, the other key's dimension, why)
CONFORMING = [
    # T1: Y = X W with X (n, k), W (k, m); the upstream G = dL/dY is (n, m)
    ("tensor.matmul.x", "cols", "==", "tensor.matmul.w", "rows", "Y = X W: X's columns must equal W's rows"),
    ("tensor.matmul.upstream", "rows", "==", "tensor.matmul.x", "rows",
     "G = dL/dY has Y's shape: one row per row of X"),
    ("tensor.matmul.upstream", "cols", "==", "tensor.matmul.w", "cols",
     "G = dL/dY has Y's shape: one column per column of W"),
    # T1's two single-path sums read X[0][1], X[1][0], W[1][0], W[1][1] and G[1][1] by coordinate
    ("tensor.matmul.x", "rows", ">=", 2, None, "T1's single-path sum for dW[0][1] reads X[1][0]"),
    ("tensor.matmul.x", "cols", ">=", 2, None, "T1's single-path sum for dX[0][1] reads X[0][1] and W[1][*]"),
    ("tensor.matmul.w", "cols", ">=", 2, None, "T1's single-path sums read W[1][1] and G[*][1]"),
    # T3: S = Q K^T / sqrt(D) with Q (Tq, D), K (Tk, D); O = softmax(S) V with V (Tk, Dv); G = dL/dO is (Tq, Dv)
    ("tensor.attention.q", "cols", "==", "tensor.attention.k", "cols",
     "S = Q K^T: queries and keys share the width D"),
    ("tensor.attention.v", "rows", "==", "tensor.attention.k", "rows", "O = A V: one value row per key"),
    ("tensor.attention.upstream", "rows", "==", "tensor.attention.q", "rows",
     "G = dL/dO has O's shape: one row per query"),
    ("tensor.attention.upstream", "cols", "==", "tensor.attention.v", "cols", "G = dL/dO has O's shape: V's width"),
    # T4: one row of D features; gamma, beta and the upstream gradient are per feature
    ("tensor.layernorm.gamma", "len", "==", "tensor.layernorm.x", "len", "one scale per feature of x"),
    ("tensor.layernorm.beta", "len", "==", "tensor.layernorm.x", "len", "one shift per feature of x"),
    ("tensor.layernorm.upstream", "len", "==", "tensor.layernorm.x", "len",
     "dL/dy has y's shape: one per feature of x"),
    ("tensor.layernorm.near_constant_x", "len", "==", "tensor.layernorm.x", "len",
     "the nearly constant row shares gamma, beta and the upstream gradient"),
]

# (index key, smallest index, key setting the size, size -> largest index, why); '*' matches each item
IN_RANGE = [
    ("tensor.softmax.target", 0, "tensor.softmax.logits", lambda z: len(z) - 1, "L = -log p[target] picks one logit"),
    ("tensor.softmax.target", 0, "tensor.softmax.overflow_logits", lambda z: len(z) - 1,
     "T2's fused cross-entropy scores the same target on the overflow logits"),
    ("tensor.softmax.output_layer.target", 0, "tensor.softmax.output_layer.vocab", lambda v: v - 1,
     "the target is one row of the output matrix"),
]
