"""A deterministic ``IdSource``: the n-th ID of an instance is n in the alphabet's digits."""

from __future__ import annotations


class CountingIds:
    """Distinct IDs in a fixed order, so a test that needs them may predict them."""

    def __init__(self) -> None:
        self.issued = 0

    def choose(self, alphabet: str, count: int) -> str:
        number, self.issued = self.issued, self.issued + 1
        digits = []
        for _ in range(count):
            number, digit = divmod(number, len(alphabet))
            digits.append(alphabet[digit])
        return "".join(reversed(digits))
