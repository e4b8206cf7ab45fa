"""The command line's exit codes and its usage error: light, so `jev --version` imports nothing else."""

EXIT_OK, EXIT_USAGE, EXIT_ERROR = 0, 2, 3


class UsageError(Exception):
    """Bad usage or unreadable input: one line on stderr, exit 2, nothing on stdout."""
