"""The `jev` command line: `demo`, `compact`, `inspect`, `restore`, `snapshots`, `replay`, `cost`, `label`,
`calibrate` (`jev.cli.main`; each command a module with `configure(parser)` and `run(args)`)."""
