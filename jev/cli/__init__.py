"""The `jev` command line (SPEC §10): `demo`, `compact`, `restore`."""
