"""D family: products of local derivatives along deep chains (scalar tape) and tanh stacks (torch)."""
