"""The contract between the domain and the world.

Interfaces are ``typing.Protocol`` classes; the data that crosses them is frozen
dataclasses. Nothing here imports another package of ours.
"""
