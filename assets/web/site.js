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
