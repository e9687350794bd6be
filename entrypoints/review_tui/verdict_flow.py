"""Submitting a verdict: choose GREEN or RED, fill in the fields, submit and publish.

The branch schema of the chosen verdict decides how the fields are entered: the Form for a
flat schema, ``$VISUAL``/``$EDITOR`` on a JSON template for any other (or on ``Ctrl-E``
from the Form). The submission claims an unclaimed request first, is validated by the
lifecycle without repair, and is published like ``request submit``. A refused submission
stays correctable: its error shows in the Form (or as a notice after an edit) and the
request keeps waiting. A recheck that settled the request ERROR, or a publish that failed
after the local settle, ends the review of that request.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from artifactize.domain.reviews.human.errors import HumanPublishError, HumanReviewError
from artifactize.domain.reviews.verdicts import VerdictValidator
from artifactize.domain.tools.cancellation import Cancellation
from artifactize.entrypoints.review_tui import editor
from artifactize.entrypoints.review_tui.acts import Act
from artifactize.entrypoints.review_tui.dialogs import VerdictScreen
from artifactize.entrypoints.review_tui.form_model import FormError, editor_template, flat_form
from artifactize.entrypoints.review_tui.form_screen import FormScreen
from artifactize.entrypoints.review_tui.request_screen import RequestScreen
from artifactize.entrypoints.review_tui.shell import Shell
from artifactize.ports.statuses import Verdict

SUBMITTING = "Submitting {verdict}…"
SUBMITTED = "Submitted {status} for {eval} ({request})."
SETTLED_ERROR = "The request settled ERROR: {reason}"


def branch_schema(view: Mapping[str, Any], verdict: str) -> dict[str, Any]:
    """The recorded eval's schema for ``verdict``, as the lifecycle validates it."""
    definition = (view.get("humanDefinition") or {}).get("eval") or {}
    validator = VerdictValidator(definition.get("passSchema"), definition.get("failSchema"))
    green = verdict == Verdict.GREEN
    return validator.branch_schema(Verdict.GREEN if green else Verdict.RED)


class VerdictFlow:
    def __init__(
        self,
        shell: Shell,
        environment: Mapping[str, str],
        fallback_editor: str = editor.EDITOR_DEFAULT,
        *,
        windows: bool = False,
    ) -> None:
        self.shell = shell
        self.environment = environment
        self.fallback_editor = fallback_editor  # chosen by the composition root
        self.windows = windows

    def choose(self, screen: RequestScreen) -> None:
        reason = screen.read_only
        if reason:
            self.shell.say(reason, problem=True)
            return
        self.shell.show(VerdictScreen(screen.widget, str(screen.view.get("evalId"))))

    def verdict_act(self, screen: RequestScreen, act: Act) -> None:
        self.shell.show(screen)
        if act not in (Act.GREEN, Act.RED):
            return
        verdict = Verdict.GREEN if act is Act.GREEN else Verdict.RED
        schema = branch_schema(screen.view, verdict)
        form = flat_form(verdict, schema)
        if form is None:
            self._edit(screen, verdict, schema)
            return
        self.shell.show(FormScreen(form, str(screen.view.get("evalId")), screen.request_id))

    def form_act(self, screen: RequestScreen, form_screen: FormScreen, act: Act) -> None:
        verdict = form_screen.form.verdict
        if act is Act.CANCEL:
            self.shell.show(screen)
        elif act is Act.EDITOR:
            self.shell.show(screen)
            self._edit(screen, verdict, branch_schema(screen.view, verdict))
        elif act is Act.SEND:
            try:
                result = form_screen.form.result()
            except FormError as exc:
                form_screen.show_error(exc.message)
                return
            form_screen.show_error(None)
            self._start_submit(screen, result, form_screen)

    def _edit(self, screen: RequestScreen, verdict: str, schema: Mapping[str, Any]) -> None:
        """Hand the terminal to the editor, then submit what it saved."""
        path = editor.write_template(editor_template(schema))
        try:
            with self.shell.paused():
                editor.run_editor(
                    editor.editor_command(
                        self.environment, self.fallback_editor, windows=self.windows
                    ),
                    path,
                )
            result = editor.read_result(path, verdict)
        except editor.EditError as exc:
            self.shell.say(exc.message, problem=True)
            return
        finally:
            path.unlink(missing_ok=True)
        self._start_submit(screen, result, None)

    def _start_submit(
        self, screen: RequestScreen, result: dict[str, Any], form: FormScreen | None
    ) -> None:
        token = Cancellation()
        label = SUBMITTING.format(verdict=result["verdict"])
        self.shell.start_busy(label, lambda: self._submit(screen, result, token, form), token)

    async def _submit(
        self,
        screen: RequestScreen,
        result: dict[str, Any],
        token: Cancellation,
        form: FormScreen | None,
    ) -> None:
        try:
            submitted = await self.shell.session.submit(screen.request_id, result, token)
        except HumanPublishError as exc:  # settled locally: the review of it is over
            self.shell.submitted(exc.message, problem=True)
            return
        except HumanReviewError as exc:
            self.shell.reload_request(screen)
            if exc.settled or form is None:
                self.shell.show(screen)
                message = SETTLED_ERROR.format(reason=exc.message) if exc.settled else exc.message
                self.shell.say(message, problem=True)
            else:
                form.show_error(exc.message)  # correctable: the form stays, the request waits
            return
        request = submitted.request
        status, eval_id = request.status, request.eval_id
        self.shell.submitted(SUBMITTED.format(status=status, eval=eval_id, request=request.id))
