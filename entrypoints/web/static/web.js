// artifactize web: the page's only script (served from the server itself; no build step).
// - [data-live] elements follow a server-sent event stream that sends their new HTML;
// - [data-dialog] buttons open their <dialog>, [data-close] buttons close it;
// - forms marked [data-async] (Human tools) post without leaving the page;
// - the verdict radios show the fields of the chosen verdict only.
"use strict";

function csrfOf(form) {
  const field = form.querySelector('input[name="csrf"]');
  return field ? field.value : "";
}

function say(text) {
  const alert = document.getElementById("alert");
  if (!alert) return;
  alert.replaceChildren();
  const line = document.createElement("p");
  line.textContent = text;
  alert.append(line);
}

function follow(element) {
  const source = new EventSource(element.dataset.live);
  const isLog = element.getAttribute("role") === "log";
  source.onmessage = (event) => {
    const atEnd = element.scrollTop + element.clientHeight >= element.scrollHeight - 4;
    element.innerHTML = event.data;
    if (isLog && atEnd) element.scrollTop = element.scrollHeight;
  };
  window.addEventListener("pagehide", () => source.close());
}

document.addEventListener("DOMContentLoaded", () => {
  document.querySelectorAll("[data-live]").forEach(follow);

  document.querySelectorAll("button[data-dialog]").forEach((button) => {
    const dialog = document.getElementById(button.dataset.dialog);
    if (!dialog) return;
    button.addEventListener("click", () => dialog.showModal());
    dialog.querySelectorAll("[data-close]").forEach((close) =>
      close.addEventListener("click", () => dialog.close()));
  });

  document.querySelectorAll("form[data-async]").forEach((form) => {
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      const body = new URLSearchParams(new FormData(form));
      try {
        const response = await fetch(form.action, {
          method: "POST",
          body,
          headers: { "X-CSRF-Token": csrfOf(form) },
          credentials: "same-origin",
        });
        say(await response.text());
      } catch (error) {
        say(`The server did not answer: ${error}`);
      }
    });
  });

  const radios = document.querySelectorAll('form.verdict input[name="verdict"]');
  const groups = document.querySelectorAll("form.verdict fieldset[data-verdict]");
  const show = () => {
    const chosen = document.querySelector('form.verdict input[name="verdict"]:checked');
    groups.forEach((group) => {
      group.hidden = !chosen || group.dataset.verdict !== chosen.value;
    });
  };
  radios.forEach((radio) => radio.addEventListener("change", show));
  if (radios.length) show();
});
