"""The leaves every stage stands on: field rules (`validate`), fast frozen-dataclass construction (`quick`)
and the event loops sync twins run on (`aio`)."""
