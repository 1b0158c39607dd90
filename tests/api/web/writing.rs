//! Writing through the forms, the development sign-in, and the refusal of every cross-site
//! write.

use super::*;

async fn a_reader_writes_comments_likes_edits_and_deletes_through_the_forms(app: TestApp) {
    let mut ada = Browser::new(&app, Some("ada"));
    // No user item yet: led to choose a username first, then back to writing.
    let response = ada
        .request(Method::GET, ada.page_url("/write"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::SEE_OTHER);
    assert!(location(&response).contains("/account?return="));
    let (status, page, _) = ada.get("/account").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(select_attr(&page, "label[for=username]", "for"), "username");
    let refused = ada
        .post("/account", &[("username", "  "), ("return", "")])
        .await;
    assert_eq!(refused.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let page = parsed(refused).await;
    assert!(!select_text(&page, "#username-error").is_empty());
    assert_eq!(
        app.get("/api/users/ada").await.status(),
        StatusCode::NOT_FOUND,
        "nothing stored"
    );
    let saved = ada
        .post(
            "/account",
            &[("username", "Ada"), ("return", &page_path(&app, "/write"))],
        )
        .await;
    assert_eq!(saved.status(), StatusCode::SEE_OTHER);
    assert_eq!(location(&saved), page_path(&app, "/write"));
    assert_eq!(app.get_json("/api/users/ada").await["username"], "Ada");

    // Write: a bad title comes back beside its field with the text kept.
    let (status, page, _) = ada.get("/write").await;
    assert_eq!(status, StatusCode::OK);
    for field in ["title", "content"] {
        assert_eq!(select(&page, &format!("label[for={field}]")).len(), 1);
    }
    let long_title = "t".repeat(1000);
    let refused = ada
        .post("/write", &[("title", &long_title), ("content", HOSTILE)])
        .await;
    assert_eq!(refused.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let page = parsed(refused).await;
    assert!(!select_text(&page, "#title-error").is_empty());
    assert!(select_text(&page, "#content-error").is_empty());
    assert_eq!(select_attr(&page, "#title", "value"), long_title);
    assert_eq!(select_text(&page, "#content"), [HOSTILE]);
    let posts = app.get_json("/api/users/ada/posts").await;
    assert_eq!(
        posts["items"].as_array().unwrap().len(),
        0,
        "nothing stored"
    );

    let written = ada
        .post("/write", &[("title", "Hello"), ("content", "**hi**")])
        .await;
    assert_eq!(written.status(), StatusCode::SEE_OTHER);
    let post_path = location(&written);
    let post_id = post_path.rsplit('/').nth(1).unwrap().to_owned();
    assert_eq!(
        app.get_json(&format!("/api/posts/{post_id}")).await["title"],
        "Hello"
    );
    let blog_path = |path: &str| {
        path.strip_prefix(&page_path(&app, ""))
            .unwrap_or(path)
            .to_owned()
    };
    // The post's own forms and pages are under its id, without the readable slug.
    let own_path = blog_path(&post_path).rsplit_once('/').unwrap().0.to_owned();

    // Edit: the page shows the new content, not the old one's rendering.
    let (_, page, _) = ada.get(&own_path).await;
    assert_eq!(select_text(&page, ".content strong"), ["hi"]);
    let (status, page, _) = ada.get(&format!("{own_path}/edit")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(select_attr(&page, "#title", "value"), "Hello");
    let edited = ada
        .post(
            &format!("{own_path}/edit"),
            &[("title", "Hello again"), ("content", "new")],
        )
        .await;
    assert_eq!(edited.status(), StatusCode::SEE_OTHER);
    assert_eq!(
        app.get_json(&format!("/api/posts/{post_id}")).await["title"],
        "Hello again"
    );
    let (_, page, _) = ada.get(&own_path).await;
    assert_eq!(select_text(&page, ".content"), ["new\n"]);

    // Another reader comments (bad, then good), likes, unlikes; may not edit.
    app.register("bob", "Bob").await;
    let mut bob = Browser::new(&app, Some("bob"));
    let (status, _, _) = bob.get(&format!("{own_path}/edit")).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (_, page, _) = bob.get(&own_path).await;
    assert!(
        select(&page, "a[href$='/edit']").is_empty(),
        "not the author"
    );
    assert_eq!(like_buttons(&page), ["like"], "not liked yet");
    assert_eq!(
        select_attr(&page, "label[for=comment-content]", "for"),
        "comment-content"
    );
    let refused = bob
        .post(&format!("{own_path}/comments"), &[("content", " ")])
        .await;
    assert_eq!(refused.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let page = parsed(refused).await;
    assert!(!select_text(&page, "#comment-error").is_empty());
    let commented = bob
        .post(&format!("{own_path}/comments"), &[("content", HOSTILE)])
        .await;
    assert_eq!(commented.status(), StatusCode::SEE_OTHER);
    let liked = bob.post(&format!("{own_path}/like"), &[]).await;
    assert_eq!(liked.status(), StatusCode::SEE_OTHER);
    let (_, page, _) = bob.get(&own_path).await;
    assert_eq!(like_buttons(&page), ["unlike"], "liked: only Unlike");
    let (_, page, _) = ada.get(&own_path).await;
    assert_eq!(
        like_buttons(&page),
        ["like"],
        "another reader's like is theirs"
    );
    let post = app.get_json(&format!("/api/posts/{post_id}")).await;
    assert_eq!(
        (post["commentCount"].as_u64(), post["likeCount"].as_u64()),
        (Some(1), Some(1))
    );
    let unliked = bob.post(&format!("{own_path}/unlike"), &[]).await;
    assert_eq!(unliked.status(), StatusCode::SEE_OTHER);
    let (_, page, _) = bob.get(&own_path).await;
    assert_eq!(like_buttons(&page), ["like"], "unliked: only Like");
    assert_eq!(
        app.get_json(&format!("/api/posts/{post_id}")).await["likeCount"],
        0
    );

    // The post's author may delete bob's comment; then the post.
    let (_, page, _) = ada.get(&own_path).await;
    let delete = select_attr(&page, "ol.comments form", "action");
    let deleted = ada.post(&blog_path(&delete), &[]).await;
    assert_eq!(deleted.status(), StatusCode::SEE_OTHER);
    assert_eq!(
        app.get_json(&format!("/api/posts/{post_id}")).await["commentCount"],
        0
    );
    let deleted = ada.post(&format!("{own_path}/delete"), &[]).await;
    assert_eq!(deleted.status(), StatusCode::SEE_OTHER);
    assert_eq!(
        app.get(&format!("/api/posts/{post_id}")).await.status(),
        StatusCode::NOT_FOUND
    );

    // Rename shows on the account; deleting needs the box ticked.
    let renamed = ada
        .post("/account", &[("username", "Ada L."), ("return", "")])
        .await;
    assert_eq!(renamed.status(), StatusCode::SEE_OTHER);
    let (_, page, _) = ada.get("/account").await;
    assert_eq!(select_attr(&page, "#username", "value"), "Ada L.");
    let (status, _, _) = ada.get("/account/delete").await;
    assert_eq!(status, StatusCode::OK);
    let unconfirmed = ada.post("/account/delete", &[]).await;
    assert_eq!(unconfirmed.status(), StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(app.get("/api/users/ada").await.status(), StatusCode::OK);
    let erased = ada.post("/account/delete", &[("confirm", "yes")]).await;
    assert_eq!(erased.status(), StatusCode::SEE_OTHER);
    assert!(
        erased.headers()[header::SET_COOKIE]
            .to_str()
            .unwrap()
            .contains("Max-Age=0"),
        "signed out"
    );
    assert_eq!(
        app.get("/api/users/ada").await.status(),
        StatusCode::NOT_FOUND
    );
}

async fn the_development_sign_in_sets_the_cookie_pages_and_the_api_read(app: TestApp) {
    app.register("ada", "Ada").await;
    let mut browser = Browser::new(&app, None);
    let response = browser
        .request(
            Method::GET,
            format!("{}/sign-in?return=%2Fposts", app.address),
        )
        .send()
        .await
        .unwrap();
    browser.keep_token(response.headers());
    let page = parsed(response).await;
    assert_eq!(select_attr(&page, "label[for=user_id]", "for"), "user_id");
    let token = select_attr(&page, "input[name=csrf]", "value");
    let send = |fields: Vec<(&'static str, String)>| {
        let mut form = vec![("csrf", token.clone())];
        form.extend(fields);
        browser
            .request(Method::POST, format!("{}/sign-in", app.address))
            .form(&form)
            .send()
    };
    let refused = send(vec![("user_id", "a/b".into()), ("return", "/".into())])
        .await
        .unwrap();
    assert_eq!(refused.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let page = parsed(refused).await;
    assert_eq!(select_attr(&page, "#user_id", "value"), "a/b");
    let signed_in = send(vec![
        ("user_id", "ada".into()),
        ("return", "https://elsewhere.example/".into()),
    ])
    .await
    .unwrap();
    assert_eq!(signed_in.status(), StatusCode::SEE_OTHER);
    assert_eq!(location(&signed_in), "/", "never to another site");
    let cookie = signed_in.headers()[header::SET_COOKIE]
        .to_str()
        .unwrap()
        .to_owned();
    for attribute in ["blog_dev_user=ada", "HttpOnly", "SameSite=Lax", "Path=/"] {
        assert!(cookie.contains(attribute), "{cookie}");
    }
    // A plain-HTTP address (a laptop's loopback): no `Secure`, which would keep the browser
    // from sending it back, and so no `__Host-` prefix either.
    assert!(cookie.starts_with("blog_dev_user="), "{cookie}");
    assert!(!cookie.contains("Secure"), "{cookie}");
    // The API takes the caller from the cookie too.
    let post = app
        .client
        .post(app.url("/api/posts"))
        .header(header::COOKIE, "blog_dev_user=ada")
        .json(&serde_json::json!({"title": "by cookie", "content": "c"}))
        .send()
        .await
        .unwrap();
    assert_eq!(post.status(), StatusCode::CREATED);
}

// ---- cross-site refusals ------------------------------------------------------------------

async fn nothing_can_be_written_cross_site(app: TestApp) {
    app.register("ada", "Ada").await;
    let post = app.new_post("ada", "t", "c").await;
    let post_id = post["id"].as_str().unwrap();
    let mut ada = Browser::new(&app, Some("ada"));
    let token = ada.token().await;
    let like_page = ada.page_url(&format!("/posts/{post_id}/like"));

    // A form without its token.
    let no_token = ada
        .request(Method::POST, like_page.clone())
        .form(&[("csrf", "")])
        .send()
        .await
        .unwrap();
    assert_eq!(no_token.status(), StatusCode::FORBIDDEN);
    let page = parsed(no_token).await;
    assert_eq!(select_text(&page, "main code"), ["csrf-token"]);

    // A form with the token, posted from another site.
    for (name, value) in [
        ("sec-fetch-site", "cross-site"),
        ("sec-fetch-site", "same-site"),
    ] {
        let refused = ada
            .request(Method::POST, like_page.clone())
            .header(name, value)
            .form(&[("csrf", token.as_str())])
            .send()
            .await
            .unwrap();
        assert_eq!(refused.status(), StatusCode::FORBIDDEN, "{value}");
    }
    let from_elsewhere = ada
        .client
        .post(like_page.clone())
        .header(header::ACCEPT, "text/html")
        .header(
            header::COOKIE,
            format!("blog_dev_user=ada; blog_csrf={token}"),
        )
        .header(header::ORIGIN, "https://elsewhere.example")
        .form(&[("csrf", token.as_str())])
        .send()
        .await
        .unwrap();
    assert_eq!(from_elsewhere.status(), StatusCode::FORBIDDEN);

    // The JSON API: a form-encoded like from another origin, with and without Fetch Metadata.
    for headers in [
        vec![("origin", "https://elsewhere.example")],
        vec![
            ("origin", "https://elsewhere.example"),
            ("sec-fetch-site", "cross-site"),
        ],
        vec![("origin", "null")],
    ] {
        let mut request = app
            .client
            .post(app.url(&format!("/api/posts/{post_id}/likes")))
            .header("x-ms-client-principal-id", "ada")
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded");
        for (name, value) in &headers {
            request = request.header(*name, *value);
        }
        let refused = request.send().await.unwrap();
        assert_eq!(refused.status(), StatusCode::FORBIDDEN, "{headers:?}");
        let problem: Value = refused.json().await.unwrap();
        assert_eq!(problem["code"], "cross-site-request");
    }
    assert_eq!(
        app.get_json(&format!("/api/posts/{post_id}")).await["likeCount"],
        0,
        "nothing stored"
    );

    // Same origin, or a client that is no browser, still writes.
    let own = app
        .client
        .post(app.url(&format!("/api/posts/{post_id}/likes")))
        .header("x-ms-client-principal-id", "ada")
        .header(header::ORIGIN, app.address.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(own.status(), StatusCode::CREATED);
}

/// The write page's text as the form holds it: title, content, tags, publication time.
fn typed(page: &Html) -> [String; 4] {
    [
        select_attr(page, "#title", "value"),
        select_text(page, "#content").concat(),
        select_attr(page, "#tags", "value"),
        select_attr(page, "#publishAt", "value"),
    ]
}

async fn every_refusal_of_the_write_and_edit_pages_keeps_what_was_typed(app: TestApp) {
    app.register("ada", "Ada").await;
    let mut ada = Browser::new(&app, Some("ada"));
    let post = app.new_post("ada", "Hello", "world").await;
    let post_id = post["id"].as_str().unwrap().to_owned();
    let text = [
        "A day out",
        "We walked to the sea.\n\nThen home.",
        "sea, walks",
        "2031-05-01T09:30",
    ];
    let expected = text.map(str::to_owned);
    let [title, content, tags, publish_at] = text;
    // A photo a little over the 5 MiB limit: its own size is said, not the body's.
    let photo = vec![0x5A; 5 * 1024 * 1024 + 123_457];
    for path in ["/write".to_owned(), format!("/posts/{post_id}/edit")] {
        let refused = ada
            .post_multipart(
                &format!("{path}/image"),
                &[("title", title), ("content", content)],
                (&photo, "image/jpeg"),
                &[
                    ("alt", "the sea"),
                    ("tags", tags),
                    ("publishAt", publish_at),
                ],
            )
            .await;
        assert_eq!(refused.status(), StatusCode::PAYLOAD_TOO_LARGE, "{path}");
        let page = parsed(refused).await;
        assert_eq!(typed(&page), expected, "{path}");
        assert_eq!(select_attr(&page, "#alt", "value"), "the sea", "{path}");
        let said = select_text(&page, "[role=alert]").concat();
        assert!(
            said.contains("The image was not added") && said.contains("5366337 bytes"),
            "{path}: {said}"
        );
    }
    let images = app.get_json_as("ada", "/api/users/ada/images").await;
    assert_eq!(images["items"], serde_json::json!([]), "nothing stored");

    // A text longer than a post may be (and than the API takes) comes back with its reason.
    let long = "a".repeat(LONGER_THAN_THE_API_TAKES);
    for path in ["/write".to_owned(), format!("/posts/{post_id}/edit")] {
        let refused = ada
            .post(
                &path,
                &[("title", title), ("content", &long), ("tags", tags)],
            )
            .await;
        assert_eq!(refused.status(), StatusCode::UNPROCESSABLE_ENTITY, "{path}");
        let page = parsed(refused).await;
        assert!(!select_text(&page, "#content-error").is_empty(), "{path}");
        assert_eq!(select_text(&page, "#content").concat(), long, "{path}");
    }

    // The post deleted meanwhile: the edit comes back with the reason and the text.
    let deleted = app
        .client
        .delete(app.url(&format!("/api/posts/{post_id}")))
        .header("x-ms-client-principal-id", "ada")
        .send()
        .await
        .unwrap();
    assert_eq!(deleted.status(), StatusCode::NO_CONTENT);
    let refused = ada
        .post(
            &format!("/posts/{post_id}/edit"),
            &[
                ("title", title),
                ("content", content),
                ("tags", tags),
                ("publishAt", publish_at),
            ],
        )
        .await;
    assert_eq!(refused.status(), StatusCode::NOT_FOUND);
    let page = parsed(refused).await;
    assert_eq!(typed(&page), expected);
    let said = select_text(&page, "[role=alert]").concat();
    assert!(said.contains("Nothing was saved"), "{said}");
}

surface_tests!(
    every_refusal_of_the_write_and_edit_pages_keeps_what_was_typed,
    a_reader_writes_comments_likes_edits_and_deletes_through_the_forms,
    the_development_sign_in_sets_the_cookie_pages_and_the_api_read,
    nothing_can_be_written_cross_site,
);

/// On an HTTPS public address every cookie the site sets is `Secure`, for the whole host and
/// named with the `__Host-` prefix: the form token's, the development sign-in's, and its
/// removal at sign-out; a cookie under the plain name (which another host of the domain could
/// set) is not read, by the pages or the API.
mod cookies_on_https {
    use super::*;
    use cosmos_blog::store::Tenancy;
    use testkit::Backend;

    testkit::embedded_single_and_cosmos_multi!(the_sites_cookies_are_secure_host_cookies);

    /// The `Set-Cookie` of `response` for the cookie `name` (without its prefix), checked to
    /// be a secure host cookie: `__Host-{name}`, `Secure`, `HttpOnly`, `Path=/`, no `Domain`.
    fn secure_cookie(response: &Response, name: &str) -> String {
        let set = response
            .headers()
            .get_all(header::SET_COOKIE)
            .iter()
            .map(|value| value.to_str().unwrap().to_owned())
            .find(|value| value.contains(name))
            .unwrap_or_else(|| panic!("a {name} cookie: {:?}", response.headers()));
        assert!(set.starts_with(&format!("__Host-{name}=")), "{set}");
        for attribute in ["Secure", "HttpOnly", "Path=/"] {
            assert!(set.contains(attribute), "{attribute}: {set}");
        }
        assert!(!set.contains("Domain"), "{set}");
        set
    }

    async fn the_sites_cookies_are_secure_host_cookies(backend: Backend, tenancy: Tenancy) {
        let app = TestApp::spawn(backend)
            .layout(tenancy)
            .settings(|settings| settings.site.public_url = Some("https://blog.example".into()))
            .start()
            .await;
        app.register("ada", "Ada").await;
        // The form token's cookie, set by a page with a form.
        let mut browser = Browser::new(&app, None);
        let page = browser
            .request(Method::GET, format!("{}/sign-in", app.address))
            .send()
            .await
            .unwrap();
        let csrf = secure_cookie(&page, "blog_csrf");
        assert!(csrf.contains("SameSite=Strict"), "{csrf}");
        browser.keep_token(page.headers());
        let token = select_attr(&parsed(page).await, "input[name=csrf]", "value");

        // The same token under the plain name only: not the site's cookie, so no form.
        let plain = app
            .client
            .post(format!("{}/sign-in", app.address))
            .header(header::ACCEPT, "text/html")
            .header("sec-fetch-site", "same-origin")
            .header(header::COOKIE, format!("blog_csrf={token}"))
            .form(&[("csrf", token.as_str()), ("user_id", "ada")])
            .send()
            .await
            .unwrap();
        assert_eq!(plain.status(), StatusCode::FORBIDDEN);
        assert!(
            plain
                .headers()
                .get(header::SET_COOKIE)
                .is_none_or(|set| { !set.to_str().unwrap().contains("blog_dev_user") })
        );

        // Signing in and out: a secure host cookie, and its removal.
        let sign = |path: &'static str| {
            browser
                .request(Method::POST, format!("{}{path}", app.address))
                .form(&[
                    ("csrf", token.as_str()),
                    ("user_id", "ada"),
                    ("return", "/"),
                ])
                .send()
        };
        let signed_in = sign("/sign-in").await.unwrap();
        assert_eq!(signed_in.status(), StatusCode::SEE_OTHER);
        let user = secure_cookie(&signed_in, "blog_dev_user");
        assert!(user.starts_with("__Host-blog_dev_user=ada;"), "{user}");
        assert!(user.contains("SameSite=Lax"), "{user}");
        let signed_out = sign("/sign-out").await.unwrap();
        assert_eq!(signed_out.status(), StatusCode::SEE_OTHER);
        let removal = secure_cookie(&signed_out, "blog_dev_user");
        assert!(removal.contains("Max-Age=0"), "{removal}");

        // The API reads the caller from the secure cookie alone.
        let write_as = |cookie: &'static str| {
            app.client
                .post(app.url("/api/posts"))
                .header(header::COOKIE, cookie)
                .json(&serde_json::json!({"title": "by cookie", "content": "c"}))
                .send()
        };
        let plain = write_as("blog_dev_user=ada").await.unwrap();
        assert_eq!(plain.status(), StatusCode::UNAUTHORIZED);
        let secure = write_as("__Host-blog_dev_user=ada").await.unwrap();
        assert_eq!(secure.status(), StatusCode::CREATED);
    }
}
