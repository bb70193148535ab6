// Live preview on the ErrorCode change page. When a variant's text changes, its length budget is recounted and
// each of its faces is re-rendered from the unsaved draft by POST /api/v1/render/. Without that endpoint the
// page keeps the preview of the saved catalog, which the server rendered.
"use strict";
(function () {
  const TEXT = ["message", "cause", "instruction", "question", "header"];
  const NAME = /^(variants-\d+)-(message|cause|instruction|question|header)$/;
  const ELLIPSIS = "\u2026";
  const timers = {};
  let available = true;

  function field(form, prefix, name) {
    return form.elements[`${prefix}-${name}`];
  }

  function setCount(el, count, max) {
    if (!el) return;
    el.textContent = count;
    el.classList.toggle("errcatalog-over", count > max);
  }

  function recount(form, prefix) {
    const budget = document.querySelector(`#${prefix} .errcatalog-budget`);
    if (!budget) return;
    const max = Number(budget.dataset.max);
    const value = (name) => field(form, prefix, name).value;
    const composed = ["message", "cause", "instruction"].map(value).filter(Boolean).join(" ");
    setCount(budget.querySelector("[data-count=composed]"), composed.length, max);
    setCount(budget.querySelector("[data-count=question]"), value("question").length, max);
  }

  function show(pre, output) {
    pre.textContent = typeof output === "string" ? output : JSON.stringify(output, null, 2);
  }

  async function rerender(form, section, prefix) {
    const id = field(form, prefix, "id");
    const block = id && id.value && section.querySelector(`[data-variant-id="${id.value}"]`);
    if (!block || !available || !section.dataset.renderUrl) return;
    const draft = Object.fromEntries(TEXT.map((name) => [name, field(form, prefix, name).value]));
    const headers = {
      "Content-Type": "application/json",
      "X-CSRFToken": form.elements.csrfmiddlewaretoken.value,
    };
    const faces = [...block.querySelectorAll("pre[data-request]")];
    await Promise.all(
      faces.map(async (pre) => {
        const body = JSON.stringify({ ...JSON.parse(pre.dataset.request), draft });
        const response = await fetch(section.dataset.renderUrl, { method: "POST", headers, body }).catch(() => null);
        if (response && response.status === 400) {
          // The draft itself is refused (e.g. an unknown placeholder): say why in place of the face.
          show(pre, await response.json());
        } else if (response && response.ok) {
          const { output } = await response.json();
          show(pre, output);
          const text = output?.structuredContent?.message;
          if (pre.dataset.face === "tool_result_markdown" && typeof text === "string") {
            // The renderer cuts text at the budget and ends it with an ellipsis.
            const count = block.querySelector("[data-count=rendered]");
            const cut = text.endsWith(ELLIPSIS) && text.length >= Number(count.dataset.max);
            count.textContent = text.length;
            count.classList.toggle("errcatalog-over", cut);
            block.querySelector(".errcatalog-cut").textContent = cut ? " (cut at the limit)" : "";
          }
        } else if (available) {
          available = false;
          section.querySelector(".errcatalog-preview-status").textContent =
            "Live preview is unavailable; the faces show the saved text.";
        }
      }),
    );
    block.classList.toggle("errcatalog-draft", available);
  }

  document.addEventListener("DOMContentLoaded", () => {
    const section = document.getElementById("errcatalog-preview");
    const form = document.querySelector("form#errorcode_form");
    if (!form) return;
    form.addEventListener("input", (event) => {
      const match = NAME.exec(event.target.name || "");
      if (!match) return;
      const prefix = match[1];
      recount(form, prefix);
      if (!section) return;
      clearTimeout(timers[prefix]);
      timers[prefix] = setTimeout(() => rerender(form, section, prefix), 400);
    });
  });
})();
