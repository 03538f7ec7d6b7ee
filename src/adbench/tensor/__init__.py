"""T family: backward rules written by hand, checked against torch float64 autograd."""
