"""The run layer: rollouts, repairs and reverts carried out against the live cluster."""
