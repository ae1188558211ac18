"""The abstract interpreter behind devflow's rules: a device lattice over Python's `ast`."""
