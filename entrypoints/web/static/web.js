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

// What names a focusable element across a re-render: its id, else its link target or its
// form action with its label (the new HTML holds new elements, not the focused one).
function focusKey(node) {
  if (!node || node === document.body) return null;
  if (node.id) return `#${CSS.escape(node.id)}`;
  const label = (node.textContent || "").trim();
  if (node.tagName === "A") return { tag: "a", attribute: "href", value: node.getAttribute("href"), label };
  const form = node.closest("form");
  if (form) return { tag: node.tagName.toLowerCase(), attribute: null, value: form.getAttribute("action"), label };
  return null;
}

function refocus(element, key) {
  if (!key) return;
  if (typeof key === "string") {
    const same = element.querySelector(key);
    if (same) same.focus();
    return;
  }
  for (const node of element.querySelectorAll(key.tag)) {
    const value = key.attribute ? node.getAttribute(key.attribute) : node.closest("form")?.getAttribute("action");
    if (value === key.value && (node.textContent || "").trim() === key.label) {
      node.focus();
      return;
    }
  }
}

// The first event repeats what the page already shows, and later ones often do too: an
// unchanged fragment is left alone, so a keyboard user's focus is never taken away. A
// changed one is swapped in and the focus moves to the same link or button in it.
function follow(element) {
  const source = new EventSource(element.dataset.live);
  const isLog = element.getAttribute("role") === "log";
  const parsed = document.createElement("template");
  source.onmessage = (event) => {
    parsed.innerHTML = event.data;
    if (parsed.innerHTML === element.innerHTML) return;
    const atEnd = element.scrollTop + element.clientHeight >= element.scrollHeight - 4;
    const focused = element.contains(document.activeElement) ? focusKey(document.activeElement) : null;
    element.innerHTML = event.data;
    refocus(element, focused);
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
