"""The write path: resolve the target, read its snapshot, plan, validate, write, verify, commit."""
