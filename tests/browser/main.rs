//! The blog in a real browser: headless Chromium, driven over WebDriver, reads and writes the
//! pages of the real application with JavaScript on and off, and hostile text never runs.
//! Without Chromium these tests say how to install it and skip (they fail where `CI` is set).

mod blog;
mod chromium;

use fantoccini::Locator;

use blog::Blog;
use chromium::{Script, with_browser};

#[tokio::test]
async fn a_headless_browser_opens_the_served_application() {
    let blog = Blog::spawn().await;
    with_browser(
        "a_headless_browser_opens_the_served_application",
        Script::On,
        |client| async move {
            client
                .goto(&blog.url("/api/docs"))
                .await
                .expect("the page opens");
            client
                .wait()
                .for_element(Locator::Css("#swagger-ui .title"))
                .await
                .expect("Swagger UI renders the API's title with its script");
            assert_eq!(client.title().await.expect("a title"), "cosmos-blog API");
        },
    )
    .await;
}
