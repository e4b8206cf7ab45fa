"""Host integrations: one small object per framework, each a few lines over one hook,
`processor.HistoryProcessor` (the host's messages in, the host's messages out). The host owns the trigger;
the compactor owns the decision; every integration adopts a plan only if the live history is still exactly
what was judged. Each framework package is imported only by its own module.
"""
