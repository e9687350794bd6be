"""Keys of the verdict form: how each key changes the form (urwid key names, no urwid).

- ``tab``/``down`` next field, ``shift tab``/``up`` previous;
- booleans: ``space``/``right`` cycle forward (unset → true → false → unset if optional),
  ``left`` backward, ``t``/``y`` true, ``f``/``n`` false;
- choices: ``space``/``right`` next, ``left`` previous (unset is a choice if optional);
- text and numbers: printable keys type, ``backspace`` deletes;
- a constant takes no keys.

``Enter`` (submit) and ``Esc`` (leave) are the screen's: ``apply_key`` returns False for
every key it did not use.
"""

from __future__ import annotations

from artifactize.entrypoints.review_tui.form_model import (
    TEXT_KINDS,
    FieldKind,
    FormField,
    VerdictForm,
)

NEXT_KEYS = ("tab", "down")
PREVIOUS_KEYS = ("shift tab", "up")
FORWARD_KEYS = (" ", "right")
BACKWARD_KEYS = ("left",)
TRUE_KEYS = ("t", "y")
FALSE_KEYS = ("f", "n")


def apply_key(form: VerdictForm, key: str) -> bool:
    """Apply ``key`` to ``form``; False when the form has no use for it."""
    if key in NEXT_KEYS:
        form.move(1)
        return True
    if key in PREVIOUS_KEYS:
        form.move(-1)
        return True
    item = form.focused
    if item is None:
        return False
    if item.kind is FieldKind.BOOLEAN:
        return _boolean_key(item, key)
    if item.kind is FieldKind.CHOICE:
        return _choice_key(item, key)
    if item.kind in TEXT_KINDS:
        return _text_key(item, key)
    return False


def _cycle(states: list[object], current: object, step: int) -> object:
    return states[(states.index(current) + step) % len(states)]


def _boolean_key(item: FormField, key: str) -> bool:
    if key in TRUE_KEYS:
        item.flag = True
    elif key in FALSE_KEYS:
        item.flag = False
    elif key in FORWARD_KEYS or key in BACKWARD_KEYS:
        states: list[object] = [None, True, False] if not item.required else [True, False]
        current: object = item.flag if item.flag in states else None
        if current not in states:  # required and unset: the first step sets true
            item.flag = True
            return True
        step = 1 if key in FORWARD_KEYS else -1
        value = _cycle(states, current, step)
        item.flag = value if isinstance(value, bool) else None
    else:
        return False
    return True


def _choice_key(item: FormField, key: str) -> bool:
    if key not in FORWARD_KEYS and key not in BACKWARD_KEYS:
        return False
    states: list[object] = list(range(len(item.choices)))
    if not item.required:
        states.insert(0, None)
    current: object = item.choice if item.choice in states else states[0]
    value = _cycle(states, current, 1 if key in FORWARD_KEYS else -1)
    item.choice = value if isinstance(value, int) else None
    return True


def _text_key(item: FormField, key: str) -> bool:
    if key == "backspace":
        item.text = item.text[:-1]
        return True
    if len(key) == 1 and key.isprintable():
        item.text += key
        return True
    return False
