"""The root command's table: every subcommand, its module and short help, and the root's
own help; no typer here, so ``entrypoints.cli.launch`` answers ``--version`` without
importing the command line library (``entrypoints.cli.app`` builds typer's root from this
table, and the root's ``--help`` lists a command not loaded yet with the help written here).
"""

from __future__ import annotations

PROG_NAME = "artifactize"
# set by the shell completion scripts when they call artifactize back (typer answers them)
COMPLETE_VARIABLE = "_ARTIFACTIZE_COMPLETE"


class LazyCommand:
    """A command's module, the attribute that is its command, and its short help. A plain
    class, not a dataclass: ``dataclasses`` imports ``inspect`` (with ``ast`` and ``dis``),
    about half of ``--version``'s own import time."""

    __slots__ = ("attribute", "help", "module")

    def __init__(self, module: str, attribute: str, help: str) -> None:
        self.module = module
        self.attribute = attribute
        self.help = help


GLOBAL_HELP = (
    "Global options, accepted once each, before or after the subcommand: "
    "--repo PATH (the repository, default: the current directory), "
    "--state-dir PATH (default: $ARTIFACTIZE_STATE_HOME, else $XDG_STATE_HOME/artifactize, "
    "else ~/.local/state/artifactize), --json (machine-readable output)."
)

# Every subcommand, in the order ``--help`` lists them. A command's module is imported only
# when that command runs (see entrypoints/cli/lazy_commands.py); ``help`` is its short help
# for the root's ``--help`` (tests/unit/test_lazy_commands.py keeps it true).
COMMANDS: dict[str, LazyCommand] = {
    "init": LazyCommand(
        "artifactize.entrypoints.cli.init",
        "init_command",
        "Write a starter index.artf and .artfignore for a Python, JS/TS, Rust or Go project.",
    ),
    "verify": LazyCommand(
        "artifactize.entrypoints.cli.runs",
        "verify",
        "Review the selected evals, reusing every verdict whose key still holds.",
    ),
    "status": LazyCommand(
        "artifactize.entrypoints.cli.status",
        "status_command",
        "Show what `verify` would do: per eval its state, action and reason. Runs nothing.",
    ),
    "review": LazyCommand(
        "artifactize.entrypoints.cli.terminal_reviewer",
        "review_command",
        "Review waiting Human requests in the terminal: run their tools, submit a verdict.",
    ),
    "monitor": LazyCommand(
        "artifactize.entrypoints.cli.monitor",
        "monitor_command",
        "Watch Runs live; o hands a waiting Human review to `review`. Writes nothing.",
    ),
    "web": LazyCommand(
        "artifactize.entrypoints.cli.web",
        "web_command",
        "Review waiting Human requests and watch Runs in a browser (a local web app).",
    ),
    "config": LazyCommand(
        "artifactize.entrypoints.cli.app",
        "config_app",
        "Check and describe the .artf declarations.",
    ),
    "tools": LazyCommand(
        "artifactize.entrypoints.cli.app", "tools_app", "Inspect and try the tools reviewers see."
    ),
    "run": LazyCommand("artifactize.entrypoints.cli.runs", "run_app", "Show saved Runs."),
    "cache": LazyCommand(
        "artifactize.entrypoints.cli.runs", "cache_app", "Inspect and clear reusable verdicts."
    ),
    "prune": LazyCommand(
        "artifactize.entrypoints.cli.prune",
        "prune_command",
        "Remove old Runs, their requests and scratch folders; never a reusable verdict.",
    ),
    "request": LazyCommand(
        "artifactize.entrypoints.cli.requests",
        "request_app",
        "List, claim and submit Human review requests.",
    ),
    "session": LazyCommand(
        "artifactize.entrypoints.cli.sessions",
        "session_app",
        "Saved Agent conversations and follow-up questions.",
    ),
    "models": LazyCommand(
        "artifactize.entrypoints.cli.models",
        "models_command",
        "List the models the backend's endpoint serves (one ID a line); for claude-code and "
        "codex, the models the agent lists, and its version and sign-in.",
    ),
    "login": LazyCommand(
        "artifactize.entrypoints.cli.keys",
        "login_command",
        "Save an API key read from stdin for a backend (and --base-url endpoint).",
    ),
    "logout": LazyCommand(
        "artifactize.entrypoints.cli.keys",
        "logout_command",
        "Remove the API key saved for a backend (and --base-url endpoint).",
    ),
    "stand-in": LazyCommand(
        "artifactize.entrypoints.stand_in",
        "stand_in_command",
        "Run a command with a stand-in model that calls each Agent tool once, then says GREEN.",
    ),
    "doctor": LazyCommand(
        "artifactize.entrypoints.cli.models",
        "doctor_command",
        "Check keys, endpoints, proxies, the state home, the team store and the Human tools "
        "the workspace needs.",
    ),
    "completion": LazyCommand(
        "artifactize.entrypoints.cli.completion",
        "completion_command",
        "Print the completion script of SHELL (bash, zsh or fish); see docs/cli.md.",
    ),
    "mcp": LazyCommand(
        "artifactize.entrypoints.cli.mcp",
        "mcp_app",
        "Serve an Agent eval's tools to any MCP client (Claude Code, Cursor, VS Code, Codex "
        "CLI, Claude Desktop): stdio by default, or streamable HTTP on loopback with --http.",
    ),
    "agent-setup": LazyCommand(
        "artifactize.entrypoints.cli.agent_setup",
        "agent_setup_command",
        "Write the control-surface MCP entry and the artifactize skill for Claude Code or Codex.",
    ),
    "remote": LazyCommand(
        "artifactize.entrypoints.cli.remote",
        "remote_app",
        "Share verdicts through a team review store: login, logout, status, push.",
    ),
    "server": LazyCommand(
        "artifactize.entrypoints.cli.server",
        "server_app",
        "Run the team review store and manage its tokens.",
    ),
}

ROOT_HELP = "Review the Artifacts of a repository through declared tools. " + GLOBAL_HELP
VERSION_HELP = "Print the version."
