//! The front page and a post page as a reader sees them, with a few posts, comments and likes:
//! the README's pictures. They are written to `docs/images/` only when `BLOG_SCREENSHOTS` is
//! set, so that an ordinary test run leaves the tree alone.

use std::path::PathBuf;

use testkit::TestApp;

use super::blog;
use super::pages::Visitor;

const SCREENSHOTS: &str = "BLOG_SCREENSHOTS";

const TOUR: &str = "A short tour of what the blog does: the front page lists the newest posts \
with their counts, and every post has a page of its own, with its comments and its likes.

| Page | What it shows |
|------|---------------|
| Front page | the newest posts, with their counts |
| Post page | the post, its comments and its likes |

Posts are *Markdown*: tables, ~~mistakes~~ corrections and links such as
<https://learn.microsoft.com/azure/cosmos-db/>.";

pub async fn the_front_page_and_a_post_page(v: Visitor, app: &TestApp) {
    app.register("ada", "Ada Lovelace").await;
    app.register("grace", "Grace Hopper").await;
    let older = blog::new_post(
        app,
        "grace",
        "Compilers for everyone",
        "Programs should read like English, and a compiler can make them. Here is how the \
             first one came about, and what it taught us about who gets to write software.",
    )
    .await;
    blog::comment(app, "ada", &older, "Agreed: notes first, engines second.").await;
    let tour = blog::new_post(app, "ada", "Welcome to the blog", TOUR).await;
    blog::comment(
        app,
        "grace",
        &tour,
        "Lovely start. The table renders nicely.",
    )
    .await;
    blog::comment(app, "ada", &tour, "Thank you! More soon.").await;
    blog::like(app, "grace", &tour).await;
    blog::like(app, "ada", &older).await;

    let front = v
        .reload_until("/", "both posts with their counts", |text| {
            text.contains("2 comments · 1 like") && text.contains("1 comment · 1 like")
        })
        .await;
    let newest = front
        .find("Welcome to the blog")
        .expect("the tour is listed");
    let oldest = front
        .find("Compilers for everyone")
        .expect("the older post");
    assert!(newest < oldest, "newest first: {front}");
    save(&v, "front-page.png").await;

    v.sign_in("grace").await;
    v.open(&format!("/posts/{tour}")).await;
    assert_eq!(
        v.find_all(".content table tr").await,
        3,
        "the table renders"
    );
    assert_eq!(v.text_of(".content del").await, "mistakes");
    assert_eq!(v.find_all("ol.comments li").await, 2);
    save(&v, "post-page.png").await;
}

/// Writes the browser's picture of the page to `docs/images/{name}` when asked to.
async fn save(v: &Visitor, name: &str) {
    let png = v.client.screenshot().await.expect("a screenshot");
    assert!(png.starts_with(b"\x89PNG"), "a PNG");
    if std::env::var_os(SCREENSHOTS).is_none() {
        return;
    }
    let path: PathBuf = [env!("CARGO_MANIFEST_DIR"), "docs", "images", name]
        .iter()
        .collect();
    std::fs::create_dir_all(path.parent().expect("a folder")).expect("docs/images");
    std::fs::write(&path, png).expect("the screenshot is written");
}
