//! What a person does on the blog's pages, as WebDriver commands: open a page, type into a
//! field, press a button and wait for the page it leads to. Waits are on elements and
//! navigations; where a page shows the change feed's work, it is reloaded until it does.

use std::time::Duration;

use fantoccini::elements::Element;
use fantoccini::{Client, Locator};

use testkit::TestApp;
use testkit::poll::poll_for;

use super::chromium::Script;

/// How long a page may take to show what the change feed derives (generous: a loaded CI
/// machine; the real lag is measured by the benchmark, never asserted here).
const CHANGE_FEED_LIMIT: Duration = Duration::from_secs(20);

/// Between two reloads of a page that waits for the change feed.
const RELOAD_PERIOD: Duration = Duration::from_millis(50);
/// How long a pressed button's page may take to load, and how often to look.
const PAGE_LOAD_LIMIT: Duration = Duration::from_secs(10);
const PAGE_POLL_PERIOD: Duration = Duration::from_millis(10);

pub struct Visitor {
    pub client: Client,
    /// `http://127.0.0.1:PORT` of the site.
    pub base: String,
    /// Where the blog's pages are on the site: empty in `single`, `/tenants/{tenantId}` in
    /// `multi` (the sign-in and sign-out pages are the site's, at its root).
    pub blog: String,
}

impl Visitor {
    /// A visitor of `app`'s blog (in `multi`, of the tenant `app` addresses).
    pub fn new(client: Client, app: &TestApp) -> Self {
        let blog = match &app.tenant {
            Some(tenant) => format!("/tenants/{}", encode_segment(tenant.as_str())),
            None => String::new(),
        };
        Self {
            client,
            base: app.address.clone(),
            blog,
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// The path of the blog's page `path` (`/`, `/write`, `/users/alice`...).
    pub fn in_blog(&self, path: &str) -> String {
        format!("{}{path}", self.blog)
    }

    /// Opens `path` of the blog and waits for its main content.
    pub async fn open(&self, path: &str) {
        self.client
            .goto(&self.url(path))
            .await
            .unwrap_or_else(|e| panic!("{path} opens: {e}"));
        self.find("main").await;
    }

    /// The path (and query) of the page shown now.
    pub async fn path(&self) -> String {
        let url = self.client.current_url().await.expect("the current URL");
        match url.query() {
            Some(query) => format!("{}?{query}", url.path()),
            None => url.path().to_owned(),
        }
    }

    pub async fn find(&self, css: &str) -> Element {
        let found = self
            .client
            .wait()
            .at_most(Duration::from_secs(10))
            .for_element(Locator::Css(css))
            .await;
        match found {
            Ok(element) => element,
            Err(e) => panic!("`{css}` is on {}: {e}", self.describe().await),
        }
    }

    pub async fn exists(&self, css: &str) -> bool {
        match self.client.find(Locator::Css(css)).await {
            Ok(_) => true,
            Err(e) if e.is_no_such_element() => false,
            Err(other) => panic!("looking for `{css}`: {other}"),
        }
    }

    /// How many elements `css` matches now.
    pub async fn find_all(&self, css: &str) -> usize {
        self.client
            .find_all(Locator::Css(css))
            .await
            .map_or(0, |found| found.len())
    }

    pub async fn text_of(&self, css: &str) -> String {
        self.find(css)
            .await
            .text()
            .await
            .expect("an element's text")
    }

    /// The visible text of the page's main content.
    pub async fn main_text(&self) -> String {
        self.text_of("main").await
    }

    /// Replaces what the field `css` holds with `text`, typed as keys.
    pub async fn type_into(&self, css: &str, text: &str) {
        let field = self.find(css).await;
        field.clear().await.expect("the field clears");
        field.send_keys(text).await.expect("the text is typed");
    }

    /// Presses the button `css` and waits until the page it loads has replaced this one.
    pub async fn press(&self, css: &str) {
        let page = self.find("html").await;
        self.find(css)
            .await
            .click()
            .await
            .expect("the button is pressed");
        self.wait_until_replaced(page).await;
    }

    /// Waits until `page` (a former `<html>` element) is gone: a new document has loaded.
    async fn wait_until_replaced(&self, page: Element) {
        let page = &page;
        let replaced = poll_for(PAGE_LOAD_LIMIT, PAGE_POLL_PERIOD, || async move {
            match page.tag_name().await {
                Err(e) if e.is_stale_element_reference() || e.is_no_such_element() => Ok(()),
                Ok(_) | Err(_) => Err(()),
            }
        })
        .await;
        if replaced.is_err() {
            panic!(
                "no new page loaded after pressing a button: {}",
                self.describe().await
            );
        }
        self.find("main").await;
    }

    /// Reloads `path` until `shows` holds of its main text (the change feed's copies appear
    /// shortly after a write), and returns that text.
    #[track_caller]
    pub fn reload_until<'a>(
        &'a self,
        path: &'a str,
        what: &'a str,
        shows: impl Fn(&str) -> bool + 'a,
    ) -> impl Future<Output = String> + 'a {
        let caller = std::panic::Location::caller();
        async move {
            let shows = &shows;
            let shown = poll_for(CHANGE_FEED_LIMIT, RELOAD_PERIOD, || async move {
                self.open(path).await;
                let text = self.main_text().await;
                if shows(&text) { Ok(text) } else { Err(text) }
            })
            .await;
            shown.unwrap_or_else(|text| {
                panic!(
                    "{path} did not show {what} within {CHANGE_FEED_LIMIT:?} (waiting at \
                     {caller}); it shows:\n{text}"
                )
            })
        }
    }

    /// Signs in on the development sign-in page as `user_id`.
    pub async fn sign_in(&self, user_id: &str) {
        self.open("/sign-in").await;
        self.type_into("#user_id", user_id).await;
        self.press("main form button[type=submit]").await;
    }

    /// Signs in as `user_id` and chooses `username` on the account page.
    pub async fn sign_up(&self, user_id: &str, username: &str) {
        self.sign_in(user_id).await;
        self.set_username(username).await;
    }

    /// Chooses or changes the signed-in user's username on the account page.
    pub async fn set_username(&self, username: &str) {
        self.open(&self.in_blog("/account")).await;
        self.type_into("#username", username).await;
        self.press("main form button[type=submit]").await;
    }

    pub async fn sign_out(&self) {
        self.press("form[action='/sign-out'] button").await;
        assert!(
            self.exists("a[href^='/sign-in']").await,
            "signed out, the page offers to sign in: {}",
            self.describe().await
        );
    }

    /// Writes a post on the write page; returns its page's path.
    pub async fn write_post(&self, title: &str, content: &str) -> String {
        self.open(&self.in_blog("/write")).await;
        self.type_into("#title", title).await;
        self.type_into("#content", content).await;
        // "Publish", by its name and value: the form's first button uploads an image, and
        // "Save draft" and "Schedule" follow "Publish".
        self.press("main form button[name=intent][value=published]")
            .await;
        let path = self.path().await;
        assert!(
            path.starts_with(&self.in_blog("/posts/")),
            "writing a post leads to its page: {}",
            self.describe().await
        );
        path
    }

    /// Presses Like or Unlike, the one of the two the post page offers. With script, the page
    /// stays and says so; without, the form posts and the post page loads again. Either way
    /// the page then offers the other one, and only it.
    pub async fn like_or_unlike(&self, post: &str, action: &str, script: Script) {
        let button = format!("form[data-like='{action}'] button");
        match script {
            Script::On => {
                self.find(&button)
                    .await
                    .click()
                    .await
                    .expect("the button is pressed");
                let said = match action {
                    "like" => "You like this post.",
                    _ => "Like removed.",
                };
                self.client
                    .wait()
                    .for_element(Locator::XPath(&format!(
                        "//*[@id='like-status' and normalize-space()='{said}']"
                    )))
                    .await
                    .unwrap_or_else(|e| panic!("the page says {said:?} without reloading: {e}"));
            }
            Script::Off => {
                self.press(&button).await;
                assert_eq!(self.path().await, post, "the form leads back to the post");
                assert_eq!(
                    self.text_of("#like-status").await,
                    "",
                    "no script, no status"
                );
            }
        }
        let other = if action == "like" { "unlike" } else { "like" };
        self.find(&format!("form[data-like='{other}'] button"))
            .await;
        // The count in words that agree with it, with the script as without ("1 like").
        let count = self.text_of("#like-count").await;
        let agrees = match count.split_once(' ') {
            Some(("1", noun)) => noun == "like",
            Some((n, noun)) => n.parse::<u64>().is_ok() && noun == "likes",
            None => false,
        };
        assert!(agrees, "the like count says {count:?}");
        assert_eq!(
            self.find_all("form[data-like]").await,
            1,
            "one of Like and Unlike: {}",
            self.describe().await
        );
    }

    /// Fails if a dialog (`alert`, `confirm`, `prompt`) is open: no page of the blog opens one.
    pub async fn assert_no_dialog(&self) {
        match self.client.get_alert_text().await {
            Err(e) if e.is_no_such_alert() => {}
            Ok(text) => panic!("a dialog opened: {text:?}"),
            Err(other) => panic!("asking for a dialog: {other}"),
        }
    }

    /// The page's address and heading, for failure messages.
    pub async fn describe(&self) -> String {
        let url = self
            .client
            .current_url()
            .await
            .map_or_else(|e| format!("(no URL: {e})"), |u| u.to_string());
        let heading = match self.client.find(Locator::Css("h1")).await {
            Ok(h1) => h1.text().await.unwrap_or_default(),
            Err(_) => String::new(),
        };
        format!("{url} (\"{heading}\")")
    }
}

/// `text` as one percent-encoded path segment, as a browser shows it in a URL.
fn encode_segment(text: &str) -> String {
    let mut url = reqwest::Url::parse("http://x/").expect("a URL");
    url.path_segments_mut().expect("a path").push(text);
    url.path().trim_start_matches('/').to_owned()
}
