// Likes without a reload: the like (or unlike) form is sent in the background, the count
// updated in place, and the form turned into the other one. Without this script the same
// form posts and the page reloads with the other button.
"use strict";
document.addEventListener("submit", async (event) => {
  const form = event.target;
  if (!(form instanceof HTMLFormElement) || !form.dataset.like) return;
  event.preventDefault();
  const button = form.querySelector("button");
  if (button) button.disabled = true;
  try {
    const response = await fetch(form.action, {
      method: "POST",
      body: new URLSearchParams(new FormData(form)),
      headers: { "Accept": "application/json" },
      credentials: "same-origin",
    });
    if (!response.ok) { form.submit(); return; }
    const body = await response.json();
    // The server words the count ("1 like", "2 likes"), as the page it served did.
    const count = document.getElementById("like-count");
    if (count && typeof body.likeText === "string") count.textContent = body.likeText;
    const status = document.getElementById("like-status");
    if (status) status.textContent = form.dataset.like === "like" ? "You like this post." : "Like removed.";
    if (typeof body.liked === "boolean") offer(form, body.liked ? "unlike" : "like");
  } catch (_) {
    form.submit();
  } finally {
    if (button) button.disabled = false;
  }
});

// Turns a like form into the unlike form, or back: its action, its name and its button.
function offer(form, action) {
  form.action = form.action.replace(/\/(un)?like$/, "/" + action);
  form.dataset.like = action;
  const button = form.querySelector("button");
  if (!button) return;
  button.textContent = action === "like" ? "Like" : "Unlike";
  button.classList.toggle("secondary", action === "unlike");
}

// Images pasted or dropped into a post's text: each is uploaded as the page's own "Upload and
// insert" button would send it, and its Markdown goes where the cursor is. Without this script
// that button does the same, a page load at a time.
const IMAGE_TYPES = ["image/png", "image/jpeg", "image/gif", "image/webp"];
document.addEventListener("DOMContentLoaded", () => {
  const hint = document.getElementById("paste-hint");
  if (hint) hint.hidden = false;
});

for (const type of ["paste", "drop"]) {
  document.addEventListener(type, (event) => {
    const text = event.target;
    if (!(text instanceof HTMLTextAreaElement) || text.id !== "content") return;
    const data = type === "paste" ? event.clipboardData : event.dataTransfer;
    const files = Array.from((data && data.files) || []).filter((f) => IMAGE_TYPES.includes(f.type));
    if (files.length === 0) return;
    event.preventDefault();
    uploadInto(text, files);
  });
}

async function uploadInto(text, files) {
  const form = text.form;
  const button = form && form.querySelector("button[formaction]");
  const status = document.getElementById("image-status");
  const say = (message) => { if (status) status.textContent = message; };
  if (!button) return;
  for (const file of files) {
    say("Uploading " + (file.name || "the image") + "…");
    const body = new FormData(form);
    body.set("image", file, file.name || "pasted");
    const alt = body.get("alt") || "";
    try {
      const response = await fetch(button.formAction, {
        method: "POST",
        body,
        headers: { "Accept": "application/json" },
        credentials: "same-origin",
      });
      const answer = await response.json();
      if (!response.ok) { say("The image was not added: " + (answer.detail || response.status) + "."); continue; }
      insertAtCursor(text, answer.markdown);
      say("Image added: " + (alt || answer.url) + ".");
    } catch (_) {
      say("The image could not be uploaded; try the Upload and insert button.");
    }
  }
}

// Puts `markdown` on a line of its own at the cursor, and the cursor after it.
function insertAtCursor(text, markdown) {
  const [start, end] = [text.selectionStart, text.selectionEnd];
  const before = text.value.slice(0, start);
  const after = text.value.slice(end);
  const lead = before === "" || before.endsWith("\n\n") ? "" : before.endsWith("\n") ? "\n" : "\n\n";
  const inserted = lead + markdown + "\n";
  text.value = before + inserted + after;
  text.selectionStart = text.selectionEnd = before.length + inserted.length;
  text.dispatchEvent(new Event("input", { bubbles: true }));
}
