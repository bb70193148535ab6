// Live preview on the ErrorCode change page. When a variant's text changes, its length budget is recounted and
// the preview beside it (the text a client shows, the structured content, every face) is re-rendered from the
// unsaved draft by POST /api/v1/render/. Without that endpoint the page keeps the preview of the saved catalog,
// which the server rendered.
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

  // A client that drops structuredContent shows the text of the content blocks; "structured" is the rest.
  function show(pre, output) {
    if (pre.dataset.show === "content" && Array.isArray(output?.content)) {
      pre.textContent = output.content.filter((b) => b.type === "text").map((b) => b.text).join("\n\n");
    } else if (pre.dataset.show === "structured" && output?.structuredContent !== undefined) {
      pre.textContent = JSON.stringify(output.structuredContent, null, 2);
    } else {
      pre.textContent = typeof output === "string" ? output : JSON.stringify(output, null, 2);
    }
  }

  async function rerender(form, section, prefix) {
    const id = field(form, prefix, "id");
    const block = id && id.value && document.querySelector(`.errcatalog-preview-panel[data-variant-id="${id.value}"]`);
    if (!block || !available || !section.dataset.renderUrl) return;
    const draft = Object.fromEntries(TEXT.map((name) => [name, field(form, prefix, name).value]));
    const headers = {
      "Content-Type": "application/json",
      "X-CSRFToken": form.elements.csrfmiddlewaretoken.value,
    };
    // One request per distinct render (the text a client shows and its structured part are one tool result), one
    // after another, the text a client shows first: a burst of parallel renders per keystroke would only compete.
    const renders = new Map();
    for (const pre of block.querySelectorAll("pre[data-request]")) {
      if (!renders.has(pre.dataset.request)) renders.set(pre.dataset.request, []);
      renders.get(pre.dataset.request).push(pre);
    }
    for (const [request, pres] of renders) {
      if (!available) break;
      const body = JSON.stringify({ ...JSON.parse(request), draft });
      const response = await fetch(section.dataset.renderUrl, { method: "POST", headers, body }).catch(() => null);
      if (response && response.status === 400) {
        // The draft itself is refused (e.g. an unknown placeholder): say why in place of the face.
        const refusal = await response.json();
        pres.forEach((pre) => show(pre, refusal));
      } else if (response && response.ok) {
        const { output } = await response.json();
        pres.forEach((pre) => show(pre, output));
        const text = output?.structuredContent?.message;
        if (pres.some((pre) => pre.dataset.face === "tool_result_markdown") && typeof text === "string") {
          // The renderer cuts text at the budget and ends it with an ellipsis.
          const count = block.querySelector("[data-count=rendered]");
          const cut = text.endsWith(ELLIPSIS) && text.length >= Number(count.dataset.max);
          count.textContent = text.length;
          count.classList.toggle("errcatalog-over", cut);
          block.querySelector(".errcatalog-cut").textContent = cut ? " (cut at the limit)" : "";
        }
      } else {
        available = false;
        section.querySelector(".errcatalog-preview-status").textContent =
          "Live preview is unavailable; the preview shows the saved text.";
      }
    }
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
