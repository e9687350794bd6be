"""``artifactize monitor``: watch Runs live and hand a waiting Human review to its reviewer."""
