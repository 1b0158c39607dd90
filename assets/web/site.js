// Likes without a reload: a like or unlike form is sent in the background and the count
// updated in place. Without this script the same forms post and the page reloads.
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
    const count = document.getElementById("like-count");
    if (count && typeof body.likeCount === "number") count.textContent = String(body.likeCount);
    const status = document.getElementById("like-status");
    if (status) status.textContent = form.dataset.like === "like" ? "You like this post." : "Like removed.";
  } catch (_) {
    form.submit();
  } finally {
    if (button) button.disabled = false;
  }
});
