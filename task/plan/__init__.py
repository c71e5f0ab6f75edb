"""The planners: read the cluster in one step, then decide (pure) what a run does or why it refuses."""
