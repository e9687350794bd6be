"""The project as artifactize reads it: the declarations discovered in the repository,
the workspace they resolve to, its graph and scopes, the programs it names, where
artifactize keeps its state for it, and what ``init`` writes into a new one.
"""
