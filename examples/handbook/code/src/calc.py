"""A tiny calculator, the code the handbook documents."""


def add(a: float, b: float) -> float:
    return a + b


def divide(a: float, b: float) -> float:
    return a / b
