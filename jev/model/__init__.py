"""The message model: messages and their blocks (`transcript`), one description per block type (`blocks`),
canonical JSON and sizes (`canonical`), the markers a plan leaves where it cut (`markers`) and archive scopes
(`scope`)."""
