//! Text that tries to run script, in every field a person fills in, is shown as text on every
//! page it reaches and never runs: no dialog opens, no marker is set, and the document holds
//! no handler attribute, no `javascript:` URL and no script but the site's own. The document
//! is inspected as well as the behaviour, so the check does not lean on the
//! Content-Security-Policy alone.

use serde_json::Value;

use super::chromium::Script;
use super::pages::Visitor;

/// A user id may hold neither `/` nor `?` nor `#`, so no closing tag: attribute breaking.
const USER_ID: &str = "mallory\"'><img src=x onerror=alert(1)>";
const USERNAME: &str = "<img src=x onerror=alert('name')>&amp;";
const TITLE: &str = "<script>document.title='pwned'</script><b onmouseover=alert(2)>&lt;T&gt;</b>";
const CONTENT: &str = "<script>window.pwned = 'content'; alert(3)</script>

<img src=x onerror=\"window.pwned = 'img'\">

[a link](javascript:alert(4)) and [another](JaVaScRiPt:alert(5))

<a href=\"javascript:alert(6)\">raw link</a> <svg onload=alert(7)></svg>

<iframe src=\"javascript:alert(8)\"></iframe> <form action=\"javascript:alert(9)\"><button>go</button></form>

&lt;script&gt;alert(10)&lt;/script&gt; &#x3C;b&#x3E;entities&#x3C;/b&#x3E;";
const COMMENT: &str = "<script>window.pwned='comment'</script><img src=x onerror=alert(11)> \
                       javascript:alert(12) &amp; &lt;i&gt;";

pub async fn hostile_text_never_runs(v: Visitor) {
    v.sign_in(USER_ID).await;
    v.set_username(USERNAME).await;
    let post = v.write_post(TITLE, CONTENT).await;
    assert_inert(&v).await;
    assert_eq!(
        v.text_of("article h1").await,
        TITLE,
        "the title shows as written"
    );
    v.type_into("#comment-content", COMMENT).await;
    v.press("form[action$='/comments'] button[type=submit]")
        .await;
    assert_inert(&v).await;
    assert_eq!(v.text_of("ol.comments li .comment-text").await, COMMENT);
    let nav = v.text_of("header.site nav").await;
    // The reader's name, not their id.
    assert!(nav.contains(&format!("Account ({USERNAME})")), "{nav}");
    v.like_or_unlike(&post, "like", Script::On).await;

    let front = v
        .reload_until("/", "the post", |text| text.contains(TITLE))
        .await;
    assert!(front.contains(USERNAME), "{front}");
    assert_inert(&v).await;
    let author = v.find("ol.posts .meta a").await;
    author.click().await.expect("the author's link is followed");
    v.find("main h1").await;
    assert_eq!(v.text_of("main h1").await, USERNAME);
    assert_inert(&v).await;
    // The post's likes page is under its id, without the readable slug.
    let likes = format!("{}/likes", post.rsplit_once('/').expect("a slug").0);
    for page in [likes, "/account".to_owned(), post] {
        v.open(&page).await;
        assert_inert(&v).await;
    }
}

/// Every check of the module's comment, on the page shown now.
async fn assert_inert(v: &Visitor) {
    v.assert_no_dialog().await;
    let findings = v
        .client
        .execute(INSPECT, Vec::new())
        .await
        .expect("the document is inspected");
    let findings: Vec<&str> = findings
        .as_array()
        .expect("a list")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        findings.is_empty(),
        "hostile markup reached {}: {findings:?}",
        v.describe().await
    );
}

/// Lists what could run in the document: a marker a payload sets, a handler attribute, a
/// `javascript:` URL, a script that is not the site's own file, an embedded frame or object.
const INSPECT: &str = r#"
const found = [];
if (window.pwned !== undefined) found.push("marker set: " + window.pwned);
if (document.title === "pwned") found.push("title rewritten");
for (const element of document.querySelectorAll("*")) {
  for (const attribute of element.attributes) {
    const name = attribute.name.toLowerCase();
    if (name.startsWith("on")) found.push(element.tagName + "[" + name + "]");
    if (/^\s*javascript:/i.test(attribute.value)) found.push(element.tagName + "[" + name + "] " + attribute.value);
  }
}
for (const script of document.scripts) {
  // A JSON-LD data block never runs; it counts when it is JSON and nothing else.
  if (!script.src && script.type === "application/ld+json") {
    try { JSON.parse(script.textContent); continue; } catch (e) { found.push("a data block that is not JSON"); }
  }
  if (!script.src || new URL(script.src).origin !== location.origin) found.push("script " + (script.src || script.textContent.slice(0, 60)));
}
for (const element of document.querySelectorAll("iframe, frame, object, embed, svg, math, base")) found.push(element.tagName);
return found;
"#;
