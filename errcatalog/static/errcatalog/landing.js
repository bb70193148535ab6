// The home page's copy buttons: each copies the text of the block its data-copy attribute names.
"use strict";
document.addEventListener("DOMContentLoaded", () => {
  for (const button of document.querySelectorAll("button[data-copy]")) {
    button.addEventListener("click", async () => {
      const block = document.getElementById(button.dataset.copy);
      try {
        await navigator.clipboard.writeText(block.textContent);
        button.textContent = "Copied";
      } catch {
        // Without clipboard access (a page over plain HTTP on another host): select the text for Ctrl+C.
        window.getSelection().selectAllChildren(block);
        button.textContent = "Selected";
      }
      setTimeout(() => { button.textContent = "Copy"; }, 2000);
    });
  }
});
