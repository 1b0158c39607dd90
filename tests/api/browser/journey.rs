//! The whole journey of two people on the blog, in the browser, with the pages' script on
//! and off: sign in, write, read on the front page, comment, like and unlike, rename, delete
//! a comment and the post, and erase an account.

use super::chromium::Script;
use super::pages::Visitor;

const TITLE: &str = "Notes from the field";
const CONTENT: &str = "A post in **Markdown**, with a [link](https://example.com/notes).";
const COMMENT: &str = "Welcome, Alice!";

pub async fn two_people_use_the_blog(visitor: Visitor, script: Script) {
    let post = alice_writes_a_post(&visitor).await;
    bob_comments_likes_and_unlikes(&visitor, &post, script).await;
    alice_renames_and_the_name_changes_everywhere(&visitor, &post).await;
    alice_deletes_the_comment_and_the_post(&visitor, &post).await;
    bob_erases_his_account(&visitor).await;
    visitor.assert_no_dialog().await;
}

/// Alice signs in, chooses her name and writes a post; it shows on the front page once the
/// change feed has put it in the feed. Returns the post page's path.
async fn alice_writes_a_post(v: &Visitor) -> String {
    v.sign_up("alice", "Alice").await;
    let post = v.write_post(TITLE, CONTENT).await;
    assert_eq!(v.text_of("article h1").await, TITLE);
    assert_eq!(v.text_of("article .content strong").await, "Markdown");
    let link = v.find(".content a[href='https://example.com/notes']").await;
    let rel = link.attr("rel").await.expect("rel").unwrap_or_default();
    assert!(
        rel.contains("nofollow") && rel.contains("ugc"),
        "a link she wrote carries rel=\"nofollow ugc\": {rel:?}"
    );
    // Its page is at its readable address, which the canonical link names; the id alone
    // leads there.
    assert!(post.ends_with("/notes-from-the-field"), "{post}");
    let canonical = v
        .find("link[rel=canonical]")
        .await
        .attr("href")
        .await
        .expect("href")
        .expect("a canonical link");
    assert_eq!(canonical, v.url(&post));
    v.open(post.trim_end_matches("/notes-from-the-field")).await;
    assert_eq!(
        v.path().await,
        post,
        "the id alone moves to the readable address"
    );
    v.client
        .goto(&canonical)
        .await
        .expect("the canonical link opens");
    assert_eq!(v.text_of("article h1").await, TITLE);
    v.reload_until(&v.in_blog("/"), "the new post", |text| text.contains(TITLE))
        .await;
    v.find(&format!("ol.posts a[href='{post}']")).await;
    v.sign_out().await;
    post
}

async fn bob_comments_likes_and_unlikes(v: &Visitor, post: &str, script: Script) {
    v.sign_up("bob", "Bob").await;
    v.open(post).await;
    v.type_into("#comment-content", COMMENT).await;
    v.press("form[action$='/comments'] button[type=submit]")
        .await;
    let comment = v.text_of("ol.comments li").await;
    assert!(
        comment.contains(COMMENT) && comment.contains("Bob"),
        "the comment shows with its author: {comment:?}"
    );
    v.like_or_unlike(post, "like", script).await;
    v.reload_until(post, "one like", |text| text.contains("· 1 like"))
        .await;
    // The count links the likes page, under the post's id.
    v.press("#like-count").await;
    assert!(v.main_text().await.contains("Bob"), "the likes list Bob");
    v.open(post).await;
    v.like_or_unlike(post, "unlike", script).await;
    v.reload_until(post, "no likes", |text| text.contains("· 0 likes"))
        .await;
    v.sign_out().await;
}

async fn alice_renames_and_the_name_changes_everywhere(v: &Visitor, post: &str) {
    v.sign_in("alice").await;
    v.set_username("Alice Cooper").await;
    let renamed = |text: &str| text.contains("by Alice Cooper") && !text.contains("by Alice ·");
    v.reload_until(post, "the new name", renamed).await;
    v.reload_until(&v.in_blog("/"), "the new name", renamed)
        .await;
    let author_page = v
        .reload_until(&v.in_blog("/users/alice"), "the new name", |text| {
            text.starts_with("Alice Cooper") && text.contains(TITLE)
        })
        .await;
    assert!(!author_page.contains("by Alice ·"), "{author_page}");
}

/// The post's author deletes the comment on it, then the post.
async fn alice_deletes_the_comment_and_the_post(v: &Visitor, post: &str) {
    v.open(post).await;
    v.press("ol.comments li form button").await;
    assert!(!v.exists("ol.comments li").await, "the comment is gone");
    assert!(!v.main_text().await.contains(COMMENT));
    v.press("form[action$='/delete'] button.danger").await;
    v.open(post).await;
    let gone = v.main_text().await;
    assert!(
        gone.contains("404"),
        "the deleted post's page is a 404: {gone}"
    );
    v.reload_until(&v.in_blog("/"), "no post", |text| !text.contains(TITLE))
        .await;
    v.sign_out().await;
}

async fn bob_erases_his_account(v: &Visitor) {
    v.sign_in("bob").await;
    v.open(&v.in_blog("/account/delete")).await;
    v.find("#confirm")
        .await
        .click()
        .await
        .expect("the confirmation is ticked");
    v.press("main form button.danger").await;
    v.reload_until(&v.in_blog("/users/bob"), "no such author", |text| {
        text.contains("404")
    })
    .await;
}
