//! The write and edit pages' image upload, without JavaScript: the page's own form, sent as
//! `multipart/form-data` by its "Upload and insert" button, carries the title and content
//! typed so far with the image. The image is stored as `POST /api/images` stores it, and the
//! page comes back with the same text and the image's Markdown added at its end.

use axum::extract::Multipart;
use axum::extract::multipart::Field;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use bytes::{Bytes, BytesMut};

use super::context::{BlogPage, PageContext};
use super::forms::{FormResult, PostForm, Unsent, write_page};
use crate::domain::PostId;
use crate::error::Error;
use crate::http::images::{BlogImages, image_path};
use crate::http::paths::PostPath;
use crate::images::ImageRefusal;
use crate::problem::Problem;

/// The text fields of the form, together, at most (the post's own limit, with room to spare).
const MAX_TEXT_BYTES: usize = crate::http::MAX_BODY_BYTES;

/// What the form sent.
#[derive(Default)]
struct Sent {
    form: PostForm,
    alt: String,
    image: Option<(Option<String>, Bytes)>,
}

/// `POST /write/image`.
pub async fn upload_on_write(
    BlogPage(context, blog): BlogPage,
    images: BlogImages,
    multipart: Multipart,
) -> FormResult {
    upload(context, blog, images, None, multipart).await
}

/// `POST /posts/{postId}/edit/image`.
pub async fn upload_on_edit(
    BlogPage(context, blog): BlogPage,
    images: BlogImages,
    PostPath(post_id): PostPath,
    multipart: Multipart,
) -> FormResult {
    upload(context, blog, images, Some(post_id), multipart).await
}

async fn upload(
    context: PageContext,
    blog: crate::blog::Blog,
    images: BlogImages,
    editing: Option<PostId>,
    multipart: Multipart,
) -> FormResult {
    let sent = read_form(multipart, images.store.limits().max_bytes).await?;
    // The page's script (paste or drop) asks for JSON: the image's Markdown, or a problem.
    let wants_json = context.asks_for_json();
    let caller = match Unsent::check(&context, &sent.form.csrf) {
        Ok(caller) => caller,
        Err(unsent) if wants_json => {
            let problem = Problem::new(unsent.status(), "form-not-taken", unsent.message());
            return Err(problem.into());
        }
        Err(unsent) => {
            let mut page = write_page(&context, editing.as_ref(), &sent.form, None);
            page.problem = Some(unsent.message().to_owned());
            return Ok(context.respond(unsent.status(), &page));
        }
    };
    let again = |status: StatusCode, form: &PostForm, problem: Option<String>| -> Response {
        let mut page = write_page(&context, editing.as_ref(), form, None);
        page.problem = problem;
        context.respond(status, &page)
    };
    let Some((declared, bytes)) = sent.image else {
        let problem = "Choose an image to upload first.".to_owned();
        if wants_json {
            let problem = Problem::new(StatusCode::UNPROCESSABLE_ENTITY, "no-image", problem);
            return Err(problem.into());
        }
        return Ok(again(
            StatusCode::UNPROCESSABLE_ENTITY,
            &sent.form,
            Some(problem),
        ));
    };
    let tenant = images.tenant.as_ref();
    match blog
        .upload_image(&images.store, &images.scope, &caller, declared, bytes)
        .await
    {
        Ok(item) if wants_json => {
            let url = image_path(tenant, &item.id, None);
            let answer = serde_json::json!({
                "id": item.id,
                "markdown": image_markdown(&sent.alt, &url),
                "url": url,
            });
            Ok((StatusCode::CREATED, axum::Json(answer)).into_response())
        }
        Ok(item) => {
            let url = image_path(tenant, &item.id, None);
            let mut form = sent.form;
            form.content = with_image(&form.content, &sent.alt, &url);
            Ok(again(StatusCode::OK, &form, None))
        }
        Err(Error::Image(refusal)) if !wants_json => Ok(again(
            refusal.status(),
            &sent.form,
            Some(format!("The image was not added: {refusal}.")),
        )),
        Err(other) => Err(other.into()),
    }
}

/// `content` with the Markdown of the image at `url` added on a line of its own.
fn with_image(content: &str, alt: &str, url: &str) -> String {
    let separator = match content.trim_end() {
        "" => "",
        _ => "\n\n",
    };
    format!(
        "{}{separator}{}\n",
        content.trim_end(),
        image_markdown(alt, url)
    )
}

/// The Markdown that shows the image at `url` with `alt` as its text.
fn image_markdown(alt: &str, url: &str) -> String {
    // Brackets would end the Markdown's alt text early.
    let alt: String = alt
        .chars()
        .map(|c| if matches!(c, '[' | ']') { ' ' } else { c })
        .collect();
    format!("![{}]({url})", alt.trim())
}

async fn read_form(mut multipart: Multipart, max_image_bytes: usize) -> Result<Sent, Problem> {
    let mut sent = Sent::default();
    let mut text_bytes = 0;
    while let Some(field) = multipart.next_field().await.map_err(unreadable)? {
        let name = field.name().unwrap_or_default().to_owned();
        if name == "image" {
            let declared = field.content_type().map(str::to_owned);
            let bytes = read_field(field, max_image_bytes, || {
                Problem::from(&Error::from(ImageRefusal::TooLarge {
                    bytes: max_image_bytes + 1,
                    limit: max_image_bytes,
                }))
            })
            .await?;
            // A file input left empty still sends its (empty) part.
            if !bytes.is_empty() {
                sent.image = Some((declared, bytes));
            }
            continue;
        }
        let bytes = read_field(
            field,
            MAX_TEXT_BYTES - text_bytes,
            crate::http::body_too_large,
        )
        .await?;
        text_bytes += bytes.len();
        let text = String::from_utf8(bytes.to_vec()).map_err(|_| {
            Problem::new(
                StatusCode::BAD_REQUEST,
                "invalid-form",
                "a field is not UTF-8",
            )
        })?;
        match name.as_str() {
            "csrf" => sent.form.csrf = text,
            "title" => sent.form.title = text,
            "content" => sent.form.content = text,
            "tags" => sent.form.tags = text,
            "publishAt" => sent.form.publish_at = text,
            "alt" => sent.alt = text,
            _ => {}
        }
    }
    Ok(sent)
}

/// A field's bytes, refused with `too_large()` past `limit`.
async fn read_field(
    mut field: Field<'_>,
    limit: usize,
    too_large: impl Fn() -> Problem,
) -> Result<Bytes, Problem> {
    let mut bytes = BytesMut::new();
    while let Some(chunk) = field.chunk().await.map_err(unreadable)? {
        if bytes.len() + chunk.len() > limit {
            return Err(too_large());
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(bytes.freeze())
}

fn unreadable(error: axum::extract::multipart::MultipartError) -> Problem {
    Problem::new(StatusCode::BAD_REQUEST, "invalid-form", error.body_text())
}
