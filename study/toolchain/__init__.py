"""The toolchain: find nvcc, cuobjdump and ncu once; compile (cached); read SASS; occupancy."""
