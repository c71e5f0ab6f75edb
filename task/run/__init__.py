"""The runs: the group run skeleton, its writes, revert and watch, and what runs inside it."""
