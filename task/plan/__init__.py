"""The planners: read the cluster, then decide (pure) what a run will do, or refuse it."""
