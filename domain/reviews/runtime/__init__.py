"""Runtime reviews: one command run, its environment, and its exit turned into a verdict."""
