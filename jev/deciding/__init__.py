"""Deciding: the config, pins, the decision table and budget mode (`policy`), a host's token target
(`token_target`), the bill under prompt caching (`cost`) and a plan's outcome (`decision`)."""
