"""Training: the Lightning module, trainer setup, checkpoints and averaging."""
