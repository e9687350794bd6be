"""Reading a command and its operand arguments, shared by tools, runtime evals, sessions and
fingerprint scripts: a command is never a template; an operand may be a ``{name}`` reference."""

from __future__ import annotations

from artifactize.domain.declarations.model import Reference, ReferenceUse
from artifactize.domain.declarations.reader import TableReader, command_problem
from artifactize.domain.declarations.templates import (
    TemplateError,
    parse_human_operand,
    parse_operand,
)


def read_command(reader: TableReader) -> str | None:
    command = reader.string("command", nonblank=False)
    if command is None:
        return None
    problem = command_problem(command)
    if problem:
        reader.fail("command", problem)
        return None
    return command


def read_operand_args(
    reader: TableReader,
    references: list[Reference],
    use: ReferenceUse,
    *,
    eval_id: str | None = None,
    human: bool = False,
) -> tuple[str, ...] | None:
    """``args`` as written; every reference operand is recorded for workspace resolution."""
    args = reader.string_list("args")
    if args is None:
        return None
    for index, arg in enumerate(args):
        key_path = reader.path(f"args[{index}]")
        try:
            operand = parse_human_operand(arg) if human else parse_operand(arg)
        except TemplateError as exc:
            reader.problems.add(key_path, str(exc))
            continue
        if operand is not None and not (human and operand.name == "artifactPath"):
            references.append(Reference(operand.name, use, key_path, eval_id, operand.suffix))
    return args
