"""Running: the compactor (`compactor`), its decision records (`records`), the tenant service config
(`service`) and the demo (`scenario`)."""
