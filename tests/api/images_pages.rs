//! Images on the pages: the write page's upload without JavaScript inserts the image's
//! Markdown, the post shows it sized, lazy and with its renditions, a deleted image leaves its
//! alt text, and an image of another site is a link the write page warns about. The page's
//! script (paste or drop) sends the same form asking for JSON: the image's Markdown, or a
//! problem.

use reqwest::header::{self, HeaderMap};
use reqwest::{Method, StatusCode};
use scraper::{Html, Selector};
use serde_json::Value;

use testkit::{TestApp, image_tests};

use super::images::picture;

image_tests!(
    a_writer_puts_a_photo_in_a_post_from_the_write_page_without_javascript,
    the_pages_script_gets_the_images_markdown_or_a_problem,
);

struct Writer<'a> {
    app: &'a TestApp,
    client: reqwest::Client,
    csrf: Option<String>,
}

impl<'a> Writer<'a> {
    fn new(app: &'a TestApp) -> Self {
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap();
        Self {
            app,
            client,
            csrf: None,
        }
    }

    fn url(&self, path: &str) -> String {
        format!("{}{}", self.app.address, self.path(path))
    }

    fn path(&self, path: &str) -> String {
        match &self.app.tenant {
            Some(tenant) => {
                let mut url = reqwest::Url::parse("http://x/").unwrap();
                url.path_segments_mut().unwrap().push(tenant.as_str());
                format!("/tenants{}{path}", url.path())
            }
            None => path.to_owned(),
        }
    }

    fn request(&self, method: Method, url: String) -> reqwest::RequestBuilder {
        self.request_accepting(method, url, "text/html")
    }

    fn request_accepting(
        &self,
        method: Method,
        url: String,
        accept: &str,
    ) -> reqwest::RequestBuilder {
        let mut cookies = vec!["blog_dev_user=ada".to_owned()];
        if let Some(token) = &self.csrf {
            cookies.push(format!("blog_csrf={token}"));
        }
        self.client
            .request(method, url)
            .header(header::ACCEPT, accept)
            .header("sec-fetch-site", "same-origin")
            .header(header::COOKIE, cookies.join("; "))
    }

    async fn page(&mut self, path: &str) -> (StatusCode, HeaderMap, Html) {
        let response = self
            .request(Method::GET, self.url(path))
            .send()
            .await
            .unwrap();
        if let Some(token) = testkit::form_token(response.headers()) {
            self.csrf = Some(token);
        }
        let (status, headers) = (response.status(), response.headers().clone());
        (
            status,
            headers,
            Html::parse_document(&response.text().await.unwrap()),
        )
    }

    /// The write form sent as its "Upload and insert" button sends it.
    async fn upload(
        &self,
        action: &str,
        content: &str,
        image: Option<&[u8]>,
    ) -> (StatusCode, Html) {
        let response = self.send_upload(action, content, image, "text/html").await;
        (
            response.status(),
            Html::parse_document(&response.text().await.unwrap()),
        )
    }

    /// The same form as the page's script sends it, asking for JSON.
    async fn upload_for_script(&self, action: &str, image: Option<&[u8]>) -> (StatusCode, Value) {
        let response = self
            .send_upload(action, "Look:", image, "application/json")
            .await;
        (response.status(), response.json().await.unwrap())
    }

    async fn send_upload(
        &self,
        action: &str,
        content: &str,
        image: Option<&[u8]>,
        accept: &str,
    ) -> reqwest::Response {
        let boundary = "----imageboundary7MA4YWxkTrZu0gW";
        let mut body = Vec::new();
        let csrf = self.csrf.clone().unwrap();
        for (name, value) in [
            ("csrf", csrf.as_str()),
            ("title", "With a photo"),
            ("content", content),
            ("alt", "a gradient [square]"),
        ] {
            body.extend_from_slice(format!("--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n").as_bytes());
        }
        body.extend_from_slice(format!("--{boundary}\r\nContent-Disposition: form-data; name=\"image\"; filename=\"photo.png\"\r\nContent-Type: image/png\r\n\r\n").as_bytes());
        body.extend_from_slice(image.unwrap_or_default());
        body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
        self.request_accepting(
            Method::POST,
            format!("{}{action}", self.app.address),
            accept,
        )
        .header(
            header::CONTENT_TYPE,
            format!("multipart/form-data; boundary={boundary}"),
        )
        .body(body)
        .send()
        .await
        .unwrap()
    }
}

fn first_attr(page: &Html, css: &str, attribute: &str) -> Option<String> {
    let selector = Selector::parse(css).unwrap();
    page.select(&selector)
        .next()
        .and_then(|e| e.value().attr(attribute).map(str::to_owned))
}

fn text_of(page: &Html, css: &str) -> String {
    let selector = Selector::parse(css).unwrap();
    page.select(&selector)
        .map(|e| e.text().collect::<String>())
        .collect()
}

async fn a_writer_puts_a_photo_in_a_post_from_the_write_page_without_javascript(app: TestApp) {
    app.register("ada", "Ada").await;
    let mut writer = Writer::new(&app);
    let (status, _, page) = writer.page("/write").await;
    assert_eq!(status, StatusCode::OK);
    let action = first_attr(&page, "button[formaction]", "formaction").unwrap();
    assert_eq!(action, writer.path("/write/image"));
    assert_eq!(
        first_attr(&page, "button[formaction]", "formenctype").unwrap(),
        "multipart/form-data"
    );
    assert!(text_of(&page, ".warning").is_empty());

    let (status, page) = writer
        .upload(
            &action,
            "Look:",
            Some(&picture(1000, 600, image::ImageFormat::Png)),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let content = text_of(&page, "#content");
    assert!(
        content.starts_with("Look:\n\n![a gradient  square]("),
        "{content}"
    );
    let images = app.get_json_as("ada", "/api/users/ada/images").await;
    let image = &images["items"][0];
    let url = image["url"].as_str().unwrap();
    assert!(content.contains(&format!("]({url})")), "{content}");

    // No file chosen: the text comes back, and an image of another site is warned about.
    let foreign = format!("{content}\n![a logo](https://elsewhere.example/logo.png)");
    let (status, page) = writer.upload(&action, &foreign, None).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(text_of(&page, "#content"), foreign);
    assert!(text_of(&page, ".warning").contains("other sites"));

    let token = writer.csrf.clone().unwrap();
    let published = writer
        .request(Method::POST, writer.url("/write"))
        .form(&[
            ("csrf", token.as_str()),
            ("title", "With a photo"),
            ("content", foreign.as_str()),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(published.status(), StatusCode::SEE_OTHER);
    let post_path = published.headers()[header::LOCATION]
        .to_str()
        .unwrap()
        .to_owned();
    let post_page = |writer: &Writer<'_>| {
        writer
            .request(Method::GET, format!("{}{post_path}", app.address))
            .send()
    };
    let response = post_page(&writer).await.unwrap();
    let csp = response.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(csp.contains("img-src 'self'"), "{csp}");
    let page = Html::parse_document(&response.text().await.unwrap());
    for (attribute, expected) in [
        ("src", url),
        ("alt", "a gradient  square"),
        ("width", "1000"),
        ("height", "600"),
        ("loading", "lazy"),
    ] {
        let value = first_attr(&page, "article img", attribute);
        assert_eq!(value.as_deref(), Some(expected), "{attribute}");
    }
    let srcset = first_attr(&page, "article img", "srcset").unwrap();
    assert!(
        srcset.contains(&format!("{url}/480 480w")) && srcset.contains(&format!("{url}/960 960w")),
        "{srcset}"
    );
    assert!(first_attr(&page, "article img", "sizes").is_some());
    assert_eq!(
        first_attr(
            &page,
            "a[href='https://elsewhere.example/logo.png']",
            "href"
        )
        .as_deref(),
        Some("https://elsewhere.example/logo.png"),
        "another site's image is a link"
    );

    let deleted = app
        .client
        .delete(app.url(&format!("/api/images/{}", image["id"].as_str().unwrap())))
        .header("x-ms-client-principal-id", "ada")
        .send()
        .await
        .unwrap();
    assert_eq!(deleted.status(), StatusCode::NO_CONTENT);
    let page = Html::parse_document(&post_page(&writer).await.unwrap().text().await.unwrap());
    assert!(
        first_attr(&page, "article img", "src").is_none(),
        "the image is gone"
    );
    assert!(
        text_of(&page, "article").contains("a gradient  square"),
        "its alt text stays"
    );
}

async fn the_pages_script_gets_the_images_markdown_or_a_problem(app: TestApp) {
    app.register("ada", "Ada").await;
    let mut writer = Writer::new(&app);
    let (_, _, page) = writer.page("/write").await;
    let action = first_attr(&page, "button[formaction]", "formaction").unwrap();

    let photo = picture(600, 20, image::ImageFormat::Png);
    let (status, answer) = writer.upload_for_script(&action, Some(&photo)).await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    let url = answer["url"].as_str().unwrap();
    assert!(url.starts_with(&writer.path("/images/")), "{url}");
    assert_eq!(answer["markdown"], format!("![a gradient  square]({url})"));
    let served = writer
        .request(Method::GET, format!("{}{url}", app.address))
        .send()
        .await
        .unwrap();
    assert_eq!(served.status(), StatusCode::OK);
    assert_eq!(served.headers()[header::CONTENT_TYPE], "image/png");

    let (status, problem) = writer
        .upload_for_script(&action, Some(b"<svg onload=alert(1)/>"))
        .await;
    assert_eq!(status, StatusCode::UNSUPPORTED_MEDIA_TYPE, "{problem}");
    assert_eq!(problem["status"], 415, "a problem document: {problem}");
    let (status, problem) = writer.upload_for_script(&action, None).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{problem}");
    assert_eq!(problem["code"], "no-image");
}
